"""One staged deploy through five engines (krmfn twice) on the test control plane (a benchmark, not a
test); prints a Markdown table.

    python bench/engines.py             # 5 rounds
    python bench/engines.py --rounds 9
    python bench/engines.py --quick     # smoke: 1 round

The deploy is tests/testdata/export-staged-deploy rendered with kpt (set-steps with ``emit:
[depends-on]``): a migration Job (step pre-deploy), a ConfigMap, Service and 2-replica Deployment
(deploy), a warm-up Job (post-deploy, waited for). The engines, alternating, each run in a fresh namespace:

- ``krmfn apply -f DIR -n NS`` (the CLI; total = process start to exit), once as rendered (its 5 s settle
  window on the Deployment) and once with ``krmfn.dev/settle: 0s`` on it (the first ready status, as
  Helm's and kapp's waits take it);
- the Flux Operator v0.58.1 running the ``krmfn export resourceset`` output (total = ResourceSet
  creation to its Ready condition turning True);
- ``kpt live apply`` of the same directory (total = process start to exit; its ResourceGroup CRD is
  installed once, before the rounds);
- Helm 3 (``helm upgrade --install --wait``) of a chart made of the same objects, the migration Job a
  ``pre-install,pre-upgrade`` hook and the warm-up Job a ``post-install,post-upgrade`` hook, as a Helm
  chart writes a staged deploy (total = process start to exit);
- kapp v0.66.0 (``kapp deploy --yes``) of the same objects, krmfn's steps written as kapp change groups
  and ``upsert after upserting`` rules (tests/cluster/engines.kapp_package; total = process start to
  exit). ``--upgrades`` also times a second ``helm upgrade``, ``kapp deploy`` and ``krmfn apply`` with
  nothing changed (Helm runs both hooks again).

``--scale 1000,10000`` times instead one step of that many ConfigMaps (no Jobs) through ``krmfn apply``,
``kpt live apply``, Helm and kapp, each into a fresh namespace (the Flux Operator is left out: a ResourceSet
holds its objects inline, in one object under etcd's 1.5 MiB). Each total is process start to exit, with
the client's CPU (user + system of the tool and its children) and peak RSS from ``wait4``.

Step gap: one observer for all three, a watch on the namespace's Jobs, Deployments, ConfigMaps and
Services. For each step boundary, the time from the step's objects being healthy (the migration Job
Complete; the Deployment with every replica updated and available) to the first object of the next step
appearing. A negative gap means the engine started the next step before the previous one was healthy.
The cluster's time, from the same watch: the sum over the steps of the waited object's creation to its
health (each Job Complete, the Deployment rolled out), the share no tool can shorten.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import yaml  # noqa: E402
from cluster.cluster import Cluster, create_namespace  # noqa: E402
from cluster.engines import (  # noqa: E402
    PLACEHOLDER,
    ResourceSet,
    export_resourceset,
    kapp_deploy,
    kapp_package,
    kpt,
    render,
    run,
)
from e2e import tool  # noqa: E402
from lightkube import Client  # noqa: E402
from lightkube.core.resource import NamespacedResource  # noqa: E402
from lightkube.resources.apps_v1 import Deployment  # noqa: E402
from lightkube.resources.batch_v1 import Job  # noqa: E402
from lightkube.resources.core_v1 import ConfigMap, Service  # noqa: E402

from krmfn.runner.settle_annotations import SETTLE  # noqa: E402

ENGINES = (
    "krmfn apply",
    "krmfn apply, settle 0s",
    "Flux Operator",
    "kpt live apply",
    "Helm upgrade",
    "kapp deploy",
)
HOOKS = {"db-migration.yaml": "pre-install,pre-upgrade", "cache-warmup.yaml": "post-install,post-upgrade"}
"""The Helm chart's hooks: which of the package's files become which hook."""
# (the object that makes the step healthy, the objects of the next step)
BOUNDARIES = (
    (("Job", "db-migration"), {("ConfigMap", "warmup-script"), ("Service", "app"), ("Deployment", "app")}),
    (("Deployment", "app"), {("Job", "cache-warmup")}),
)
WATCHED: tuple[type[NamespacedResource], ...] = (Job, Deployment, ConfigMap, Service)
WAITED = (("Job", "db-migration"), ("Deployment", "app"), ("Job", "cache-warmup"))
"""The object each step waits for: from its creation to its health is the cluster's time, not the tool's."""


@dataclass
class Observer:
    """Watches one namespace and records when each object first appeared and first turned healthy."""

    client: Client
    namespace: str
    appeared: dict[tuple[str, str], float] = field(default_factory=dict)
    healthy: dict[tuple[str, str], float] = field(default_factory=dict)
    ready: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        started = [threading.Event() for _ in WATCHED]
        for kind, flag in zip(WATCHED, started, strict=True):
            threading.Thread(target=self._watch, args=(kind, flag), daemon=True).start()
        for flag in started:
            flag.wait(30)

    def _watch(self, kind: type[NamespacedResource], started: threading.Event) -> None:
        with contextlib.suppress(Exception):  # the cluster stops under the daemon threads at the end
            self._follow(kind, started)

    def _follow(self, kind: type[NamespacedResource], started: threading.Event) -> None:
        # The list gives the resourceVersion to watch from, so no event between list and watch is lost.
        listed = self.client.list(kind, namespace=self.namespace)
        for _ in listed:
            pass
        version = listed.resourceVersion
        started.set()
        for _, obj in self.client.watch(kind, namespace=self.namespace, resource_version=version):
            now = time.perf_counter()
            data: dict[str, Any] = obj.to_dict()  # type: ignore[attr-defined]  # every model has it
            key = (data["kind"], data["metadata"]["name"])
            self.appeared.setdefault(key, now)
            if key not in self.healthy and is_healthy(data):
                self.healthy[key] = now

    def complete(self) -> bool:
        """Every object the gaps need has been seen (appeared, and healthy where it ends a step)."""
        return all(
            done in self.healthy and following <= self.appeared.keys() for done, following in BOUNDARIES
        ) and all(key in self.healthy for key in WAITED)

    def cluster_time(self) -> float:
        """The cluster's own share of the deploy, the same under every tool: for each step, the time from
        its waited object's creation to its health (the Jobs' pods running, the Deployment's rollout).
        No tool that runs the steps in order can finish sooner."""
        return sum(self.healthy[key] - self.appeared[key] for key in WAITED)

    def gaps(self) -> list[float]:
        out = []
        for done, following in BOUNDARIES:
            next_first = min(self.appeared[key] for key in following)
            out.append(next_first - self.healthy[done])
        return out


def is_healthy(data: dict[str, Any]) -> bool:
    """What the bench counts as healthy: a Job Complete; a Deployment observed, every replica updated and
    available."""
    status: dict[str, Any] = data.get("status") or {}
    if data["kind"] == "Job":
        return any(
            c.get("type") == "Complete" and c.get("status") == "True" for c in status.get("conditions") or []
        )
    if data["kind"] == "Deployment":
        want = (data.get("spec") or {}).get("replicas", 1)
        return bool(
            status.get("observedGeneration", 0) >= data["metadata"].get("generation", 0)
            and status.get("updatedReplicas") == want
            and status.get("availableReplicas") == want
        )
    return True


def fresh_namespace(client: Client, engine: str, n: int) -> str:
    return create_namespace(client, f"eng-{engine.split(maxsplit=1)[0].lower()}-{n}-{time.time_ns() % 10**6}")


def package_for(rendered: Path, namespace: str, workdir: Path) -> Path:
    """The rendered package with its namespace replaced (no second kpt render: rendering is not timed)."""
    target = workdir / namespace
    target.mkdir()
    for file in rendered.iterdir():
        if file.is_file():
            (target / file.name).write_text(file.read_text().replace(PLACEHOLDER, namespace))
    return target


def krmfn_apply(cluster: Cluster, package: Path, namespace: str) -> float:
    krmfn = str(Path(sys.executable).parent / "krmfn")
    start = time.perf_counter()
    run(
        [krmfn, "apply", "-f", str(package), "-n", namespace, "--kubeconfig", str(cluster.kubeconfig)],
        package,
    )
    return time.perf_counter() - start


def krmfn_apply_without_settle(cluster: Cluster, package: Path, namespace: str) -> float:
    """``krmfn apply`` with ``krmfn.dev/settle: 0s`` on the Deployment: no window, what Helm's ``--wait``
    and kapp's waits check (the first ready status), so the three compare like for like."""
    unsettled = package.parent / f"{package.name}-settle0"
    if not unsettled.exists():
        unsettled.mkdir()
        shutil.copy(package / "Kptfile", unsettled)  # it names the app, for pruning
        for file in package.glob("*.yaml"):
            docs = list(yaml.safe_load_all(file.read_text()))
            for doc in docs:
                if doc and doc.get("kind") == "Deployment":
                    doc["metadata"].setdefault("annotations", {})[SETTLE] = "0s"
            (unsettled / file.name).write_text(yaml.safe_dump_all(docs))
    return krmfn_apply(cluster, unsettled, namespace)


