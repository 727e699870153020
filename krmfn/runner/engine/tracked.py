"""An object of the current step as its apply hands it to the wait (``Tracked``), and the stop check every
part of a run calls between requests."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from krmfn.runner.cluster.api import Resource
from krmfn.runner.engine import joblogs, jobs
from krmfn.runner.health import settle
from krmfn.runner.health.status import Health
from krmfn.runner.plan import Key

Waiting = Callable[[], list[tuple[str, str]]]
"""What a step still waits for (object, why), computed only when an error needs it."""


class CheckStop(Protocol):
    """The run's stop check (``Runner._check_stop``): raises when a signal arrived or the run's deadline
    passed; ``waiting`` says what a step still waited for, computed only when the error needs it."""

    def __call__(self, waiting: Waiting | None = None) -> None: ...


@dataclass
class Tracked:
    """An object of the current step and what the wait starts from."""

    key: Key
    res: Resource
    live: dict[str, Any] | None
    settled: Health | None = None
    """Health decided without the cluster (a Job deleted by its TTL, a Job rendered suspended)."""
    problems: list[jobs.PodProblem] = field(default_factory=list)
    """A Job's pod failures seen while waiting: kept, since the pods may be gone when the Job fails."""
    next_poll: float = 0.0
    """When the Job's pods are listed next (the engine clock's time)."""
    logs: dict[tuple[str, str, bool], str | None] = field(default_factory=dict)
    """Log text read while waiting, by (pod, container, previous): the pods may be gone at the failure."""
    failure: tuple[Health, list[joblogs.ContainerLog]] | None = None
    """A failed Job's health with its pods' failures and log lines, looked up once."""
    settler: settle.Settler | None = None
    """A workload's settle state (settle.py): its pods' restarts and readiness during the wait."""
    unchanged: bool = False
    """This run's apply changed nothing of it: a workload may have held already (settle.py, rule 4)."""
    trouble: Health | None = None
    """A failure its pods show before its status does (a fail-fast reason, the restart budget spent)."""
