"""Typed events: everything the runner reports goes through one of these, printers turn them into text.

``to_dict`` gives the ``-o json`` form: ``{"type": "<event type>", ...fields}``, one object per line.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

ApplyAction = Literal["created", "configured", "unchanged", "recreated", "skipped", "deleted", "dry-run"]
PruneAction = Literal["deleted", "kept", "skipped", "dry-run"]
LockAction = Literal["waiting", "acquired", "taken-over"]
StepResult = Literal["healthy", "applied", "failed", "timeout", "interrupted"]


@dataclass(frozen=True)
class StepStart:
    step: int
    name: str
    objects: int
    timeout: float
    wait: bool
    type: str = "step-start"


@dataclass(frozen=True)
class Apply:
    step: int
    object: str
    action: ApplyAction
    detail: str = ""
    type: str = "apply"


@dataclass(frozen=True)
class Status:
    step: int
    object: str
    state: str
    message: str
    elapsed: float
    type: str = "status"


@dataclass(frozen=True)
class Wait:
    step: int
    objects: list[str]
    timeout: float
    type: str = "wait"


@dataclass(frozen=True)
class Prune:
    object: str
    action: PruneAction
    detail: str = ""
    type: str = "prune"


@dataclass(frozen=True)
class StepDone:
    step: int
    name: str
    result: StepResult
    elapsed: float
    type: str = "step-done"


@dataclass(frozen=True)
class Lock:
    """The inventory lock, when it is not simply free: waiting for another run, acquired after waiting,
    or taken over from a run that is gone (``detail`` says why)."""

    action: LockAction
    holder: str
    detail: str = ""
    type: str = "lock"


@dataclass(frozen=True)
class Error:
    message: str
    step: int | None = None
    object: str | None = None
    type: str = "error"


Event = StepStart | Apply | Status | Wait | Prune | StepDone | Lock | Error
EVENT_TYPES = (StepStart, Apply, Status, Wait, Prune, StepDone, Lock, Error)


def to_dict(event: Event) -> dict[str, Any]:
    data = asdict(event)
    kind = data.pop("type")
    return {"type": kind, **data}


def from_dict(data: dict[str, Any]) -> Event:
    """The inverse of ``to_dict`` (for tools that read ``-o json``)."""
    for cls in EVENT_TYPES:
        if cls.type == data.get("type"):
            names = {f.name for f in fields(cls)}
            return cls(**{k: v for k, v in data.items() if k in names})
    raise ValueError(f"unknown event type {data.get('type')!r}")
