"""What the real-node benchmarks share (bench/real_node.py, fail_fast.py, real_staged.py): their command
line, the root check, and a control plane (with a real node beside it) that is always stopped."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from cluster.cluster import Cluster, cache_dir  # noqa: E402
from cluster.node import RealNode  # noqa: E402


def rounds(doc: str, script: str, default: int) -> int | None:
    """The rounds asked for (``--rounds N``, ``--quick``: 1), or None after a line on stderr when this
    process cannot run the node (it runs containerd and the kubelet as root)."""
    parser = argparse.ArgumentParser(description=doc.split("\n", maxsplit=1)[0])
    parser.add_argument("--rounds", type=int, default=default)
    parser.add_argument("--quick", action="store_true", help="one round (smoke)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print(f"error: the real node runs as root: sudo python bench/{script}", file=sys.stderr)
        return None
    return 1 if args.quick else int(args.rounds)


@contextlib.contextmanager
def control_plane(name: str) -> Iterator[tuple[Cluster, Path]]:
    """A test control plane in a fresh work directory (its logs under the cache's bench-logs/NAME)."""
    workdir = Path(tempfile.mkdtemp(prefix=f"krmfn-bench-{name}-"))
    cluster = Cluster(workdir, log_dir=cache_dir() / "bench-logs" / name)
    cluster.up()
    try:
        yield cluster, workdir
    finally:
        cluster.down()


@contextlib.contextmanager
def node_of(cluster: Cluster, workdir: Path) -> Iterator[RealNode]:
    """The real node joined to ``cluster``, Ready, and stopped whatever happens."""
    node = RealNode(cluster, workdir / "node-logs", on_wait=lambda m: print(m, file=sys.stderr))
    node.up()
    try:
        yield node
    finally:
        node.down()
