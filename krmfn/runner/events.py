"""Typed events: everything the runner reports goes through one of these, printers turn them into text.

``to_dict`` gives the ``-o json`` form: ``{"type": "<event type>", ...fields}``, one object per line, the
fields in camelCase. Every event about a step names it the same way: ``step`` (its 0-based position in
the plan) and ``stepName``. Under ``--dry-run=server`` the actions are what would happen, with
``dryRun: true``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

ApplyAction = Literal["created", "configured", "unchanged", "recreated", "skipped", "deleted"]
PruneAction = Literal["deleted", "kept", "skipped"]
LockAction = Literal["waiting", "acquired", "taken-over"]
StepResult = Literal["healthy", "applied", "deleted", "failed", "timeout", "interrupted"]
DeleteAction = Literal["deleting", "deleted", "kept", "gone"]


@dataclass(frozen=True)
class Inventory:
    """The run's inventory, printed before anything else: which ApplySet prune works from, and why."""

    name: str
    namespace: str
    source: str
    prune: bool
    type: str = "inventory"


@dataclass(frozen=True)
class StepStart:
    step: int
    step_name: str
    objects: int
    timeout: float
    wait: bool
    type: str = "step-start"


@dataclass(frozen=True)
class Apply:
    step: int
    step_name: str
    object: str
    action: ApplyAction
    detail: str = ""
    dry_run: bool = False
    type: str = "apply"


@dataclass(frozen=True)
class Status:
    step: int
    step_name: str
    object: str
    state: str
    message: str
    elapsed: float
    logs: list[dict[str, Any]] | None = field(default=None, metadata={"omit_none": True})
    """A failed Job's last container log lines (joblogs.py): ``[{pod, container, previous, lines}]``;
    only on the event that reports the failure."""
    type: str = "status"


@dataclass(frozen=True)
class Wait:
    step: int
    step_name: str
    objects: list[str]
    timeout: float
    type: str = "wait"


@dataclass(frozen=True)
class Log:
    """``apply --follow``: one line a container of a step's Job wrote (follow.py), cut and bounded; the
    text printers escape it."""

    step: int
    step_name: str
    object: str
    pod: str
    container: str
    line: str
    type: str = "log"


@dataclass(frozen=True)
class Prune:
    object: str
    action: PruneAction
    detail: str = ""
    dry_run: bool = False
    type: str = "prune"


@dataclass(frozen=True)
class Delete:
    """``krmfn delete``: a member (or the inventory itself) asked to go (``deleting``), gone
    (``deleted``), found gone already (``gone``), or left in place (``kept``, ``detail`` says why).
    ``step`` is None for what is not in a step: the inventory, and what is kept."""

    object: str
    action: DeleteAction
    detail: str = ""
    step: int | None = None
    step_name: str | None = None
    dry_run: bool = False
    type: str = "delete"


@dataclass(frozen=True)
class StepDone:
    step: int
    step_name: str
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
    step_name: str | None = None
    object: str | None = None
    type: str = "error"


Event = Inventory | StepStart | Apply | Status | Wait | Log | Prune | Delete | StepDone | Lock | Error
EVENT_TYPES = (Inventory, StepStart, Apply, Status, Wait, Log, Prune, Delete, StepDone, Lock, Error)


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def to_dict(event: Event) -> dict[str, Any]:
    data = asdict(event)
    kind = data.pop("type")
    for spec in fields(event):
        if spec.metadata.get("omit_none") and data[spec.name] is None:
            del data[spec.name]
    return {"type": kind, **{camel(k): v for k, v in data.items()}}


def from_dict(data: dict[str, Any]) -> Event:
    """The inverse of ``to_dict`` (for tools that read ``-o json``)."""
    for cls in EVENT_TYPES:
        if cls.type == data.get("type"):
            names = {camel(f.name): f.name for f in fields(cls)}
            return cls(**{names[k]: v for k, v in data.items() if k in names})
    raise ValueError(f"unknown event type {data.get('type')!r}")
