#!/usr/bin/env bash
# Builds the standalone kustomize binary (exec KRM functions need it; `kubectl kustomize` skips them)
# from the Go module proxy at a pinned tag. Prints the binary's path.
set -euo pipefail
KUSTOMIZE_VERSION=v5.8.2 # v5.8.3 needs Go 1.27
. "$(dirname "$0")/cache-env.sh"
command -v go >/dev/null || { echo "error: Go is required to build kustomize" >&2; exit 1; }
build_once kustomize "$KUSTOMIZE_VERSION" \
  env GOBIN="$KRMFN_BIN" go install -trimpath "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"
echo "$KRMFN_BIN/kustomize"
