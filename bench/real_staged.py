"""examples/staged-deploy-real end to end on the real node (tests/cluster/node.py): `krmfn apply` against
`kubectl apply` + `kubectl wait` and the Flux Operator on the same node (a benchmark, not a test).

    sudo python bench/real_staged.py              # 3 rounds, engines alternating
    sudo python bench/real_staged.py --quick      # 1 round

The deploy is the example as rendered (four steps: PostgreSQL, then the ConfigMap and the migration Job
that creates the schema, then the web Deployment, Ready only once that schema is there, then the warm-up
Job calling the web Service), each run in a fresh namespace on the real node, which is deleted (and gone)
before the next run. The engines:

- ``krmfn apply -f DIR -n NS`` (its default 5 s settle window on each workload step);
- the same with ``krmfn.dev/settle: 0s`` on the two Deployments (what the window costs);
- a shell script of ``kubectl apply --server-side -f STEP`` then, for each of the step's Deployments and
  Jobs, ``kubectl wait --for=condition=Available`` or ``--for=condition=Complete``, step by step: what a
  team writes without a tool;
- the Flux Operator v0.58.1 running the ``krmfn export resourceset`` output (ResourceSet creation to its
  Ready condition; the example's Secret created first, untimed: a ResourceSet holds no Secret).

Each total is start to exit (ResourceSet: creation to Ready). Prints Markdown.
"""

from __future__ import annotations

import io
import secrets
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
if TYPE_CHECKING:
    from bench import engines, on_real_node
else:
    import engines
    import on_real_node

from cluster.cluster import Cluster, cache_dir, create_namespace, wait_until  # noqa: E402
from cluster.node import REAL_NAMESPACE, RealNode  # noqa: E402
from lightkube import ApiError, Client  # noqa: E402
from lightkube.resources.core_v1 import Namespace, Secret  # noqa: E402

from krmfn.k8s.step_grouping import group  # noqa: E402
from krmfn.render import main as render_main  # noqa: E402
from krmfn.runner.settle_annotations import SETTLE  # noqa: E402
from krmfn.yaml.io import dump_all_fast, load_all_fast  # noqa: E402

Doc = dict[str, Any]
EXAMPLE = ROOT / "examples" / "staged-deploy-real"
ENGINES = ("krmfn apply", "krmfn apply, settle 0s", "kubectl apply + kubectl wait", "Flux Operator")


def rendered() -> list[Doc]:
    out, err = io.StringIO(), io.StringIO()
    if render_main(["render", str(EXAMPLE)], stdout=out, stderr=err) != 0:
        raise SystemExit(f"krmfn render {EXAMPLE} failed: {err.getvalue()}")
    return [doc for doc in load_all_fast(out.getvalue()) if doc]


def without_settle(docs: list[Doc]) -> list[Doc]:
    out = []
    for doc in docs:
        if doc["kind"] == "Deployment":
            meta = doc["metadata"]
            notes = {**meta.get("annotations", {}), SETTLE: "0s"}
            out.append({**doc, "metadata": {**meta, "annotations": notes}})
        else:
            out.append(doc)
    return out


def kubectl_script(docs: list[Doc], workdir: Path, kubeconfig: Path) -> str:
    """Step by step: apply the step's objects, then wait for each of its Deployments and Jobs."""
    kubectl = cache_dir() / "bin" / "kubectl"
    lines = ["set -e", f'k="{kubectl} --kubeconfig {kubeconfig} -n $1"']  # the cache's and bench's own paths
    for step in group(docs).steps:
        path = workdir / f"step-{step.index}.yaml"
        path.write_text(dump_all_fast(step.items))
        lines.append(f"$k apply --server-side --field-manager=bench -f {shlex.quote(str(path))} >/dev/null")
        for obj in step.items:
            condition = {"Deployment": "Available", "Job": "Complete"}.get(obj["kind"])
            if condition:
                target = shlex.quote(f"{obj['kind'].lower()}/{obj['metadata']['name']}")
                lines.append(f"$k wait --for=condition={condition} {target} --timeout=5m >/dev/null")
    return "\n".join(lines) + "\n"


