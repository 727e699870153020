"""One object's server-side apply and what it did: created, configured or unchanged (compared with the
member as the run found it), or, under ``krmfn.dev/force``, deleted and re-created when the API server
refuses the change in place; each reported as an event and in the run's ``Result``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from krmfn.runner.cluster.api import Api, Resource, call
from krmfn.runner.engine.bookkeeping import Bookkeeper
from krmfn.runner.engine.health_wait import HealthWait
from krmfn.runner.engine.options import Options, Result
from krmfn.runner.engine.tracked import Tracked
from krmfn.runner.events import Apply, ApplyAction, Event
from krmfn.runner.plan import Item, Key, Step

UNCHANGED: frozenset[ApplyAction] = frozenset({"unchanged", "skipped"})
CHANGED: frozenset[ApplyAction] = frozenset({"created", "configured", "recreated"})


class Applier:
    def __init__(
        self, api: Api, options: Options, emit: Callable[[Event], None], book: Bookkeeper, waits: HealthWait
    ) -> None:
        self.api, self.options, self.emit = api, options, emit
        self._book, self._waits = book, waits
        self.result = Result(ok=False)
        """The current run's result (``Runner.run`` sets it): what was applied and what stayed unchanged."""

    def applied(self, step: Step, item: Item, res: Resource, live: dict[str, Any], created: bool) -> Tracked:
        if created:
            action: ApplyAction = "created"
        elif not changed(self._book.before.get(item.key), live):
            action = "unchanged"  # the server changed nothing the object says
        else:
            action = "configured"
        self.report_apply(step, item.key, action)
        return Tracked(item.key, res, live, unchanged=action == "unchanged")

    def force_recreate(
        self, step: Step, key: Key, res: Resource, obj: dict[str, Any], deadline: float, *, why: str
    ) -> Tracked:
        """``krmfn.dev/force`` on a change the API server refuses in place (any kind, as the Flux Operator
        does): delete the live object (foreground, with a UID precondition) and create it again."""
        live = call(key, self.api.get, res, key.name, key.namespace)
        detail = f"field is immutable; deleted and re-created (force): {why}"
        if self.options.dry_run or live is None:
            self.report_apply(step, key, "recreated", detail)
            return Tracked(key, res, live)
        self._waits.delete_and_wait(step, key, res, live, deadline)
        applied, _ = self.ssa(key, res, obj)
        self.report_apply(step, key, "recreated", detail)
        return Tracked(key, res, applied)

    def report_apply(self, step: Step, key: Key, action: ApplyAction, detail: str = "") -> None:
        if action in CHANGED:
            self.result.applied.append(str(key))
        elif action in UNCHANGED:
            self.result.unchanged.append(str(key))
        self.emit(Apply(step.index, step.name, str(key), action, detail, self.options.dry_run))

    def ssa(
        self, key: Key, res: Resource, obj: dict[str, Any], dry_run: bool = False
    ) -> tuple[dict[str, Any], bool]:
        return call(
            key, self.api.apply, res, obj, field_manager=self.options.field_manager,
            force=self.options.force_conflicts, dry_run=dry_run or self.options.dry_run,
        )  # fmt: skip


def changed(before: dict[str, Any] | None, after: dict[str, Any]) -> bool:
    """Whether an apply changed what the object says, as the server answered: everything but its status
    and the server's own metadata (resourceVersion, generation, managedFields...), so a ConfigMap's data
    counts as a Deployment's spec does. A server dry run answers with the object it would store, without
    a new resourceVersion, so the content is compared, not the version. ``before`` None: not known."""

    def view(obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj.get("metadata") or {}
        body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata", "status")}
        return {**body, "labels": meta.get("labels") or {}, "annotations": meta.get("annotations") or {}}

    return before is None or view(before) != view(after)