def flux_operator(cluster: Cluster, package: Path, namespace: str) -> float:
    client = cluster.client()
    rset = export_resourceset(package, namespace, package.parent, name=namespace)
    start = time.perf_counter()
    client.create(ResourceSet.from_dict(rset))
    for _, obj in client.watch(ResourceSet, namespace=namespace, fields={"metadata.name": namespace}):
        status = obj.get("status") or {}
        ready = [c for c in status.get("conditions") or [] if c.get("type") == "Ready"]
        if ready and ready[0]["status"] == "True":
            return time.perf_counter() - start
        if ready and ready[0]["status"] == "False":
            raise SystemExit(f"the ResourceSet failed: {ready[0].get('message')}")
    raise SystemExit("the ResourceSet watch ended")


def kpt_live(cluster: Cluster, package: Path, namespace: str) -> float:
    run([kpt(), "live", "init", "--namespace", namespace], package, cluster.kubeconfig)
    start = time.perf_counter()
    run([kpt(), "live", "apply", "--reconcile-timeout", "2m"], package, cluster.kubeconfig)
    return time.perf_counter() - start


def chart_for(package: Path) -> Path:
    """The package as a Helm chart: every object a template, the two Jobs hooks (the names the render
    gave them, so Helm and krmfn create the same objects)."""
    chart = package.parent / f"{package.name}-chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: staged-deploy\nversion: 0.1.0\n")
    for file in package.glob("*.yaml"):
        docs = [d for d in yaml.safe_load_all(file.read_text()) if d and d.get("kind") != "Kptfile"]
        docs = [
            d
            for d in docs
            if "config.kubernetes.io/local-config" not in (d["metadata"].get("annotations") or {})
        ]
        for doc in docs:
            if file.name in HOOKS:
                doc["metadata"].setdefault("annotations", {})["helm.sh/hook"] = HOOKS[file.name]
        if docs:
            (chart / "templates" / file.name).write_text(yaml.safe_dump_all(docs))
    return chart


