"""The real node of the test bed (tests/cluster/node.py): start time and memory (a benchmark, not a test).

    sudo python bench/real_node.py              # 5 rounds on one control plane
    sudo python bench/real_node.py --quick      # 1 round

Each round starts the node (containerd, kubelet, kube-proxy; images already imported), runs one Job of
one pod to completion on it, reads the peak RSS of the node's own processes (VmHWM: containerd, kubelet,
kube-proxy; the containers' shims and pods are the workload, not the node), follows the log of a Job
that writes its own clock's time every 0.2 s the way ``krmfn apply --follow`` does (engine/follow.py,
in process), and stops it: the delay from a line's write to its ``log`` event is the event's time minus
the time the line holds (one machine, one clock). The first round
may import the images into containerd (once per image content); the table says which. Prints Markdown.
"""

from __future__ import annotations

import secrets
import statistics
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, cast

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
if TYPE_CHECKING:
    from bench import on_real_node
else:
    import on_real_node

from cluster.cluster import Cluster, create_namespace, wait_until  # noqa: E402
from cluster.node import REAL_NAMESPACE, RealNode  # noqa: E402
from lightkube.resources.batch_v1 import Job  # noqa: E402

MILESTONES = (
    ("containerd-up", "containerd answers"),
    ("node-ready", "Node Ready"),
    ("proxy-synced", "kube-proxy synced (node usable)"),
)


def one_job(cluster: Cluster, node: RealNode) -> float:
    """Seconds from creating a one-pod Job on the node to its completion."""
    client = cluster.client()
    namespace = create_namespace(client, f"bench-{secrets.token_hex(3)}", annotations=REAL_NAMESPACE)
    container = {"name": "main", "image": node.image("app"), "imagePullPolicy": "Never",
                 "command": ["sh", "-c", "echo done"]}  # fmt: skip
    pod = {"restartPolicy": "Never", "containers": [container]}
    job = cast(Job, Job.from_dict({"metadata": {"name": "once", "namespace": namespace},
                         "spec": {"backoffLimit": 0, "template": {"spec": pod}}}))  # fmt: skip
    started = time.monotonic()
    client.create(job)

    def done() -> bool:
        status = client.get(Job, "once", namespace=namespace).status
        return bool(status and status.succeeded)

    wait_until("the Job", done, 60, interval=0.05)
    return time.monotonic() - started


def follow_delays(cluster: Cluster, node: RealNode, lines: int = 20) -> list[float]:
    """Seconds from each of ``lines`` lines written by a container to krmfn's ``log`` event for it."""
    from krmfn.runner.cluster.kube import connect
    from krmfn.runner.engine.follow import Follower
    from krmfn.runner.events import Event, Log
    from krmfn.runner.plan import Key

    client = cluster.client()
    namespace = create_namespace(client, f"bench-{secrets.token_hex(3)}", annotations=REAL_NAMESPACE)
    script = f"for i in $(seq {lines}); do date +%s.%N; sleep 0.2; done"
    container = {"name": "main", "image": node.image("app"), "imagePullPolicy": "Never",
                 "command": ["sh", "-c", script]}  # fmt: skip
    pod = {"restartPolicy": "Never", "containers": [container]}
    job = cast(Job, Job.from_dict({"metadata": {"name": "follow", "namespace": namespace},
                         "spec": {"backoffLimit": 0, "template": {"spec": pod}}}))  # fmt: skip
    delays: list[float] = []

    def emit(event: Event) -> None:
        if isinstance(event, Log):
            delays.append(time.time() - float(event.line))

    def done() -> bool:
        status = client.get(Job, "follow", namespace=namespace).status
        return bool(status and status.succeeded)

    api = connect(str(cluster.kubeconfig), None, retry_budget=10.0)
    client.create(job)
    with Follower(api, emit).during(0, "bench", [Key("batch", "Job", namespace, "follow")]):
        wait_until("the Job", done, 60, interval=0.05)
    if len(delays) != lines:
        raise SystemExit(f"--follow showed {len(delays)} of the {lines} lines written")
    return delays


def main() -> int:
    rounds = on_real_node.rounds(__doc__ or "", "real_node.py", 5)
    if rounds is None:
        return 1
    rows: list[dict[str, float]] = []
    with on_real_node.control_plane("real-node") as (cluster, workdir):
        for _ in range(rounds):
            node = RealNode(cluster, workdir / "node-logs", on_wait=lambda m: print(m, file=sys.stderr))
            node.up()
            try:
                job = one_job(cluster, node)
                delays = follow_delays(cluster, node)
                rss = {name: kib / 1024 for name, kib in node.peak_rss_kib().items()}
            finally:
                node.down()
            start = node.timings["sweep"]
            row = {key: node.timings[key] for key, _ in MILESTONES}
            row |= {"imported": node.timings["images-imported"] - node.timings["containerd-up"], "job": job}
            row |= {"down": node.timings["down"], **{f"rss-{n}": mib for n, mib in rss.items()}}
            row |= {"follow-median": statistics.median(delays), "follow-max": max(delays)}
            rows.append(row)
            print(f"round {len(rows)}: {row} (lock and build {start:.2f}s)", file=sys.stderr)

    def cell(key: str, scale: float = 1.0) -> str:
        values = [r[key] * scale for r in rows]
        return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"

    print(f"### Real node start, median of {rounds} (min-max), seconds from containerd's start\n")
    print("| milestone | seconds |\n|---|---:|")
    for key, label in MILESTONES:
        print(f"| {label} | {cell(key)} |")
    print(f"| of which importing images into containerd | {cell('imported')} |")
    print(f"| one-pod Job, create to Complete | {cell('job')} |")
    print(f"| stop (pods drained, processes, host cleanup) | {cell('down')} |")
    median_ms = cell("follow-median", 1000)
    print(f"| `--follow`: a line written to its log event, median of 20 lines, ms | {median_ms} |")
    print(f"| `--follow`: the same, slowest of 20 lines (the first; target < 1 s) | {cell('follow-max')} |")
    print(f"\n### Real node peak RSS (VmHWM, MiB), median of {rounds} (min-max)\n")
    print("| process | MiB |\n|---|---:|")
    for name in ("containerd", "kubelet", "kube-proxy"):
        print(f"| {name} | {cell(f'rss-{name}')} |")
    totals = [r["rss-containerd"] + r["rss-kubelet"] for r in rows]
    print(f"| containerd + kubelet | {statistics.median(totals):.0f} (target < 300) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
