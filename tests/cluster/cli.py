"""A long-lived test cluster for manual use and benchmarks: `tests/cluster/up`, `down` and `status`.

Its state lives in $KRMFN_CLUSTER_DIR, by default $KRMFN_CACHE/cluster/ (kubeconfig, state.json,
logs/); one cluster per directory. `up` prints the kubeconfig path on stdout, so
`export KUBECONFIG=$(tests/cluster/up)` works; everything else goes to stderr. `up --with flux-operator`
also starts the Flux Operator (see Cluster.start_flux_operator).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sys
import time
from pathlib import Path

from .cluster import FLUX_OPERATOR, OPTIONAL, STOP_WAVES, Cluster, ClusterError, cache_dir

WORKDIR = Path(os.environ.get("KRMFN_CLUSTER_DIR") or cache_dir() / "cluster")
STATE = WORKDIR / "state.json"


def _alive(pid: int) -> bool:
    # A zombie counts as stopped: the components are reparented to PID 1, which may reap them late.
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _running() -> dict[str, int]:
    """The recorded components that are still running (same pid and same binary), by name."""
    if not STATE.exists():
        return {}
    state = json.loads(STATE.read_text())
    alive = {}
    for name, pid in state["pids"].items():
        try:
            exe = os.readlink(f"/proc/{pid}/exe")
        except OSError:
            continue
        if exe == state["exes"][name] and _alive(pid):  # not a recycled pid
            alive[name] = pid
    return alive


def up(extras: tuple[str, ...] = ()) -> int:
    running = _running()
    if running and len(running) == len(json.loads(STATE.read_text())["pids"]):
        missing = [name for name in extras if name not in running]
        if missing:
            print(
                f"error: a cluster is running in {WORKDIR} without {', '.join(missing)}; "
                "stop it first (tests/cluster/down)",
                file=sys.stderr,
            )
            return 1
        print(f"already running: {', '.join(running)}", file=sys.stderr)
        print(WORKDIR / "kubeconfig")
        return 0
    down()  # leftovers of a half-dead cluster
    shutil.rmtree(WORKDIR, ignore_errors=True)
    WORKDIR.mkdir(parents=True)
    cluster = Cluster(WORKDIR, die_with_parent=False)
    try:
        cluster.up()
        if FLUX_OPERATOR in extras:
            cluster.start_flux_operator()
    except ClusterError as e:
        cluster.down()
        print(f"error: {e}", file=sys.stderr)
        return 1
    exes = {name: os.readlink(f"/proc/{pid}/exe") for name, pid in cluster.pids().items()}
    state = {"pids": cluster.pids(), "exes": exes, "server": cluster.server, "timings": cluster.timings}
    STATE.write_text(json.dumps(state, indent=2))
    print(f"ready in {cluster.timings['ready']:.2f}s: {cluster.timings}", file=sys.stderr)
    print(f"logs in {cluster.log_dir}", file=sys.stderr)
    print(cluster.kubeconfig)
    return 0


def down() -> int:
    running = _running()
    for wave, grace in STOP_WAVES:
        pids = [pid for name, pid in running.items() if name in wave]
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while (pids := [p for p in pids if _alive(p)]) and time.monotonic() < deadline:
            time.sleep(0.05)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    if STATE.exists():
        STATE.unlink()
        shutil.rmtree(WORKDIR / "etcd", ignore_errors=True)
        print(f"stopped; logs kept in {WORKDIR / 'logs'}", file=sys.stderr)
    return 0


def status() -> int:
    running = _running()
    if not running:
        print("not running", file=sys.stderr)
        return 1
    total = 0
    for name, pid in running.items():
        fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
        rss, peak = (int(fields[k].split()[0]) // 1024 for k in ("VmRSS", "VmHWM"))
        total += peak
        print(f"{name:24} pid {pid:7}  RSS {rss:5} MiB  peak {peak:5} MiB", file=sys.stderr)
    print(f"{'total peak':24} {'':11}  {'':15}{total:5} MiB", file=sys.stderr)
    print(WORKDIR / "kubeconfig")
    return 0


USAGE = f"usage: python -m cluster.cli {{up [--with {'|'.join(OPTIONAL)}]...,down,status}}"


def main(argv: list[str]) -> int:
    commands = {"up": up, "down": down, "status": status}
    if not argv or argv[0] not in commands:
        print(USAGE, file=sys.stderr)
        return 2
    command, rest = argv[0], argv[1:]
    extras: list[str] = []
    while rest and command == "up" and rest[0] == "--with" and len(rest) > 1 and rest[1] in OPTIONAL:
        extras.append(rest[1])
        rest = rest[2:]
    if rest:
        print(USAGE, file=sys.stderr)
        return 2
    return up(tuple(extras)) if command == "up" else commands[command]()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
