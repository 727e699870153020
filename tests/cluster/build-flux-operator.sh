#!/usr/bin/env bash
# Builds the Flux Operator (github.com/controlplaneio-fluxcd/flux-operator) from the Go module proxy into
# $KRMFN_CACHE/bin/flux-operator and copies its CRDs to $KRMFN_CACHE/testdata/flux-operator-<version>/crds,
# for the e2e tests that run `krmfn export resourceset` output on the real operator
# (tests/cluster/test_flux_operator.py). Cached and stamped like the control plane; a second run does
# nothing. Prints the binary's path, then the CRD directory.
#
# Licence: the Flux Operator is AGPL-3.0. It is fetched and built here as a test tool only, in the cache,
# outside this repository: none of its source is vendored or copied into krmfn, and nothing krmfn ships
# (the Python package, the container image) contains or links it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/cache-env.sh"

FLUX_OPERATOR_VERSION=v0.58.1
MODULE=github.com/controlplaneio-fluxcd/flux-operator
# v0.58.1 requires a pseudo-version of this module that the proxy refuses; the proxy's @latest builds.
AUTHN_K8S=github.com/google/go-containerregistry/pkg/authn/kubernetes
AUTHN_K8S_VERSION=v0.0.0-20260224031529-85f2bf5f7303

crds="$KRMFN_CACHE/testdata/flux-operator-$FLUX_OPERATOR_VERSION/crds"

# The functions run under build_once's `||`, where `set -e` does not apply: every step checks its result.
module_dir() {
  command -v go >/dev/null || { echo "error: Go >= 1.26 is required to build the Flux Operator" >&2; return 1; }
  local dir
  dir=$(go mod download -json "$MODULE@$FLUX_OPERATOR_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -n "$dir" ] && [ -f "$dir/go.mod" ] || { echo "error: go mod download gave no directory for $MODULE" >&2; return 1; }
  echo "$dir"
}

build_operator() {
  local src work
  src=$(module_dir) || return 1
  work=$(mktemp -d "$KRMFN_CACHE/flux-operator-src.XXXXXX") || return 1
  trap 'rm -rf "$work"; trap - RETURN' RETURN
  cp -r "$src/." "$work" && chmod -R u+w "$work" || return 1  # the module cache is read-only
  # web/embed.go embeds dist/*, the built web UI, which the module zip leaves out; the tests start the
  # operator with its web server off, so a placeholder page satisfies the embed.
  mkdir -p "$work/web/dist" &&
    echo '<!doctype html><title>flux-operator test build</title>' > "$work/web/dist/index.html" || return 1
  (cd "$work" &&
    go mod edit -replace "$AUTHN_K8S=$AUTHN_K8S@$AUTHN_K8S_VERSION" &&
    go build -trimpath -ldflags "-s -w -X main.VERSION=${FLUX_OPERATOR_VERSION#v}" \
      -o "$KRMFN_BIN/flux-operator" ./cmd/operator)
}

copy_crds() {
  local src
  src=$(module_dir) || return 1
  rm -rf "$crds.tmp" && mkdir -p "$crds.tmp" &&
    cp "$src"/config/crd/bases/*.yaml "$crds.tmp/" && chmod 644 "$crds.tmp"/*.yaml &&
    rm -rf "$crds" && mv "$crds.tmp" "$crds"
}

build_once flux-operator "$FLUX_OPERATOR_VERSION-$AUTHN_K8S_VERSION" build_operator
publish_once flux-operator-crds "$crds/fluxcd.controlplane.io_resourcesets.yaml" copy_crds || exit 1
echo "$KRMFN_BIN/flux-operator"
echo "$crds"
