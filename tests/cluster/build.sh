#!/usr/bin/env bash
# Builds the test control plane from the Go module proxy: kube-apiserver, kube-controller-manager,
# kube-scheduler (tests/cluster/build/k8s), etcd (tests/cluster/build/etcd), kwok and kubectl; and the real
# node's kubelet and kube-proxy (tests/cluster/build/node: the same k8s.io/kubernetes release, its own
# module so that the control plane's stamp, shared by every worktree, stays as it is) and its sandbox
# program (tests/cluster/build/pause). Everything is cached under $KRMFN_CACHE; a second run does nothing.
# Prints the bin directory.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/cache-env.sh"
# Go is needed only when something is not built yet, so cached binaries work on machines without it.
need_go() { command -v go >/dev/null || { echo "error: Go >= 1.26 is required to build the test cluster" >&2; exit 1; }; }

K8S_VERSION=v1.35.4
KWOK_VERSION=v0.8.0

k8s_ldflags="-s -w \
 -X k8s.io/component-base/version.gitVersion=$K8S_VERSION \
 -X k8s.io/component-base/version.gitMajor=1 \
 -X k8s.io/component-base/version.gitMinor=35 \
 -X k8s.io/component-base/version.gitTreeState=clean \
 -X k8s.io/component-base/version.buildDate=2026-01-01T00:00:00Z \
 -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION"

build_k8s() {
  need_go
  (cd "$here/build/k8s" && go build -trimpath -tags selinux,notest -ldflags "$k8s_ldflags" -o "$KRMFN_BIN/" \
    k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler \
    k8s.io/kubernetes/cmd/kubectl)
}
# The same flags and tags as the control plane, so the packages both use come from Go's build cache.
build_node() {
  need_go
  (cd "$here/build/node" && go build -trimpath -tags selinux,notest -ldflags "$k8s_ldflags" -o "$KRMFN_BIN/" \
    k8s.io/kubernetes/cmd/kubelet \
    k8s.io/kubernetes/cmd/kube-proxy)
}
build_pause() {
  need_go
  (cd "$here/build/pause" && go build -trimpath -ldflags "-s -w" -o "$KRMFN_BIN/krmfn-pause" .)
}
build_etcd() {
  need_go
  (cd "$here/build/etcd" && go build -trimpath -ldflags "-s -w" -o "$KRMFN_BIN/etcd" .)
}
build_kwok() {
  need_go
  env GOBIN="$KRMFN_BIN" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
}

k8s_stamp="$K8S_VERSION-$(cat "$here/build/k8s/go.sum" | sha256sum | cut -c1-12)"
etcd_stamp="$(cat "$here/build/etcd/go.sum" | sha256sum | cut -c1-12)"
build_once etcd "$etcd_stamp" build_etcd
build_once kwok "$KWOK_VERSION" build_kwok
build_once kube-apiserver "$k8s_stamp" build_k8s
node_stamp="$K8S_VERSION-$(cat "$here/build/node/go.sum" | sha256sum | cut -c1-12)"
build_once kubelet "$node_stamp" build_node
build_once krmfn-pause "$(cat "$here/build/pause/"*.go "$here/build/pause/go.mod" | sha256sum | cut -c1-12)" build_pause
echo "$KRMFN_BIN"
