"""The staged deploy handed to other engines: rendering the test package, exporting it as a ResourceSet,
applying it with kpt live, kapp or the Flux Operator, and reading the operator's status.

Shared by tests/cluster/test_export_engines.py, test_flux_operator.py, test_side_by_side_kapp.py and
bench/engines.py.

    package = render(tmp_path, namespace)                  # kpt fn render of tests/testdata/...
    rset = export_resourceset(package, namespace, tmp_path)  # krmfn export resourceset, as a dict
    client.apply(ResourceSet.from_dict(rset)); wait_ready(client, "app", namespace)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml
from e2e import tool
from lightkube import Client
from lightkube.generic_resource import create_namespaced_resource
from lightkube.types import PatchType

from krmfn.export import main as export

from .cluster import ClusterError, wait_until

TESTDATA = Path(__file__).parent.parent / "testdata"
PACKAGE = TESTDATA / "export-staged-deploy"
PLACEHOLDER = "krmfn-export-test"
BIN = Path(sys.executable).parent
ResourceSet = create_namespaced_resource("fluxcd.controlplane.io", "v1", "ResourceSet", "resourcesets")
FIELD_MANAGER = "krmfn-export-test"


def run(args: list[str], cwd: Path, kubeconfig: Path | None = None, timeout: float = 180) -> str:
    """stdout of ``args``, which must exit 0; this interpreter's scripts (krmfn-*) come first on PATH."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    if kubeconfig:
        env["KUBECONFIG"] = str(kubeconfig)
    done = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def kpt() -> str:
    found = shutil.which("kpt")
    assert found, "kpt is required for the engine tests (preinstalled on these machines)"
    return found


def render(
    tmp_path: Path,
    namespace: str,
    *,
    migration_runs_for: str = "",
    migration_fails: bool = False,
    package: Path = PACKAGE,
    name: str = "staged-deploy",
) -> Path:
    """``package`` copied into tmp_path/name for ``namespace`` and rendered with ``kpt fn render``.

    ``migration_runs_for`` (a Go duration) keeps the migration Job's pod running that long and
    ``migration_fails`` makes it exit 3 (kwok stages, tests/cluster/README.md).
    """
    target = tmp_path / name
    shutil.copytree(package, target)
    for file in target.glob("*.yaml"):
        file.write_text(file.read_text().replace(PLACEHOLDER, namespace))
    labels = {}
    if migration_runs_for:
        labels["test.krmfn.dev/slow"] = migration_runs_for
    if migration_fails:
        labels["test.krmfn.dev/fail"] = "3"
    if labels:
        job_file = target / "db-migration.yaml"
        job = yaml.safe_load(job_file.read_text())
        job["spec"]["template"]["metadata"] = {"labels": labels}
        job_file.write_text(yaml.safe_dump(job))
    run([kpt(), "fn", "render", "--allow-exec"], target)
    return target


def export_resourceset(source: Path, namespace: str, tmp_path: Path, name: str = "app") -> dict[str, Any]:
    """``krmfn export resourceset -f source`` (in process), as a dict."""
    out = tmp_path / f"resourceset-{name}.yaml"
    argv = ["export", "resourceset", "-f", str(source), "--name", name, "-n", namespace, "-o", str(out)]
    assert export(argv) == 0
    rset: dict[str, Any] = yaml.safe_load(out.read_text())
    return rset


def kpt_live_apply(package: Path, namespace: str, kubeconfig: Path) -> list[dict[str, Any]]:
    """``kpt live init`` + ``kpt live apply`` of the package; kpt's JSON events."""
    run([kpt(), "live", "init", "--namespace", namespace], package, kubeconfig)
    out = run(
        [kpt(), "live", "apply", "--install-resource-group", "--output", "json", "--reconcile-timeout", "2m"],
        package,
        kubeconfig,
    )
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


KAPP_GROUP = "kapp.k14s.io/change-group"
KAPP_RULE = "kapp.k14s.io/change-rule"


