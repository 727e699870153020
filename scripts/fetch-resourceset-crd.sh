#!/usr/bin/env bash
# Fetches the Flux Operator ResourceSet CRD the export tests apply, from the Go module proxy at a pinned
# tag, into $KRMFN_CACHE (the operator is AGPL-3.0: its files are test inputs fetched here, not copied
# into this repository). Prints the CRD's path.
set -euo pipefail
FLUX_OPERATOR_VERSION=v0.58.1
. "$(dirname "$0")/cache-env.sh"
target="$KRMFN_CACHE/testdata/fluxcd.controlplane.io_resourcesets-$FLUX_OPERATOR_VERSION.yaml"
fetch_crd() {
  command -v go >/dev/null || { echo "error: Go is required to fetch the ResourceSet CRD" >&2; return 1; }
  local dir
  dir=$(go mod download -json "github.com/controlplaneio-fluxcd/flux-operator@$FLUX_OPERATOR_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -n "$dir" ] || { echo "error: go mod download gave no module directory" >&2; return 1; }
  mkdir -p "$(dirname "$target")" &&
    cp "$dir/config/crd/bases/fluxcd.controlplane.io_resourcesets.yaml" "$target.tmp" &&
    chmod 644 "$target.tmp" && mv "$target.tmp" "$target"
}
publish_once resourceset-crd "$target" fetch_crd || exit 1
echo "$target"
