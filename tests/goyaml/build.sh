#!/usr/bin/env bash
# Builds yaml-types (tests/goyaml/main.go) from the Go module proxy into $KRMFN_CACHE/bin, once.
# Prints the binary's path.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/cache-env.sh"
command -v go >/dev/null || { echo "error: Go is required to build yaml-types" >&2; exit 1; }
stamp="$(cat "$here/go.mod" "$here/go.sum" "$here/main.go" 2>/dev/null | sha256sum | cut -c1-12)"
build_once yaml-types "$stamp" bash -c "cd '$here' && go build -trimpath -ldflags '-s -w' -o '$KRMFN_BIN/yaml-types' ."
echo "$KRMFN_BIN/yaml-types"
