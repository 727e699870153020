"""Runner benchmarks on the test control plane (a benchmark, not a test); prints Markdown tables.

    python bench/runner_gap.py            # 20 sequences for the gap, 5 rounds of the comparison
    python bench/runner_gap.py --quick    # smoke: 2 sequences, 1 round

1. Gap: for a 3-step sequence (migration Job, Deployment, warm-up Job), the time between the runner
   seeing a step become healthy (the watch event that completes it) and the response to the next step's
   first apply. Measured in-process from the engine's events; median and p95 over all step boundaries.
2. Total: the same sequence with ``krmfn apply`` (the CLI, process start included) against a shell
   script of ``kubectl apply --server-side`` + ``kubectl wait`` (``kubectl rollout status`` for the
   Deployment) per step, on the same cluster, alternating, each run in a fresh namespace.
3. Bulk: 100, 1,000 and 10,000 ConfigMaps in one step, ``krmfn apply`` against ``kubectl apply
   --server-side``, each run creating them in a fresh namespace, alternating; with krmfn's peak RSS
   (the child's ``ru_maxrss``).
4. Waited: 100 one-replica Deployments in one step (``--waited``), ``krmfn apply`` (one watch per kind
   and namespace) against ``kubectl apply --server-side`` + ``kubectl wait --for=condition=Available --all``.
5. ``--sweep``: 1,000 ConfigMaps with ``--concurrency`` 1, 4, 8, 16 and 32, alternating with kubectl:
   how the default (parallel.DEFAULT_CONCURRENCY) was chosen.

    python bench/runner_gap.py --counts 100,1000 --rounds 3    # fewer or smaller bulk rows
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
if TYPE_CHECKING:
    from bench import functions
else:
    import functions

from cluster.cluster import Cluster, cache_dir, create_namespace  # noqa: E402

from krmfn.runner.cluster.kube import HttpApi, load_config  # noqa: E402
from krmfn.runner.engine.engine import Options, Runner  # noqa: E402
from krmfn.runner.events import Apply, Event, Status, StepDone  # noqa: E402
from krmfn.runner.plan import build_plan  # noqa: E402
from krmfn.yaml.io import dump_all_fast  # noqa: E402


def job(name: str, step: int, final: bool = False) -> dict[str, Any]:
    notes = {"krmfn.dev/step": f"s{step}", "krmfn.dev/step-index": str(step), "krmfn.dev/step-timeout": "60s"}
    if final:
        notes["krmfn.dev/wait"] = "true"
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "annotations": notes},
            "spec": {"backoffLimit": 0, "template": {"spec": {"restartPolicy": "Never",
                     "containers": [{"name": "main", "image": "app:1"}]}}}}  # fmt: skip


def deployment(step: int) -> dict[str, Any]:
    notes = {"krmfn.dev/step": f"s{step}", "krmfn.dev/step-index": str(step), "krmfn.dev/step-timeout": "60s"}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "annotations": notes},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "app:1"}]}}}}  # fmt: skip


def sequence() -> list[dict[str, Any]]:
    return [job("db-migration", 0), deployment(1), job("cache-warmup", 2, final=True)]


def fresh_namespace(cluster: Cluster, prefix: str, n: int) -> str:
    # unique: a sweep reuses prefixes within a second
    return create_namespace(cluster.client(), f"{prefix}-{n}-{secrets.token_hex(4)}")


def measure_gaps(cluster: Cluster, sequences: int) -> list[float]:
    gaps: list[float] = []
    api = HttpApi(load_config(str(cluster.kubeconfig), None))
    for n in range(sequences):
        namespace = fresh_namespace(cluster, "gap", n)
        marks: list[tuple[float, Event]] = []

        def emit(event: Event, marks: list[tuple[float, Event]] = marks) -> None:
            marks.append((time.perf_counter(), event))

        plan = build_plan(sequence(), namespace=namespace, default_timeout=60)
        result = Runner(api, Options(namespace=namespace), emit).run(plan)
        if not result.ok:
            raise SystemExit(f"sequence {n} failed: {result.error}")
        healthy_at: dict[int, float] = {}
        for t, event in marks:
            if isinstance(event, Status) and event.state == "current":
                healthy_at[event.step] = t  # the last object to turn current completes the step
        first_apply: dict[int, float] = {}
        for t, event in marks:
            if isinstance(event, Apply):
                first_apply.setdefault(event.step, t)
        done = {e.step for _, e in marks if isinstance(e, StepDone)}
        gaps.extend(first_apply[s + 1] - healthy_at[s] for s in sorted(done) if s + 1 in first_apply)
    api.close()
    return gaps


KUBECTL_SCRIPT = """\
set -e
k="{kubectl} --kubeconfig {kubeconfig} -n {ns}"
$k apply --server-side --field-manager=bench -f {dir}/0.yaml >/dev/null
$k wait --for=condition=complete job/db-migration --timeout=60s >/dev/null
$k apply --server-side --field-manager=bench -f {dir}/1.yaml >/dev/null
$k rollout status deployment/web --timeout=60s >/dev/null
$k apply --server-side --field-manager=bench -f {dir}/2.yaml >/dev/null
$k wait --for=condition=complete job/cache-warmup --timeout=60s >/dev/null
"""


def timed(command: list[str]) -> tuple[float, int]:
    """Seconds and peak RSS (KiB) of ``command``, a child of its own, its RSS measured by GNU time: a
    child forked straight from this process would start its high-water mark at this process's size."""
    measured = [functions.GNU_TIME, "-f", "%M", *command] if os.path.exists(functions.GNU_TIME) else command
    start = time.perf_counter()
    proc = subprocess.Popen(measured, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.stderr is not None
    err = proc.stderr.read().decode()
    if proc.returncode != 0:
        raise SystemExit(f"{command[0]} failed ({proc.returncode}): {err[-2000:]}")
    lines = err.strip().splitlines()
    return seconds, int(lines[-1]) if measured is not command and lines else usage.ru_maxrss


def alternate(
    cluster: Cluster, rounds: int, label: str, ours: list[str], theirs: Callable[[str], list[str]]
) -> tuple[list[float], list[float], int]:
    """Seconds per round for ``krmfn apply <ours>`` and for ``theirs(namespace)``, alternating, each run in
    a fresh namespace of its own; and krmfn's largest peak RSS (KiB)."""
    krmfn = [
        str(Path(sys.executable).parent / "krmfn"),
        "apply",
        *ours,
        "--kubeconfig",
        str(cluster.kubeconfig),
        "--applyset",  # each app names its inventory; one per fresh namespace here
        "bench",
    ]
    krmfn_times: list[float] = []
    their_times: list[float] = []
    rss = 0
    for n in range(rounds):
        for command, times, who in ((lambda ns: [*krmfn, "-n", ns], krmfn_times, "krmfn"),
                                    (theirs, their_times, "kubectl")):  # fmt: skip
            ns = fresh_namespace(cluster, f"{label}-{who}", n)
            seconds, peak = timed(command(ns))
            times.append(seconds)
            if who == "krmfn":
                rss = max(rss, peak)
    return krmfn_times, their_times, rss


def compare(cluster: Cluster, rounds: int, workdir: Path) -> tuple[list[float], list[float]]:
    docs = sequence()
    manifest = workdir / "all.yaml"
    manifest.write_text(dump_all_fast(docs))
    for i, doc in enumerate(docs):
        (workdir / f"{i}.yaml").write_text(dump_all_fast([doc]))
    kubectl = str(cache_dir() / "bin" / "kubectl")

    def script(ns: str) -> list[str]:
        return [
            "bash",
            "-c",
            KUBECTL_SCRIPT.format(kubectl=kubectl, kubeconfig=cluster.kubeconfig, ns=ns, dir=workdir),
        ]

    ours, theirs, _ = alternate(cluster, rounds, "seq", ["-f", str(manifest)], script)
    return ours, theirs


def bulk(
    cluster: Cluster, rounds: int, workdir: Path, count: int, flags: tuple[str, ...] = ()
) -> tuple[list[float], list[float], int]:
    manifest = workdir / f"configmaps-{count}.yaml"
    manifest.write_text(dump_all_fast([
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"config-{i:05d}"},
         "data": {"level": "info", "index": str(i)}}
        for i in range(count)
    ]))  # fmt: skip
    kubectl = str(cache_dir() / "bin" / "kubectl")

    def server_side(ns: str) -> list[str]:
        return [kubectl, "--kubeconfig", str(cluster.kubeconfig), "-n", ns, "apply", "--server-side",
                "--field-manager=bench", "-f", str(manifest)]  # fmt: skip

    return alternate(cluster, rounds, f"bulk{count}", ["-f", str(manifest), *flags], server_side)


