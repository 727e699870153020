#!/usr/bin/env bash
# Builds Helm 3 (helm.sh/helm/v3) and, when it builds, Helm 4 (helm.sh/helm/v4) from the Go module proxy
# into $KRMFN_CACHE/bin/helm3 and $KRMFN_CACHE/bin/helm4, for the tests that render a chart with
# `helm template` and run krmfn's functions on it, as a pipe and as a post-renderer
# (tests/test_helm.py). Cached and stamped like the control plane; a second run does nothing. Prints the
# Helm 3 binary's path, then Helm 4's (or nothing on that line when Helm 4 did not build: Helm 3 is
# required, Helm 4 optional, and its tests say which of the two they lack).
#
# Licence: Helm is Apache-2.0. It is built here as a test tool only, in the cache, outside this
# repository: none of its source is vendored or copied into krmfn, and nothing krmfn ships contains it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/cache-env.sh"

HELM3_VERSION=v3.21.4
HELM4_VERSION=v4.3.1

# build MAJOR VERSION: `go install` of cmd/helm at that version, with the version Helm prints stamped in.
# Runs under build_once's `||`, where `set -e` does not apply: every step checks its result.
build() {
  local major=$1 version=$2 out
  command -v go >/dev/null || { echo "error: Go is required to build Helm" >&2; return 1; }
  out=$(mktemp -d "$KRMFN_CACHE/helm$major-bin.XXXXXX") || return 1
  trap 'rm -rf "$out"; trap - RETURN' RETURN
  GOBIN="$out" GOFLAGS=-buildvcs=false go install -trimpath \
    -ldflags "-s -w -X helm.sh/helm/v$major/internal/version.version=$version" \
    "helm.sh/helm/v$major/cmd/helm@$version" &&
    mv "$out/helm" "$KRMFN_BIN/helm$major"
}

build_once helm3 "$HELM3_VERSION" build 3 "$HELM3_VERSION"
echo "$KRMFN_BIN/helm3"
if build_once helm4 "$HELM4_VERSION" build 4 "$HELM4_VERSION"; then
  echo "$KRMFN_BIN/helm4"
else
  echo "warning: Helm $HELM4_VERSION did not build; its tests fail and say so" >&2
  echo
fi
