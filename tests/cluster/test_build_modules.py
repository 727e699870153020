"""The real node's kubelet and kube-proxy (build/node) are built from the same Kubernetes as the control
plane (build/k8s): two wrapper modules, so that adding the node left the control plane's go.sum (its
build stamp, shared by every worktree) as it was; they must agree on every module both use."""

from __future__ import annotations

import re
from pathlib import Path

BUILD = Path(__file__).resolve().parent / "build"
REQUIRE = re.compile(r"^\s*(?:require\s+)?(\S+) (v\S+)(?: // indirect)?$")
REPLACE = re.compile(r"^\s*(\S+) => (\S+) (v\S+)$")


def effective_versions(go_mod: Path) -> dict[str, str]:
    """module -> the version the build uses (a replacement's, where there is one)."""
    required: dict[str, str] = {}
    replaced: dict[str, str] = {}
    for line in go_mod.read_text().splitlines():
        if match := REPLACE.match(line):
            replaced[match[1]] = f"{match[2]}@{match[3]}"
        elif (match := REQUIRE.match(line)) and not line.startswith(("module", "go ")):
            required[match[1]] = match[2]
    return {module: replaced.get(module, f"{module}@{version}") for module, version in required.items()}


def test_the_node_and_the_control_plane_use_the_same_kubernetes_and_module_versions() -> None:
    control_plane = effective_versions(BUILD / "k8s" / "go.mod")
    node = effective_versions(BUILD / "node" / "go.mod")
    assert control_plane["k8s.io/kubernetes"] == node["k8s.io/kubernetes"] == "k8s.io/kubernetes@v1.35.4"
    shared = control_plane.keys() & node.keys()
    assert len(shared) > 100  # the parse found the requirement lists
    assert {m: (control_plane[m], node[m]) for m in shared if control_plane[m] != node[m]} == {}
    replacements = [
        re.findall(r"(?m)^\t(k8s\.io/\S+ => .*)$", (BUILD / d / "go.mod").read_text())
        for d in ("k8s", "node")
    ]
    assert replacements[0] == replacements[1] and len(replacements[0]) > 20