def helm_upgrade(cluster: Cluster, package: Path, namespace: str) -> float:
    chart = package.parent / f"{package.name}-chart"
    if not chart.exists():
        chart_for(package)
    start = time.perf_counter()
    run([tool("helm3"), "upgrade", "--install", "app", str(chart), "--namespace", namespace, "--wait",
         "--timeout", "2m", "--kubeconfig", str(cluster.kubeconfig)], package)  # fmt: skip
    return time.perf_counter() - start


def kapp(cluster: Cluster, package: Path, namespace: str) -> float:
    app = package.parent / f"{package.name}-kapp"
    if not app.exists():
        kapp_package(package)
    start = time.perf_counter()
    done = kapp_deploy(app, "app", namespace, cluster.kubeconfig)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"kapp deploy exited {done.returncode}: {done.stderr or done.stdout}")
    return took


RUNNERS: dict[str, Callable[[Cluster, Path, str], float]] = {
    "krmfn apply": krmfn_apply,
    "krmfn apply, settle 0s": krmfn_apply_without_settle,
    "Flux Operator": flux_operator,
    "kpt live apply": kpt_live,
    "Helm upgrade": helm_upgrade,
    "kapp deploy": kapp,
}


AGAIN = ("krmfn apply", "krmfn apply, settle 0s", "Helm upgrade", "kapp deploy")
"""The engines ``--upgrades`` runs a second time on the same namespace with nothing changed."""
Results = dict[str, tuple[list[float], list[list[float]], list[float]]]