def kapp_package(package: Path) -> Path:
    """The rendered package as kapp would be given it, beside it: the Kptfile and local-config objects left
    out, and krmfn's steps written as kapp change groups (each object in the group ``krmfn.dev/<step>``,
    and every object of a later step ``upsert after upserting`` the step before), the way a kapp user
    orders a staged deploy."""
    target = package.parent / f"{package.name}-kapp"
    target.mkdir()
    docs = [d for f in sorted(package.glob("*.yaml")) for d in yaml.safe_load_all(f.read_text()) if d]
    docs = [
        d
        for d in docs
        if d.get("kind") != "Kptfile"
        and "config.kubernetes.io/local-config" not in (d["metadata"].get("annotations") or {})
    ]
    steps: dict[int, str] = {}
    for doc in docs:
        notes = doc["metadata"]["annotations"]
        steps[int(notes["krmfn.dev/step-index"])] = notes["krmfn.dev/step"]
    order = [steps[i] for i in sorted(steps)]
    for doc in docs:
        notes = doc["metadata"]["annotations"]
        notes[KAPP_GROUP] = f"krmfn.dev/{notes['krmfn.dev/step']}"
        position = order.index(notes["krmfn.dev/step"])
        if position:
            notes[KAPP_RULE] = f"upsert after upserting krmfn.dev/{order[position - 1]}"
    (target / "app.yaml").write_text(yaml.safe_dump_all(docs))
    return target


def kapp_deploy(app: Path, name: str, namespace: str, kubeconfig: Path) -> subprocess.CompletedProcess[str]:
    """``kapp deploy -a name -f app --yes`` (kapp waits for each change to reconcile: a Job to complete, a
    Deployment's replicas available); the app's record lives in ``namespace``. Not checked: the caller
    reads the exit code."""
    args = [tool("kapp"), "deploy", "-a", name, "-n", namespace, "-f", str(app), "--yes", "--tty=false",
            "--wait-timeout", "5m", "--kubeconfig", str(kubeconfig)]  # fmt: skip
    return subprocess.run(args, capture_output=True, text=True, timeout=600, check=False)


def condition(rset: dict[str, Any], kind: str = "Ready") -> dict[str, Any]:
    """The ResourceSet's condition of that type ({} if it has none yet)."""
    found = [c for c in (rset.get("status") or {}).get("conditions") or [] if c.get("type") == kind]
    return found[0] if found else {}


def get_rset(client: Client, name: str, namespace: str) -> dict[str, Any]:
    return dict(client.get(ResourceSet, name, namespace=namespace))


def wait_settled(
    client: Client, name: str, namespace: str, timeout: float = 120, generation: int | None = None
) -> dict[str, Any]:
    """The ResourceSet, read back from the cluster, once its Ready condition is True or False for its
    current generation (Unknown: the operator is still at work)."""
    got: dict[str, Any] = {}

    def settled() -> bool:
        nonlocal got
        got = get_rset(client, name, namespace)
        ready = condition(got)
        # The operator records the generation on each condition; status has no observedGeneration.
        current = ready.get("observedGeneration") == (generation or got["metadata"]["generation"])
        return current and ready.get("status") in ("True", "False")

    try:
        wait_until(f"ResourceSet {namespace}/{name} to settle", settled, timeout, interval=0.1)
    except ClusterError as err:
        raise AssertionError(f"{err}; last status: {json.dumps(got.get('status'), indent=1)}") from None
    return got


def wait_ready(client: Client, name: str, namespace: str, timeout: float = 120) -> dict[str, Any]:
    got = wait_settled(client, name, namespace, timeout)
    ready = condition(got)
    assert ready.get("status") == "True", f"ResourceSet {namespace}/{name} is not Ready: {ready}"
    return got


def request_reconcile(client: Client, name: str, namespace: str) -> str:
    """Asks the operator to reconcile now (the annotation ``flux reconcile`` sets); returns the token."""
    token = str(time.time_ns())
    patch = {"metadata": {"annotations": {"reconcile.fluxcd.io/requestedAt": token}}}
    client.patch(ResourceSet, name, patch, namespace=namespace, patch_type=PatchType.MERGE)
    return token


def inventory(rset: dict[str, Any]) -> list[str]:
    """The sorted ids of the ResourceSet's inventory (``<namespace>_<name>_<group>_<kind>``)."""
    return sorted(e["id"] for e in (rset.get("status") or {}).get("inventory", {}).get("entries", []))


def wait_inventory(client: Client, name: str, namespace: str, expected: list[str]) -> None:
    """Waits for the inventory to be ``expected``. The operator writes the conditions and the rest of the
    status in two requests, so Ready can turn True a moment before the final inventory is stored."""
    seen: list[str] = []

    def matches() -> bool:
        nonlocal seen
        seen = inventory(get_rset(client, name, namespace))
        return seen == sorted(expected)

    try:
        wait_until(f"the inventory of ResourceSet {namespace}/{name}", matches, 10)
    except ClusterError as err:
        raise AssertionError(f"{err}: {seen} != {sorted(expected)}") from None
