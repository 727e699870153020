"""The staged deploy upgraded with a new image, through krmfn, Helm and kapp on the test control plane (a
benchmark, not a test); prints a Markdown table.

    python bench/upgrades.py             # 5 rounds
    python bench/upgrades.py --rounds 9
    python bench/upgrades.py --quick     # smoke: 1 round, the new image everywhere only

What issue 35's target names: "krmfn apply at least 2x faster to healthy than Helm's hook-driven upgrade
on the staged deploy". bench/engines.py times the first deploy and a re-run with nothing changed; this
times the two upgrades users make between them, from the same package (tests/testdata/export-staged-deploy)
with ``krmfn-hash-job-names`` added before set-steps, as krmfn's own example renders it:

- **new app image**: the Deployment's image only. The migration and the warm-up keep their specs, so
  their hashed names: krmfn runs neither (they completed), the rollout is the whole upgrade; Helm runs both
  hook Jobs again (``before-hook-creation``), then waits for the rollout;
- **new image everywhere**: the migration's, the app's and the warm-up's. Each Job gets a new hashed name:
  every engine runs one new migration, the rollout, one new warm-up.

Each engine (bench/engines.py's runners: ``krmfn apply`` as rendered and with ``krmfn.dev/settle: 0s``,
``helm upgrade --install --wait`` of the package as a chart with the two Jobs as hooks, ``kapp deploy``
with the steps as change groups) deploys version 1 into a fresh namespace, untimed, then the upgrade,
timed from process start to exit; engines alternate. After each upgrade the bench checks that it
happened (the Deployment's new image on every replica, updated and available, and each Job of the new
version complete) and stops if not: no figure for an upgrade that did not land.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
if TYPE_CHECKING:
    from bench import engines
else:
    import engines

import yaml  # noqa: E402
from cluster.cluster import Cluster, ClusterError, wait_until  # noqa: E402
from cluster.engines import PACKAGE, PLACEHOLDER, render  # noqa: E402
from lightkube import Client  # noqa: E402
from lightkube.resources.apps_v1 import Deployment  # noqa: E402
from lightkube.resources.batch_v1 import Job  # noqa: E402

ENGINES = ("krmfn apply", "krmfn apply, settle 0s", "Helm upgrade", "kapp deploy")
OLD, NEW = "registry.example/krmfn/noop:1", "registry.example/krmfn/noop:2"
UPGRADES = {"new app image": ("app.yaml",), "new image everywhere": ("app.yaml", "db-migration.yaml",
                                                                     "cache-warmup.yaml")}  # fmt: skip
"""Each upgrade: the package's files whose image it bumps."""
Results = dict[str, dict[str, list[tuple[float, bool]]]]
"""Per upgrade and engine, each round's (seconds, healthy when the tool exited)."""
HASH_JOB_NAMES = """apiVersion: fn.krmfn.dev/v1alpha1
kind: HashJobNames
metadata:
  name: staged
  annotations:
    config.kubernetes.io/local-config: "true"
"""


def source(workdir: Path, name: str, bumped: tuple[str, ...]) -> Path:
    """The staged-deploy package with hash-job-names before set-steps, its ``bumped`` files on the new
    image."""
    target = workdir / name
    target.mkdir()
    for file in PACKAGE.iterdir():
        text = file.read_text()
        (target / file.name).write_text(text.replace(OLD, NEW) if file.name in bumped else text)
    (target / "fn-hash-job-names.yaml").write_text(HASH_JOB_NAMES)
    kptfile = yaml.safe_load((target / "Kptfile").read_text())
    hashing = {"exec": "krmfn-hash-job-names", "configPath": "fn-hash-job-names.yaml"}
    kptfile["pipeline"]["mutators"].insert(0, hashing)
    (target / "Kptfile").write_text(yaml.safe_dump(kptfile))
    return target


def job_names(package: Path) -> list[str]:
    return [
        d["metadata"]["name"]
        for f in package.glob("*.yaml")
        for d in yaml.safe_load_all(f.read_text())
        if d and d["kind"] == "Job"
    ]