def measure(cluster: Cluster, rounds: int, workdir: Path, again: dict[str, list[float]]) -> Results:
    rendered = render(workdir, PLACEHOLDER, name="rendered")
    run([kpt(), "live", "install-resource-group"], workdir, cluster.kubeconfig)
    client = cluster.client()
    results: Results = {e: ([], [[] for _ in BOUNDARIES], []) for e in ENGINES}
    for n in range(rounds):
        for engine in ENGINES:
            namespace = fresh_namespace(client, engine, n)
            package = package_for(rendered, namespace, workdir)
            observer = Observer(cluster.client(), namespace)
            observer.start()
            total = RUNNERS[engine](cluster, package, namespace)
            deadline = time.monotonic() + 60  # kpt does not wait for the Jobs to complete
            while not observer.complete() and time.monotonic() < deadline:
                time.sleep(0.05)
            totals, gaps, cluster_times = results[engine]
            totals.append(total)
            cluster_times.append(observer.cluster_time())
            if engine in again:
                again[engine].append(RUNNERS[engine](cluster, package, namespace))
            for i, gap in enumerate(observer.gaps()):
                gaps[i].append(gap)
            print(f"round {n + 1} {engine}: {total:.2f}s, gaps {[round(g, 3) for g in observer.gaps()]}",
                  file=sys.stderr)  # fmt: skip
    return results


def table(results: Results, rounds: int, again: dict[str, list[float]]) -> None:
    print(f"### Staged deploy (3 steps), {len(ENGINES)} engines, median of {rounds} run(s)\n")
    print(
        "| engine | total s | gap pre-deploy -> deploy | gap deploy -> post-deploy | totals min-max s "
        "| the cluster's time s |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for engine, (totals, gaps, cluster_times) in results.items():
        cells = " | ".join(_ms(statistics.median(g)) for g in gaps)
        print(
            f"| {engine} | {statistics.median(totals):.2f} | {cells} | {min(totals):.2f}-{max(totals):.2f} "
            f"| {statistics.median(cluster_times):.2f} |"
        )
    if again:
        print(f"\n### The same deploy again, nothing changed, median of {rounds} run(s)\n")
        print("| engine | total s | min-max s |")
        print("|---|---:|---:|")
        for engine, totals in again.items():
            print(f"| {engine} | {statistics.median(totals):.2f} | {min(totals):.2f}-{max(totals):.2f} |")


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if abs(seconds) < 1 else f"{seconds:.2f} s"


SCALE_ENGINES = ("krmfn apply", "kpt live apply", "Helm upgrade", "kapp deploy")


def configmaps(workdir: Path, namespace: str, count: int) -> Path:
    """A package of ``count`` ConfigMaps in ``namespace``, as a directory and as a Helm chart beside it."""
    package = workdir / f"{namespace}"
    package.mkdir()
    text = "".join(
        f"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i:05d}\n  namespace: {namespace}\n"
        f"data:\n  key: value-{i}\n"
        for i in range(count)
    )
    (package / "configmaps.yaml").write_text(text)
    chart = package.parent / f"{package.name}-chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: configmaps\nversion: 0.1.0\n")
    (chart / "templates" / "configmaps.yaml").write_text(text)
    return package


class Failed(Exception):
    """A tool that did not finish the deploy: its last line is the table's cell."""


