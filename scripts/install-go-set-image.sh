#!/usr/bin/env bash
# Builds bench/go-set-image (a minimal set-image on the Go KRM SDK, the benchmarks' speed and fidelity
# anchor) from the Go module proxy into the shared cache. Prints the binary's path.
set -euo pipefail
HERE="$(cd "$(dirname "$0")/.." && pwd)"
. "$HERE/scripts/cache-env.sh"
command -v go >/dev/null || { echo "error: Go is required to build go-set-image" >&2; exit 1; }
STAMP="fn-v1.0.2-$(cat "$HERE/bench/go-set-image/main.go" "$HERE/bench/go-set-image/go.sum" | sha256sum | cut -c1-12)"
build_once go-set-image "$STAMP" \
  sh -c "cd '$HERE/bench/go-set-image' && go build -trimpath -o '$KRMFN_BIN/go-set-image' ."
echo "$KRMFN_BIN/go-set-image"
