"""The real charts and manifest sets of other tools that tests/test_peer_manifests.py and
tests/cluster/test_peer_charts_apply.py order through krmfn (issue 35), fetched by
scripts/fetch-peer-manifests.sh, and each tool's own documented order, computed from the annotations
independently of krmfn's reader: Helm installs pre-install hooks by ascending weight, then the release,
then post-install hooks by ascending weight (a pre-delete or test hook never runs at install); Argo CD
syncs by phase (PreSync, Sync, PostSync) and, within a phase, by ascending wave; kapp upserts an object
with ``change-rule: upsert after upserting G`` once every object of change group G is upserted and
reconciled, and every other object at once."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from e2e import ROOT, tool

from krmfn.yaml.io import load_all_fast

BIN = Path(sys.executable).parent
GATEKEEPER = "gatekeeper-v3.23.1/charts/gatekeeper"
ARGO = "argo-cd-v3.5.7/test/e2e/testdata"
KAPP = "kapp-v0.66.0/examples"
ARGO_PHASES = {"PreSync": 0, "Sync": 1, "PostSync": 2}
SET_STEPS = """\
apiVersion: fn.krmfn.dev/v1alpha1
kind: SetSteps
metadata: {{name: peers}}
orderFrom: {tool}
defaultStep: deploy
steps: [{{name: deploy, timeout: 10m}}]
"""


@functools.cache
def peers() -> Path:
    """The fetched charts and sets, by scripts/fetch-peer-manifests.sh (it needs Go and the proxy)."""
    script = ROOT / "scripts" / "fetch-peer-manifests.sh"
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=900, check=False)
    if proc.returncode != 0:
        raise AssertionError(
            f"{script.relative_to(ROOT)} failed (it needs Go and the module proxy):\n{proc.stderr}"
        )
    return Path(proc.stdout.strip())


def run(args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        args, input=stdin, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"},
    )  # fmt: skip
    assert proc.returncode == 0, f"{args} exited {proc.returncode}:\n{proc.stderr}"
    return proc


def key(doc: dict[str, Any]) -> str:
    meta = doc["metadata"]
    return f"{doc['kind']} {meta.get('namespace', '')}/{meta['name']}"


def notes_of(doc: dict[str, Any]) -> dict[str, str]:
    return doc["metadata"].get("annotations") or {}


def docs_of(text: str) -> list[dict[str, Any]]:
    return [doc for doc in load_all_fast(text) if doc]


def set_steps(tool_name: str, stream: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "set-steps.yaml"
    config.write_text(SET_STEPS.format(tool=tool_name))
    return run(["krmfn-set-steps", "--fn-config", str(config)], stdin=stream)


def krmfn_steps(text: str, on_delete: bool = False) -> list[tuple[str, set[str]]]:
    """(step name, objects) in krmfn's step order, from the annotations set-steps wrote: the steps apply
    runs, or (``on_delete``) the onDelete steps krmfn delete runs before the teardown."""
    steps: dict[int, tuple[str, set[str]]] = {}
    for doc in docs_of(text):
        notes = doc["metadata"]["annotations"]
        if (notes.get("krmfn.dev/on-delete") == "true") != on_delete:
            continue
        index = int(notes["krmfn.dev/step-index"])
        steps.setdefault(index, (notes["krmfn.dev/step"], set()))[1].add(key(doc))
    return [steps[i] for i in sorted(steps)]


def grouped(ranked: dict[str, tuple[int, ...]]) -> list[set[str]]:
    """Objects grouped by rank, ranks ascending."""
    groups: dict[tuple[int, ...], set[str]] = {}
    for name, rank in ranked.items():
        groups.setdefault(rank, set()).add(name)
    return [groups[rank] for rank in sorted(groups)]


def helm_install_order(docs: list[dict[str, Any]]) -> list[set[str]]:
    """Helm's install order: pre-install hooks by weight, the release, post-install hooks by weight."""
    ranked: dict[str, tuple[int, ...]] = {}
    for doc in docs:
        notes = notes_of(doc)
        events = {e.strip() for e in notes.get("helm.sh/hook", "").split(",") if e.strip()}
        weight = int(notes.get("helm.sh/hook-weight") or 0)
        if not events:
            ranked[key(doc)] = (1, 0)
        elif "pre-install" in events:
            ranked[key(doc)] = (0, weight)
        elif "post-install" in events:
            ranked[key(doc)] = (2, weight)
        # any other hook (pre-delete, test) never runs at install
    return grouped(ranked)