def run(command: list[str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{command[0]} failed ({proc.returncode}): {(proc.stdout + proc.stderr)[-2000:]}")
    return seconds


def in_namespace(docs: list[Doc], namespace: str) -> list[Doc]:
    return [{**doc, "metadata": {**doc["metadata"], "namespace": namespace}} for doc in docs]


def flux(cluster: Cluster, docs: list[Doc], namespace: str, workdir: Path) -> float:
    """A ResourceSet holds no Secret (``krmfn export`` refuses to inline one), so the Secret is created
    first, untimed, as a team delivers it another way; the operator applies objects as written, so each
    carries the namespace."""
    for doc in in_namespace([d for d in docs if d["kind"] == "Secret"], namespace):
        cluster.client().create(cast(Secret, Secret.from_dict(doc)))
    source = workdir / f"flux-{namespace}"
    source.mkdir()
    (source / "all.yaml").write_text(
        dump_all_fast(in_namespace([d for d in docs if d["kind"] != "Secret"], namespace))
    )
    return engines.flux_operator(cluster, source, namespace)  # ResourceSet creation to Ready


def gone(client: Client, namespace: str) -> None:
    client.delete(Namespace, namespace)

    def deleted() -> bool:
        try:
            client.get(Namespace, namespace)
        except ApiError as err:
            return err.status.code == 404
        return False

    wait_until(f"namespace {namespace} gone", deleted, 300, interval=0.2)


def measure(cluster: Cluster, node: RealNode, workdir: Path, rounds: int) -> dict[str, list[float]]:
    """Seconds per run of each engine, ``rounds`` runs each, alternating."""
    times: dict[str, list[float]] = {engine: [] for engine in ENGINES}
    node.tag("postgres", "localhost/krmfn-node-postgres:15")
    node.tag("app", "localhost/krmfn-node-app:1.0.0")
    docs = rendered()
    sources = {}
    for label, objects in (("default", docs), ("settle0", without_settle(docs))):
        sources[label] = workdir / label
        sources[label].mkdir()
        (sources[label] / "all.yaml").write_text(dump_all_fast(objects))
    script = workdir / "kubectl.sh"
    script.write_text(kubectl_script(docs, workdir, cluster.kubeconfig))
    client = cluster.client()
    krmfn = [str(Path(sys.executable).parent / "krmfn"), "apply", "--kubeconfig", str(cluster.kubeconfig)]
    krmfn += ["--applyset", "staged-deploy-real"]  # the rendered example names no app
    engines: dict[str, Callable[[str], float]] = {
        "krmfn apply": lambda ns: run([*krmfn, "-f", str(sources["default"]), "-n", ns]),
        "krmfn apply, settle 0s": lambda ns: run([*krmfn, "-f", str(sources["settle0"]), "-n", ns]),
        "kubectl apply + kubectl wait": lambda ns: run(["bash", str(script), ns]),
        "Flux Operator": lambda ns: flux(cluster, docs, ns, workdir),
    }
    for n in range(rounds):
        for engine in ENGINES:
            ns = create_namespace(client, f"staged-{n}-{secrets.token_hex(3)}", annotations=REAL_NAMESPACE)
            seconds = engines[engine](ns)
            times[engine].append(seconds)
            print(f"round {n + 1} {engine}: {seconds:.2f}s", file=sys.stderr)
            gone(client, ns)
    return times


def main() -> int:
    rounds = on_real_node.rounds(__doc__ or "", "real_staged.py", 3)
    if rounds is None:
        return 1
    with on_real_node.control_plane("real-staged") as (cluster, workdir):
        cluster.start_flux_operator()
        with on_real_node.node_of(cluster, workdir) as node:
            times = measure(cluster, node, workdir, rounds)
    print(f"### examples/staged-deploy-real on the real node (4 steps), median of {rounds} run(s)\n")
    print("| engine | total s | min-max s | ratio to kubectl |\n|---|---:|---:|---:|")
    base = statistics.median(times["kubectl apply + kubectl wait"])
    for engine in ENGINES:
        values = times[engine]
        median = statistics.median(values)
        print(f"| {engine} | {median:.2f} | {min(values):.2f}-{max(values):.2f} | {median / base:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