def timed(args: list[str], cwd: Path, kubeconfig: Path) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS MiB) of ``args`` and its children; Failed unless it exits 0."""
    import os
    import subprocess

    env = {
        **os.environ,
        "KUBECONFIG": str(kubeconfig),
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    }
    with (
        tempfile.TemporaryFile() as out
    ):  # a pipe left unread would block a tool that prints a line per object
        start = time.perf_counter()
        process = subprocess.Popen(args, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            out.seek(0)
            lines = [line for line in out.read().decode(errors="replace").splitlines() if line.strip()]
            raise Failed(lines[-1][:300] if lines else f"exit {os.waitstatus_to_exitcode(status)}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def scale_run(cluster: Cluster, engine: str, package: Path, namespace: str) -> tuple[float, float, float]:
    kubeconfig = cluster.kubeconfig
    if engine == "krmfn apply":
        krmfn = str(Path(sys.executable).parent / "krmfn")
        return timed([krmfn, "apply", "-f", str(package), "-n", namespace, "--applyset", "configmaps",
                      "--kubeconfig", str(kubeconfig)],
                     package, kubeconfig)  # fmt: skip
    if engine == "kpt live apply":
        run([kpt(), "live", "init", "--namespace", namespace], package, kubeconfig)
        return timed([kpt(), "live", "apply", "--reconcile-timeout", "5m"], package, kubeconfig)
    if engine == "kapp deploy":
        kapp_args = ["deploy", "-a", "configmaps", "-n", namespace, "-f", str(package), "--yes"]
        return timed([tool("kapp"), *kapp_args, "--tty=false", "--wait-timeout", "10m"], package, kubeconfig)
    chart = package.parent / f"{package.name}-chart"
    helm = [tool("helm3"), "upgrade", "--install", "app", str(chart), "--namespace", namespace]
    return timed([*helm, "--wait", "--timeout", "10m", "--kubeconfig", str(kubeconfig)], package, kubeconfig)


def scale(cluster: Cluster, counts: list[int], rounds: int, workdir: Path) -> None:
    run([kpt(), "live", "install-resource-group"], workdir, cluster.kubeconfig)
    client = cluster.client()
    found: dict[tuple[int, str], list[tuple[float, float, float]]] = {}
    failed: dict[tuple[int, str], str] = {}
    for count in counts:
        for n in range(rounds):
            for engine in SCALE_ENGINES:
                if (count, engine) in failed:
                    continue  # once is enough to say a tool cannot do it
                namespace = fresh_namespace(client, engine, n)
                package = configmaps(workdir, namespace, count)
                try:
                    figures = scale_run(cluster, engine, package, namespace)
                except Failed as err:
                    failed[(count, engine)] = str(err)
                    print(f"{count} ConfigMaps, round {n + 1}, {engine}: failed: {err}", file=sys.stderr)
                    continue
                found.setdefault((count, engine), []).append(figures)
                wall, cpu, rss = figures
                print(f"{count} ConfigMaps, round {n + 1}, {engine}: {wall:.2f}s, CPU {cpu:.2f}s, "
                      f"peak RSS {rss:.0f} MiB", file=sys.stderr)  # fmt: skip
    print(f"### One step of N ConfigMaps, median of {rounds} run(s)\n")
    print("| ConfigMaps | engine | total s | client CPU s | client peak RSS MiB |")
    print("|---:|---|---:|---:|---:|")
    for count in counts:
        for engine in SCALE_ENGINES:
            if (count, engine) in failed:
                print(f"| {count:,} | {engine} | failed: {failed[(count, engine)]} | | |")
                continue
            runs = found[(count, engine)]
            wall, cpu, rss = (statistics.median(r[i] for r in runs) for i in range(3))
            print(f"| {count:,} | {engine} | {wall:.2f} | {cpu:.2f} | {rss:.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smoke mode: 1 round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--upgrades", action="store_true", help="also time a second run, nothing changed")
    parser.add_argument("--scale", default="", metavar="N,N", help="time one step of N ConfigMaps instead")
    args = parser.parse_args()
    rounds = 1 if args.quick else args.rounds
    if args.scale:
        counts = [int(n) for n in args.scale.split(",")]
        with (
            tempfile.TemporaryDirectory(prefix="krmfn-bench-") as tmp,
            Cluster(Path(tmp) / "cluster") as cluster,
        ):
            scale(cluster, counts, rounds, Path(tmp))
        return
    with tempfile.TemporaryDirectory(prefix="krmfn-bench-") as tmp, Cluster(Path(tmp) / "cluster") as cluster:
        cluster.start_flux_operator()
        again: dict[str, list[float]] = {engine: [] for engine in AGAIN} if args.upgrades else {}
        results = measure(cluster, rounds, Path(tmp), again)
    table(results, rounds, again)


if __name__ == "__main__":
    main()
