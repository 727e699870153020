#!/usr/bin/env bash
# Fetches the real charts and manifest sets tests/test_peer_manifests.py orders through krmfn, from the Go
# module proxy at pinned versions, into $KRMFN_CACHE/testdata/peers (other projects' files are test inputs
# fetched here, never copied into this repository; each keeps its licence files beside it):
#   gatekeeper-v3.23.1/  the Gatekeeper Helm chart (charts/gatekeeper; Apache-2.0, LICENSE and NOTICE)
#   argo-cd-v3.5.7/      Argo CD's end-to-end sync-wave and hook sets (test/e2e/testdata; Apache-2.0)
#   kapp-v0.66.0/        kapp's change-group example (examples/resource-ordering; Apache-2.0)
# `go mod download` checks each module zip against the checksum database, as for any module; the pinned
# h1: sums below must match too, so a changed or substituted module fails here, not in a test.
# Argo CD 3.5.7, not 3.6: 3.6's go.mod asks for Go 1.27, and go mod download refuses it on Go 1.26.
# kapp by its exact version: the proxy refuses carvel.dev/kapp's version list, but serves v0.66.0.
# Prints the peers directory.
set -euo pipefail
. "$(dirname "$0")/cache-env.sh"
peers="$KRMFN_CACHE/testdata/peers"

# fetch NAME MODULE VERSION SUM DIRS...: copy DIRS (and the module's licence files) of MODULE@VERSION into
# $peers/NAME-VERSION, once (publish_once: one writer at a time).
fetch() {
  publish_once "peers-$1-$3" "$peers/$1-$3/.complete" copy "$@" || exit 1
}

copy() {
  local name=$1 module=$2 version=$3 sum=$4; shift 4
  local target="$peers/$name-$version"
  command -v go >/dev/null || { echo "error: Go is required to fetch $module" >&2; exit 1; }
  local json dir got
  json=$(go mod download -json "$module@$version") || { echo "error: go mod download $module@$version failed: $json" >&2; exit 1; }
  dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' <<<"$json")
  got=$(sed -n 's/^[[:space:]]*"Sum": "\(.*\)",$/\1/p' <<<"$json")
  [ -n "$dir" ] || { echo "error: go mod download gave no directory for $module@$version" >&2; exit 1; }
  [ "$got" = "$sum" ] || { echo "error: $module@$version has checksum $got, pinned $sum" >&2; exit 1; }
  rm -rf "$target.tmp" && mkdir -p "$target.tmp"
  local path
  for path in "$@" LICENSE NOTICE; do
    [ -e "$dir/$path" ] || { [ "$path" = NOTICE ] && continue; echo "error: $module@$version has no $path" >&2; exit 1; }
    mkdir -p "$target.tmp/$(dirname "$path")"
    cp -R "$dir/$path" "$target.tmp/$path"
  done
  chmod -R u+w,go-w "$target.tmp"  # the module cache is read-only; the copy need not be
  echo "$module@$version $sum" > "$target.tmp/.complete"
  rm -rf "$target" && mv "$target.tmp" "$target"
}

fetch gatekeeper github.com/open-policy-agent/gatekeeper/v3 v3.23.1 \
  "h1:njHTm0SJ6ZEhhEgmQTpJKTGQbc99fSs4hGiEp1OIKck=" charts/gatekeeper
fetch argo-cd github.com/argoproj/argo-cd/v3 v3.5.7 \
  "h1:Xm1BF+I5OgDKUG3SDK49vn2/Y5AMyaNVko+/JT08gj0=" \
  test/e2e/testdata/sync-waves test/e2e/testdata/syncwaves-prune-order test/e2e/testdata/hook-custom-health \
  test/e2e/testdata/guestbook test/e2e/testdata/multi-namespace-hook
fetch kapp carvel.dev/kapp v0.66.0 "h1:IMSLPHVolKhgE15Tfyhg6znlqOIf6RHldjB2qmynxwY=" \
  examples/resource-ordering
echo "$peers"