WAIT_SCRIPT = """\
set -e
k="{kubectl} --kubeconfig {kubeconfig} -n {ns}"
$k apply --server-side --field-manager=bench -f {manifest} >/dev/null
$k wait --for=condition=Available --all deployments --timeout=300s >/dev/null
"""


def waited(cluster: Cluster, rounds: int, workdir: Path, count: int) -> tuple[list[float], list[float], int]:
    """``count`` one-replica Deployments in one step, waited until available: krmfn (one watch per kind
    and namespace) against kubectl apply + ``kubectl wait --all``."""
    docs = [deployment(0) for _ in range(count)]
    for i, doc in enumerate(docs):
        doc["metadata"]["name"] = f"web-{i:04d}"
        doc["metadata"]["annotations"]["krmfn.dev/wait"] = "true"
        doc["metadata"]["annotations"]["krmfn.dev/step-timeout"] = "300s"
        doc["spec"]["replicas"] = 1
        doc["spec"]["selector"]["matchLabels"]["app"] = doc["metadata"]["name"]
        doc["spec"]["template"]["metadata"]["labels"]["app"] = doc["metadata"]["name"]
    manifest = workdir / f"deployments-{count}.yaml"
    manifest.write_text(dump_all_fast(docs))
    kubectl = str(cache_dir() / "bin" / "kubectl")

    def script(ns: str) -> list[str]:
        text = WAIT_SCRIPT.format(kubectl=kubectl, kubeconfig=cluster.kubeconfig, ns=ns, manifest=manifest)
        return ["bash", "-c", text]

    return alternate(cluster, rounds, f"wait{count}", ["-f", str(manifest)], script)


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smoke mode: 2 sequences, 1 round, 20 objects")
    parser.add_argument("--counts", default="100,1000,10000", help="bulk sizes, comma-separated")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of each comparison (10,000: at most 2)")
    parser.add_argument("--waited", default="100", help="Deployments waited for in one step, comma-separated")
    parser.add_argument("--sweep", action="store_true", help="only the --concurrency sweep at 1,000")
    parser.add_argument("--levels", default="1,4,8,16,32", help="--sweep: the --concurrency values")
    args = parser.parse_args()
    sequences, rounds = (2, 1) if args.quick else (20, args.rounds)
    counts = [20] if args.quick else [int(c) for c in args.counts.split(",")]
    deployments = [5] if args.quick else [int(c) for c in args.waited.split(",") if c]
    with tempfile.TemporaryDirectory(prefix="krmfn-bench-") as tmp, Cluster(Path(tmp) / "cluster") as cluster:
        if args.sweep:
            sweep(cluster, rounds, Path(tmp), [int(n) for n in args.levels.split(",")])
            return
        gaps = measure_gaps(cluster, sequences)
        ours, theirs = compare(cluster, rounds, Path(tmp))
        rows = [(count, *bulk(cluster, rounds if count < 10000 else min(rounds, 2), Path(tmp), count))
                for count in counts]  # fmt: skip
        waits = [(count, *waited(cluster, rounds, Path(tmp), count)) for count in deployments]
    ms = [g * 1000 for g in gaps]
    title = f"{len(ms)} boundaries over {sequences} sequences"
    print(f"### Step gap (healthy -> next step's first apply), {title}\n")
    print("| median | p95 | max |\n|---:|---:|---:|")
    print(f"| {statistics.median(ms):.1f} ms | {p95(ms):.1f} ms | {max(ms):.1f} ms |\n")
    comparison(f"3-step sequence, {rounds} round(s), seconds", ours, "kubectl apply + wait script", theirs)
    table(f"ConfigMaps in one step, krmfn apply vs kubectl apply --server-side, {rounds} round(s) "
          "(10,000: at most 2), median seconds", "objects", "kubectl", rows)  # fmt: skip
    table(f"Deployments (1 replica each) in one step, waited until available, {rounds} round(s), median "
          "seconds", "Deployments", "kubectl apply + kubectl wait --all", waits)  # fmt: skip


