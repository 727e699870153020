"""Applying the objects of one step concurrently, in ordered groups. Pure scheduling: no cluster access.

    groups(items, alone) -> [[Item]]          consecutive objects of one kind rank; some objects alone
    in_order(tasks, workers, check) -> ...    at most ``workers`` requests in flight, results in order

Kind order matters only between ranks (plan.py orders a step by kind: Namespaces and CRDs before what
uses them, webhooks and Jobs last), so a group holds the consecutive objects of one rank, and a group
starts only when the previous one is done. Objects that need more than one request in a fixed order (a
Job: read, maybe wait, apply, record; a kind whose CRD the plan creates) are applied alone.

After the first failure no new request starts; the requests in flight finish (an HTTP request cannot be
taken back), so the caller can report what they did before raising the first error in item order.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from krmfn.runner.plan import Item, kind_rank

T = TypeVar("T")
DEFAULT_CONCURRENCY = 8
"""Requests in flight per group: bench/runner_gap.py measures 1, 4, 8 and 16 (BENCHMARKS.md)."""


def groups(items: Sequence[Item], alone: Callable[[Item], bool]) -> list[list[Item]]:
    """``items`` (in plan order) cut into runs of one kind rank; an item for which ``alone`` holds is a
    group of its own."""
    out: list[list[Item]] = []
    rank: int | None = None
    for item in items:
        if alone(item):
            out.append([item])
            rank = None
            continue
        current = kind_rank(item.kind)
        if out and rank == current:
            out[-1].append(item)
        else:
            out.append([item])
            rank = current
    return out


def in_order(
    tasks: Sequence[Callable[[], T]], workers: int, check: Callable[[], None]
) -> Iterator[tuple[int, Future[T]]]:
    """Runs ``tasks`` with at most ``workers`` in flight and yields ``(index, future)`` in task order,
    each done. ``check`` runs before each task starts (it raises to stop: a signal, the deadline); after
    a task fails, no further task starts, and the ones in flight are still yielded."""
    failed = threading.Event()

    def guarded(task: Callable[[], T]) -> Callable[[], T]:
        def run() -> T:
            try:
                return task()
            except BaseException:
                failed.set()
                raise

        return run

    pending: deque[tuple[int, Future[T]]] = deque()
    queue = iter(enumerate(tasks))
    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="krmfn-apply") as pool:

        def fill() -> None:
            while len(pending) < workers and not failed.is_set():
                nxt = next(queue, None)
                if nxt is None:
                    return
                check()
                pending.append((nxt[0], pool.submit(guarded(nxt[1]))))

        fill()
        while pending:
            index, future = pending.popleft()
            future.exception()  # waits for it
            yield index, future
            fill()
