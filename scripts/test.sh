#!/usr/bin/env bash
# The whole suite, from nothing: test tooling in .venv, kustomize, the test control plane and the Flux
# Operator built from the Go module proxy (cached under $KRMFN_CACHE), lint, types, import contracts,
# then pytest.
# This is the README's test command; .ci/run calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[test]'
export PATH="$PWD/.venv/bin:$PATH"

KUSTOMIZE=$(bash scripts/install-kustomize.sh)
export KRMFN_KUSTOMIZE="$KUSTOMIZE"
KRMFN_CLUSTER_BIN=$(bash tests/cluster/build.sh)
export KRMFN_CLUSTER_BIN
# The Flux Operator for the ResourceSet e2e tests (AGPL-3.0: built into the cache as a test tool only).
bash tests/cluster/build-flux-operator.sh >/dev/null
# Helm 3 and 4 for tests/test_helm.py (Apache-2.0, built into the cache as test tools).
bash tests/cluster/build-helm.sh >/dev/null
# kapp for tests/cluster/test_side_by_side_kapp.py and bench/engines.py (Apache-2.0, a test tool too).
bash tests/cluster/build-kapp.sh >/dev/null
bash scripts/fetch-resourceset-crd.sh >/dev/null  # the export tests' Flux Operator CRD, into the cache
bash scripts/fetch-peer-manifests.sh >/dev/null  # Gatekeeper's chart, Argo CD's sets: tests/test_peer_manifests.py
# A real OCI registry for set-image's registry lookups (Debian's docker-registry package).
if ! command -v docker-registry >/dev/null; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-registry >/dev/null
  else
    echo "error: set-image's registry tests need docker-registry: sudo apt-get install docker-registry" >&2; exit 1
  fi
fi
# The function images for tests/test_container.py, built and run under podman: scripts/install-podman.sh
# installs the engine as root (podman, runc, podman-docker, mmdebstrap), like the registry above; the
# images are cached by content, so an unchanged checkout spends seconds here.
bash scripts/build-image.sh >/dev/null
# The real node of tests/cluster/node.py: scripts/install-containerd.sh installs Debian's containerd, runc,
# CNI plugins and nftables as root, like the registry above; its kubelet and kube-proxy come from
# tests/cluster/build.sh, its images (PostgreSQL, the demo app, pause) from Debian's packages, cached by
# content. Its tests run containerd and the kubelet as root; run as another user, they fail and say so.
bash scripts/install-containerd.sh
[ "$(id -u)" != 0 ] || bash tests/cluster/images/build.sh >/dev/null
command -v kpt >/dev/null || { echo "error: kpt is required for the e2e tests (preinstalled on these machines)" >&2; exit 1; }

bash tests/goyaml/build.sh >/dev/null  # the Go YAML readers of tests/test_yaml_types.py, into the cache
echo "== ruff" && ruff check . && ruff format --check .
echo "== mypy" && mypy
echo "== import contracts" && lint-imports
echo "== pytest" && pytest "$@"