def table(title: str, what: str, theirs: str, rows: list[tuple[int, list[float], list[float], int]]) -> None:
    """Rows of (count, krmfn's seconds, the other's seconds, krmfn's peak RSS in KiB), medians."""
    if not rows:
        return
    print(f"\n### {title}\n")
    print(f"| {what} | krmfn apply | {theirs} | ratio krmfn / kubectl | krmfn peak RSS |")
    print("|---:|---:|---:|---:|---:|")
    for count, ours, others, rss in rows:
        a, b = statistics.median(ours), statistics.median(others)
        print(f"| {count:,} | {a:.2f} | {b:.2f} | {a / b:.2f} | {rss / 1024:.0f} MB |")


def sweep(cluster: Cluster, rounds: int, workdir: Path, levels: list[int]) -> None:
    print(f"### 1,000 ConfigMaps by --concurrency, {rounds} round(s), median seconds\n")
    print("| --concurrency | krmfn apply | kubectl (same rounds) | ratio |\n|---:|---:|---:|---:|")
    for n in levels:
        ours, theirs, _ = bulk(cluster, rounds, workdir, 1000, ("--concurrency", str(n)))
        a, b = statistics.median(ours), statistics.median(theirs)
        print(f"| {n} | {a:.2f} | {b:.2f} | {a / b:.2f} |", flush=True)


def comparison(title: str, ours: list[float], their_name: str, theirs: list[float]) -> None:
    print(f"### {title}\n")
    print("| tool | median | min | max |\n|---|---:|---:|---:|")
    for name, values in (("krmfn apply", ours), (their_name, theirs)):
        print(f"| {name} | {statistics.median(values):.2f} | {min(values):.2f} | {max(values):.2f} |")
    print(f"\nratio krmfn / kubectl (medians): {statistics.median(ours) / statistics.median(theirs):.2f}")


if __name__ == "__main__":
    main()