def helm_pre_delete_order(docs: list[dict[str, Any]]) -> list[set[str]]:
    """Helm's uninstall order before the release is deleted: the pre-delete hooks by weight."""
    ranked: dict[str, tuple[int, ...]] = {}
    for doc in docs:
        notes = notes_of(doc)
        events = {e.strip() for e in notes.get("helm.sh/hook", "").split(",") if e.strip()}
        if "pre-delete" in events:
            ranked[key(doc)] = (int(notes.get("helm.sh/hook-weight") or 0),)
    return grouped(ranked)


def argo_sync_order(docs: list[dict[str, Any]]) -> list[set[str]]:
    """Argo CD's sync order: by phase (PreSync, Sync, PostSync), then by ascending wave."""
    ranked: dict[str, tuple[int, ...]] = {}
    for doc in docs:
        notes = notes_of(doc)
        phase = ARGO_PHASES[notes.get("argocd.argoproj.io/hook", "Sync")]
        ranked[key(doc)] = (phase, int(notes.get("argocd.argoproj.io/sync-wave") or 0))
    return grouped(ranked)


def gatekeeper(*values: str, namespace: str = "gatekeeper-system", include_crds: bool = False) -> str:
    chart = peers() / GATEKEEPER
    assert (chart.parents[1] / "LICENSE").is_file(), "the chart's licence is not beside it"
    args = [tool("helm3"), "template", "gatekeeper", str(chart), "-n", namespace]
    args += ["--include-crds"] if include_crds else []
    return run([*args, *(a for v in values for a in ("--set", v))]).stdout


def argo_set(name: str) -> str:
    root = peers() / ARGO
    assert (root.parents[2] / "LICENSE").is_file(), "Argo CD's licence is not beside its sets"
    directory = root / name
    if (directory / "kustomization.yaml").exists():
        return run([tool("kustomize"), "build", str(directory)]).stdout
    return "\n---\n".join(p.read_text() for p in sorted(directory.glob("*.yaml")))


def kapp_change_order(docs: list[dict[str, Any]]) -> list[set[str]]:
    """kapp's order: an object waits for every member of each group its ``upsert after upserting`` rules
    name (``change-group`` and ``change-rule`` and their ``.<suffix>`` forms), so its rank is one more than
    the highest rank among them; an object with no such rule is upserted at once (rank 0)."""

    def values(doc: dict[str, Any], prefix: str) -> list[str]:
        return [v for k, v in notes_of(doc).items() if k == prefix or k.startswith(f"{prefix}.")]

    groups: dict[str, list[str]] = {}
    for doc in docs:
        for group in values(doc, "kapp.k14s.io/change-group"):
            groups.setdefault(group, []).append(key(doc))
    after = {
        key(doc): [
            member
            for rule in values(doc, "kapp.k14s.io/change-rule")
            if rule.startswith("upsert after upserting ")
            for member in groups.get(rule.split()[-1], [])
        ]
        for doc in docs
    }

    @functools.cache
    def rank(name: str) -> int:
        return 1 + max((rank(m) for m in after[name] if m != name), default=-1)

    return grouped({name: (rank(name),) for name in after})


def kapp_set(name: str) -> str:
    root = peers() / KAPP
    assert (root.parent / "LICENSE").is_file(), "kapp's licence is not beside its examples"
    return "\n---\n".join(p.read_text() for p in sorted((root / name).glob("*.yml")))