def rendered(workdir: Path, name: str, bumped: tuple[str, ...]) -> tuple[Path, list[str]]:
    """The package of one version, rendered, and its Jobs' names (hashed)."""
    out = render(workdir, PLACEHOLDER, package=source(workdir / "sources", name, bumped), name=name)
    jobs = job_names(out)
    if sorted(job.rsplit("-", 1)[0] for job in jobs) != ["cache-warmup", "db-migration"]:
        raise SystemExit(f"the render did not hash the two Jobs' names: {jobs}")
    return out, jobs


def problem(client: Client, namespace: str, jobs: list[str]) -> str:
    """Why the upgrade is not (yet) on the cluster, or "": the Deployment on the new image, healthy
    (bench/engines.py's ``is_healthy``) with no old replica left (kstatus's Current), each of ``jobs``
    complete."""
    app: dict[str, Any] = client.get(Deployment, "app", namespace=namespace).to_dict()
    image = app["spec"]["template"]["spec"]["containers"][0]["image"]
    status = app.get("status") or {}
    if (
        image != NEW
        or not engines.is_healthy(app)
        or status.get("replicas") != app["spec"].get("replicas", 1)
    ):
        return f"Deployment app: image {image}, status {status}"
    for name in jobs:
        job: dict[str, Any] = client.get(Job, name, namespace=namespace).to_dict()
        if not engines.is_healthy(job):
            return f"Job {name} is not complete"
    return ""


def landed(client: Client, namespace: str, jobs: list[str]) -> bool:
    """Whether the upgrade was on the cluster when the tool exited; then waits for it to be (a tool may
    exit a moment before the last status is written), and stops the bench if it never is."""
    at_exit = not problem(client, namespace, jobs)
    try:
        wait_until("the upgrade", lambda: not problem(client, namespace, jobs), 30)
    except ClusterError as err:
        why = problem(client, namespace, jobs)
        raise SystemExit(f"{namespace}: the upgrade did not land: {why}") from err
    return at_exit


def measure(cluster: Cluster, rounds: int, workdir: Path, kinds: tuple[str, ...]) -> Results:
    (workdir / "sources").mkdir()
    first, _ = rendered(workdir, "v1", ())
    upgrades = {kind: rendered(workdir, f"v2-{i}", UPGRADES[kind]) for i, kind in enumerate(kinds)}
    client = cluster.client()
    runners: dict[str, Callable[[Cluster, Path, str], float]] = {e: engines.RUNNERS[e] for e in ENGINES}
    results: Results = {kind: {engine: [] for engine in ENGINES} for kind in kinds}
    for n in range(rounds):
        for kind, (upgrade, jobs) in upgrades.items():
            for engine in ENGINES:
                namespace = engines.fresh_namespace(client, engine, n)
                runners[engine](cluster, engines.package_for(first, namespace, workdir), namespace)
                package = engines.package_for(upgrade, namespace, workdir / "upgrades")
                took = runners[engine](cluster, package, namespace)
                results[kind][engine].append((took, landed(client, namespace, jobs)))
                print(f"round {n + 1} {kind}, {engine}: {took:.2f}s", file=sys.stderr)
    return results


def table(results: Results, rounds: int) -> None:
    print(f"### The staged deploy upgraded, {len(ENGINES)} engines, median of {rounds} run(s)\n")
    print("| upgrade | engine | total s | min-max s | Helm's / this | healthy at exit |")
    print("|---|---|---:|---:|---:|---:|")
    for kind, by_engine in results.items():
        helm = statistics.median(took for took, _ in by_engine["Helm upgrade"])
        for engine, runs in by_engine.items():
            totals = [took for took, _ in runs]
            median = statistics.median(totals)
            healthy = sum(at_exit for _, at_exit in runs)
            print(f"| {kind} | {engine} | {median:.2f} | {min(totals):.2f}-{max(totals):.2f} | "
                  f"{helm / median:.2f}x | {healthy}/{len(runs)} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smoke mode: 1 round, the new image everywhere")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rounds = 1 if args.quick else args.rounds
    kinds = ("new image everywhere",) if args.quick else tuple(UPGRADES)  # the smoke: hashing, every engine
    with tempfile.TemporaryDirectory(prefix="krmfn-bench-") as tmp, Cluster(Path(tmp) / "cluster") as cluster:
        (Path(tmp) / "upgrades").mkdir()
        results = measure(cluster, rounds, Path(tmp), kinds)
    table(results, rounds)


if __name__ == "__main__":
    main()
