"""Time to failure on the real node (tests/cluster/node.py): how long after a pod's status first carries a
reason that will not go away by itself `krmfn apply` fails with it (a benchmark, not a test).

    sudo python bench/fail_fast.py              # 3 rounds of each case on one control plane and node
    sudo python bench/fail_fast.py --quick      # 1 round

Each case is one `krmfn apply --wait` with a 5-minute step timeout, run in this process; a thread lists
the case's pods every 50 ms and notes when a container first shows the case's waiting reason (for
CrashLoopBackOff also a container terminated after a restart: a real kubelet shows most of a back-off so,
and its waiting reason only for moments, podtrouble.CRASH_LOOP; for RunContainerError also the failed
start's StartError). The figure is from the start of the last list that did not show it to `krmfn
apply` returning: the status appeared after that, so the figure includes up to one list's time and 50 ms
of the lister's own lag, which make it longer, never shorter (a list under load takes longer than 50 ms:
the moment the first list showing it returned can be after krmfn's own look). Target (issue 32): under
5 s. Prints Markdown.
"""

from __future__ import annotations

import contextlib
import io
import json
import secrets
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
if TYPE_CHECKING:
    from bench import on_real_node
else:
    import on_real_node

from cluster.cluster import Cluster, create_namespace  # noqa: E402
from cluster.node import REAL_NAMESPACE  # noqa: E402
from lightkube import Client  # noqa: E402
from lightkube.resources.core_v1 import Pod  # noqa: E402

from krmfn.runner.commands.cli import main as krmfn  # noqa: E402
from krmfn.yaml.io import dump_all_fast  # noqa: E402

Doc = dict[str, Any]
NOTES = {"krmfn.dev/step": "deploy", "krmfn.dev/step-index": "0", "krmfn.dev/step-timeout": "5m"}


def _container(image: str, script: str) -> Doc:
    return {"name": "main", "image": image, "imagePullPolicy": "Never", "command": ["sh", "-c", script]}


def _job(name: str, container: Doc) -> Doc:
    pod = {"restartPolicy": "Never", "containers": [container]}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "annotations": NOTES},
            "spec": {"backoffLimit": 0, "template": {"spec": pod}}}  # fmt: skip


def _deployment(name: str, container: Doc) -> Doc:
    labels = {"app": name}
    template = {"metadata": {"labels": labels}, "spec": {"containers": [container]}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "annotations": NOTES},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": template}}  # fmt: skip


def cases(app: str) -> list[tuple[str, str, Doc]]:
    """(label, waiting reason, object)."""
    config = _container(app, "env")
    config["envFrom"] = [{"configMapRef": {"name": "settings"}}]
    absent = {**_container(app, ""), "command": ["/krmfn-absent-command"]}
    return [
        ("Job, image absent (imagePullPolicy Never)", "ErrImageNeverPull",
         _job("absent", _container("krmfn.test/absent:never", "true"))),
        ("Job, ConfigMap missing", "CreateContainerConfigError", _job("config", config)),
        ("Deployment, container exits 1 at once", "CrashLoopBackOff",
         _deployment("crash", _container(app, "exit 1"))),
        ("Deployment, command absent", "RunContainerError", _deployment("start", absent)),
    ]  # fmt: skip


def first_seen(client: Client, namespace: str, reason: str, stop: threading.Event, seen: list[float]) -> None:
    last = time.monotonic()  # the start of the last list that did not show it (the namespace was empty)
    while not stop.is_set():
        now = time.monotonic()
        for pod in client.list(Pod, namespace=namespace):
            for status in (pod.status and pod.status.containerStatuses) or []:
                waiting = status.state.waiting if status.state is not None else None
                ended = status.state.terminated if status.state is not None else None
                backing_off = reason == "CrashLoopBackOff" and status.restartCount > 0 and ended is not None
                # A start that failed is recorded as a run that ended so, before or beside the reason.
                not_started = reason == "RunContainerError" and getattr(ended, "reason", "") == "StartError"
                if backing_off or not_started or (waiting is not None and waiting.reason == reason):
                    seen.append(last)
                    return
        last = now
        time.sleep(0.05)


def one(cluster: Cluster, workdir: Path, doc: Doc, reason: str) -> tuple[float, float, str]:
    """(seconds from the reason's first appearance to krmfn's failure, the run's seconds, the error)."""
    client = cluster.client()
    namespace = create_namespace(client, f"bench-{secrets.token_hex(3)}", annotations=REAL_NAMESPACE)
    path = workdir / f"{namespace}.yaml"
    path.write_text(dump_all_fast([doc]))
    stop, seen = threading.Event(), list[float]()
    watcher = threading.Thread(target=first_seen, args=(client, namespace, reason, stop, seen), daemon=True)
    watcher.start()
    out, err = io.StringIO(), io.StringIO()
    argv = ["apply", "-f", str(path), "-n", namespace, "--kubeconfig", str(cluster.kubeconfig), "-o", "json",
            "--applyset", "bench", "--wait"]  # fmt: skip
    started = time.monotonic()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = krmfn(argv)
    ended = time.monotonic()
    stop.set()
    watcher.join(5)
    events = [json.loads(line) for line in out.getvalue().splitlines() if line.startswith("{")]
    errors = [e for e in events if e.get("type") == "error"]
    message = errors[-1]["message"] if errors else err.getvalue()
    # A start that fails again after a restart is the same back-off as a crash loop (podtrouble.py).
    named = reason in message or (reason == "RunContainerError" and "StartError" in message)
    if code != 1 or not named or not seen:
        raise SystemExit(f"{reason}: exit {code}, reason seen: {bool(seen)}: {message}")
    if ended - seen[0] > 5:
        for event in events:
            print(f"  {event}", file=sys.stderr)
    return ended - seen[0], ended - started, message


def _cell(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def main() -> int:
    rounds = on_real_node.rounds(__doc__ or "", "fail_fast.py", 3)
    if rounds is None:
        return 1
    results: dict[str, list[tuple[float, float]]] = {}
    with (
        on_real_node.control_plane("fail-fast") as (cluster, workdir),
        on_real_node.node_of(cluster, workdir) as node,
    ):
        for _ in range(rounds):
            for label, reason, doc in cases(node.image("app")):
                after, total, message = one(cluster, workdir, doc, reason)
                results.setdefault(f"{label} | {reason}", []).append((after, total))
                print(
                    f"{label}: {after:.2f}s after {reason} ({total:.2f}s in all): {message}", file=sys.stderr
                )
    print(f"### Time to failure on the real node, median of {rounds} (min-max), seconds\n")
    print("| case | reason | reason seen to krmfn's failure | whole apply |\n|---|---|---:|---:|")
    for case, rows in results.items():
        print(f"| {case} | {_cell([r[0] for r in rows])} | {_cell([r[1] for r in rows])} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
