#!/usr/bin/env bash
# Builds kapp (carvel.dev/kapp) from the Go module proxy into $KRMFN_CACHE/bin/kapp, for the side-by-side
# tests and bench/engines.py (tests/cluster/test_side_by_side_kapp.py). Cached and stamped like the
# control plane; a second run does nothing. Prints the binary's path.
#
# The proxy lists no version of carvel.dev/kapp (its @v/list is refused), but serves exact versions:
# v0.66.0 is the newest one it gave on 2026-12-03 (v0.65.x and v0.64.3 refused, v0.64.2 served).
#
# Licence: kapp is Apache-2.0. It is built here as a test tool only, in the cache, outside this
# repository: none of its source is vendored or copied into krmfn, and nothing krmfn ships contains it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/cache-env.sh"

KAPP_VERSION=v0.66.0

# `go install carvel.dev/kapp/cmd/kapp@VERSION` fails here: it asks the proxy for the module's version list
# (for deprecation notices), which is refused. So the module is downloaded by its exact version (checked
# against the checksum database as any module is) and built inside its own directory, with its own go.mod
# and go.sum, read-only. Runs under build_once's `||`, where `set -e` does not apply: every step checks
# its result.
build() {
  local version=$1 dir
  command -v go >/dev/null || { echo "error: Go is required to build kapp" >&2; return 1; }
  dir=$(go mod download -json "carvel.dev/kapp@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p') &&
    [ -n "$dir" ] || { echo "error: go mod download carvel.dev/kapp@$version gave no directory" >&2; return 1; }
  (cd "$dir" && GOFLAGS="-mod=readonly -buildvcs=false" go build -trimpath \
    -ldflags "-s -w -X carvel.dev/kapp/pkg/kapp/version.Version=$version" \
    -o "$KRMFN_BIN/kapp.tmp" ./cmd/kapp) &&
    mv "$KRMFN_BIN/kapp.tmp" "$KRMFN_BIN/kapp"
}

build_once kapp "$KAPP_VERSION" build "$KAPP_VERSION"
echo "$KRMFN_BIN/kapp"
