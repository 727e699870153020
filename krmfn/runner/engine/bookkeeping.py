"""The ApplySet parent through a run: opened (under its lock, its kinds and namespaces widened first),
the members it had read and another app's inventory refused, each Job's outcome recorded as soon as it is
known, written, and closed at the end (narrowed to what remains, the run record ended, the lock released).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from krmfn.runner.cluster.api import Api, call
from krmfn.runner.engine import jobs
from krmfn.runner.engine.options import Clock, Options
from krmfn.runner.engine.tracked import CheckStop
from krmfn.runner.errors import InventoryError
from krmfn.runner.events import Event
from krmfn.runner.events import Inventory as InventoryEvent
from krmfn.runner.inventory.applyset import JobRecord, Outcome, Parent
from krmfn.runner.inventory.inventory import Inventory
from krmfn.runner.inventory.members import foreign_inventory, list_members
from krmfn.runner.inventory.runs import RunLog
from krmfn.runner.plan import Key, Plan, key_of


class Bookkeeper:
    def __init__(
        self, api: Api, options: Options, emit: Callable[[Event], None], clock: Clock, runlog: RunLog, *,
        check_stop: CheckStop, doing: Callable[[str], None],
    ) -> None:  # fmt: skip
        self.api, self.options, self.emit, self.clock = api, options, emit, clock
        self._runlog, self._check_stop, self._doing = runlog, check_stop, doing
        self.inventory: Inventory | None = None
        self.parent: Parent | None = None
        self.before: dict[Key, dict[str, Any]] = {}
        """Members of the ApplySet as they were when the run started: what an apply is compared with."""
        self._recorded: tuple[set[str], set[str]] = (set(), set())
        """The kinds and namespaces the parent listed before this run widened them."""

    def open(self, plan: Plan) -> Parent:
        self._doing("reading the inventory")
        namespace = self.options.namespace or self.api.default_namespace
        self.emit(
            InventoryEvent(self.options.applyset, namespace, self.options.applyset_source, self.options.prune)
        )
        self.inventory = inventory = Inventory(
            self.api, self.options.applyset, namespace,
            field_manager=self.options.field_manager, version=self.options.version, call=call,
            emit=self.emit, check_stop=self._check_stop, sleep=self.clock.sleep,
            monotonic=self.clock.monotonic, lease=self.options.lock_lease, renew=self.options.lock_lease / 4,
        )  # fmt: skip
        if self.options.dry_run:
            self.parent = inventory.read()
            self._recorded = (set(self.parent.group_kinds), set(self.parent.namespaces))
            return self.parent

        def widen(parent: Parent) -> None:
            self._recorded = (set(parent.group_kinds), set(parent.namespaces))
            # Superset first (the KEP's rule): if this run dies half-way, the next prune still finds
            # every kind and namespace that may hold members.
            parent.group_kinds |= {it.key.group_kind for it in plan.items}
            parent.namespaces |= {it.key.namespace for it in plan.items if it.key.namespace}
            parent.on_delete = list(dict.fromkeys([*parent.on_delete, *(s.name for s in plan.on_delete)]))
            self._runlog.start(parent, [str(it.key) for it in plan.items])

        self._doing("waiting for the inventory lock")
        # Members are applied only once the parent lists their kinds and this run holds the lock.
        self.parent = inventory.acquire(self.options.lock_wait, widen)
        return self.parent

    def check_adoption(self, plan: Plan, parent: Parent) -> None:
        """Reads the members the inventory had before this run (what applies are compared with), and
        refuses to adopt another app's inventory: with prune on, members this render never had would be
        deleted, so an inventory whose members include none of this render's is not taken over unless
        ``--adopt`` says so. Namespaces and CRDs do not count: two apps often render the same one."""
        self._doing("reading the inventory's members")
        kinds, namespaces = self._recorded
        members = self._members(parent, kinds, namespaces | {parent.namespace})
        self.before = {key_of(obj): obj for obj in members}
        if not self.options.prune or self.options.adopt or (self.options.allow_empty and not plan.items):
            return
        foreign = foreign_inventory(
            parent, self.options.applyset_source, {it.key for it in plan.items}, self.before
        )
        if foreign is not None:
            raise InventoryError(f"{foreign}; nothing was applied")

    def _members(self, parent: Parent, kinds: set[str], namespaces: set[str]) -> list[dict[str, Any]]:
        listed = list_members(self.api, parent, kinds, namespaces, call=call, check_stop=self._check_stop)
        return [obj for obj, _ in listed]

    def _inventory_of(self) -> Inventory:
        assert self.inventory is not None, "the parent is opened before anything is written"
        return self.inventory

    def write(self, parent: Parent) -> None:
        if not self.options.dry_run:
            self._inventory_of().write(parent)

    def flush(self) -> None:
        if self.inventory is not None:
            self.inventory.flush()

    def record(self, ref: str, spec_hash: str, outcome: Outcome) -> None:
        if self.parent is not None:
            self.parent.jobs[ref] = JobRecord(spec_hash, outcome)

    def close(self, plan: Plan, parent: Parent, remaining: list[Key] | None) -> None:
        """The end of a run that did not fail: the parent keeps the records of the Jobs still rendered and,
        after a prune (``remaining``: the members not rendered that stay), lists only what remains."""
        current = {jobs.job_ref(it.key) for it in plan.items if jobs.is_job(it.key)}
        parent.jobs = {k: v for k, v in parent.jobs.items() if k in current}
        if remaining is not None:
            # Narrow to what members remain (the KEP's superset rule): without a prune the widened
            # sets stay, so a later prune still finds what this run left in place.
            members = [it.key for it in plan.items] + remaining
            parent.group_kinds = {key.group_kind for key in members}
            parent.namespaces = {key.namespace for key in members if key.namespace}
        parent.on_delete = [step.name for step in plan.on_delete]  # what delete must be given
        self._doing("recording the inventory")
        self._runlog.end(None, None)
        self._inventory_of().close(parent)

    def abandon(self) -> None:
        """Releases the lock after a failure, recording how the run ended; nothing after close()."""
        if self.inventory is not None:
            self.inventory.abandon(self.parent if self._runlog.record is not None else None)

    def check(self) -> None:
        """Fails the run if its lock was lost (inventory.py)."""
        if self.inventory is not None:
            self.inventory.check()
