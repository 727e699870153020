"""What a run is given and gives back: its ``Options``, the injected ``Clock`` (the real one, or a test's)
and the ``Result`` it returns."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol

import krmfn
from krmfn.errors import RunnerError
from krmfn.net.budget import Budget
from krmfn.runner.engine import joblogs
from krmfn.runner.engine.parallel import DEFAULT_CONCURRENCY
from krmfn.runner.health.healthexprs import HealthChecks
from krmfn.runner.inventory.lock import LEASE

POLL = 0.2  # how often a wait looks at the stop flag and the deadline when no event arrives


class Clock(Protocol):
    def monotonic(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


def begin(clock: Clock, budget: Budget, timeout: float) -> tuple[float, float | None]:
    """A run starts: its start on ``clock`` and its deadline (None without ``--timeout``), which the
    budget's requests share from now on."""
    started = clock.monotonic()
    budget.start(timeout)
    return started, started + timeout if timeout > 0 else None


@dataclass
class Options:
    field_manager: str = "krmfn"
    force_conflicts: bool = False
    dry_run: bool = False
    """Server-side dry run: every request with dryRun=All, no waiting, no inventory writes."""
    applyset: str = "krmfn"
    applyset_source: str = "--applyset"
    """Where the inventory's name came from (identity.py), for the start line."""
    adopt: bool = False
    """Take over an inventory whose members this render does not have (they are pruned)."""
    allow_empty: bool = False
    """An empty plan is meant (``--allow-empty``): with prune on, every member is deleted."""
    prune_namespaces: bool = False
    prune_crds: bool = False
    namespace: str = ""
    """Namespace of the ApplySet parent; the kubeconfig's namespace when empty."""
    prune: bool = True
    version: str = field(default_factory=lambda: str(krmfn.__version__))
    """krmfn's version, written into the inventory's tooling annotation."""
    lock_wait: float = 0.0
    """Seconds to wait for another run's inventory lock; 0: fail at once."""
    lock_lease: float = LEASE
    """Seconds the inventory lock lasts unless renewed (every quarter of it)."""
    timeout: float = 0.0
    """Seconds the whole run may take (``--timeout``); 0: no bound but the steps' own timeouts."""
    health_checks: HealthChecks | None = None
    """Health check expressions by kind (``--health-checks`` and the stream's, healthexprs.py)."""
    log_lines: int = joblogs.DEFAULT_LINES
    """Last log lines of each failed container of a failed Job, in the error (``--log-lines``; 0: none)."""
    concurrency: int = DEFAULT_CONCURRENCY
    """Apply requests in flight within a group of one kind rank (parallel.py); 1: one at a time."""
    follow: bool = False
    """Stream the logs of each waited step's Job pods as ``Log`` events (``--follow``, follow.py)."""


@dataclass
class Result:
    ok: bool
    error: RunnerError | None = None
    failed_step: str | None = None
    """The failed step's name; ``failed_step_index`` its position in the plan."""
    failed_step_index: int | None = None
    steps_done: int = 0
    applied: list[str] = field(default_factory=list)
    """Objects the run created, changed or re-created (would, under a server dry run)."""
    unchanged: list[str] = field(default_factory=list)
    """Objects the server did not change (and completed Jobs not run again)."""
    pruned: list[str] = field(default_factory=list)
    timed_out: list[tuple[str, str]] = field(default_factory=list)
    """(step, error) of the steps that timed out with ``onTimeout: continue``: the run went on."""
    elapsed: float = 0.0
    """Seconds from the start of the run to its end."""
    on_delete: list[str] = field(default_factory=list)
    """The on-delete steps of the plan, which apply never applies (the summary names them)."""
