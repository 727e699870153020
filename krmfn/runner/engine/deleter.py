"""The teardown of ``krmfn delete``: an app torn down in reverse step order, each step gone before the
next, then its inventory.

What is deleted is what the app's inventory lists (its members as labelled, in the kinds and namespaces
the parent records), never anything else; the order is delete.py's, from the step annotations the members
were applied with. Each delete carries the UID of the object listed and, but for Namespaces and CRDs,
foreground propagation, so a Deployment is gone only once its ReplicaSets and pods are; a step's objects
are then followed by a watch until the API server says they are gone (their finalizers honoured: one that
holds makes the step time out, the inventory still listing what is left). The run holds the inventory's
lock from before its first delete and records itself on the parent, as apply does; the parent is deleted
last (and with it the lock and the record), unless members kept for want of ``--prune-namespaces`` or
``--prune-crds`` keep it, narrowed to them. An inventory that does not exist is nothing to delete: exit 0,
as ``kubectl delete --ignore-not-found``, so a teardown script can run twice.
"""

from __future__ import annotations

import queue
from collections.abc import Callable
from dataclasses import dataclass, field

import krmfn
from krmfn.errors import RunnerError
from krmfn.net.budget import Budget
from krmfn.runner.cluster.api import Api, ApiStatusError, Resource, as_object_error, call
from krmfn.runner.engine.delete import (
    DeleteInterrupted,
    DeleteTimeout,
    Member,
    Teardown,
    teardown,
    waiting_for,
)
from krmfn.runner.engine.delete_steps import DeleteStepsRunner, steps_to_run
from krmfn.runner.engine.options import POLL, Clock, SystemClock, begin
from krmfn.runner.engine.options import Options as ApplyOptions
from krmfn.runner.engine.waiter import Watched, Watcher
from krmfn.runner.errors import Interrupted, RunTimeout
from krmfn.runner.events import Delete, Error, Event, Status, StepDone, StepStart, Wait
from krmfn.runner.inventory.applyset import Parent
from krmfn.runner.inventory.inventory import Inventory
from krmfn.runner.inventory.lock import LEASE
from krmfn.runner.inventory.members import list_members
from krmfn.runner.inventory.prune import GUARDED, uid_of
from krmfn.runner.inventory.runs import RunLog
from krmfn.runner.plan import Key, Step, key_of


@dataclass
class DeleteOptions:
    name: str
    namespace: str
    dry_run: bool = False
    prune_namespaces: bool = False
    prune_crds: bool = False
    step_timeout: float = 300.0
    timeout: float = 0.0
    lock_wait: float = 0.0
    lock_lease: float = LEASE
    field_manager: str = "krmfn"
    version: str = field(default_factory=lambda: str(krmfn.__version__))
    on_delete: list[Step] | None = None
    """The render's on-delete steps (delete_steps.py); None: no render given."""
    skip_delete_steps: bool = False
    force: bool = False
    """Go on with the teardown when an on-delete step fails."""
    follow: bool = False
    """Stream the on-delete steps' Job logs while they run (``--follow``, engine/follow.py)."""


@dataclass
class DeleteResult:
    ok: bool
    error: RunnerError | None = None
    absent: bool = False
    """There was no inventory: nothing to delete."""
    inventory: str = ""
    """What became of the inventory: ``deleted``, ``kept`` (members kept hold it), ``would delete``."""
    deleted: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    steps_done: int = 0
    failed_step: str | None = None
    failed_step_index: int | None = None
    elapsed: float = 0.0
    on_delete: list[tuple[str, str]] = field(default_factory=list)
    """(step, result) of the on-delete steps run before the teardown."""
    went_on: str | None = None
    """``--force``: the error of the on-delete step that failed, the teardown gone on past it."""


class Deleter:
    """The teardown of one app, reported as events through ``emit``; the cluster and clock injected."""

    def __init__(
        self, api: Api, options: DeleteOptions, emit: Callable[[Event], None], clock: Clock | None = None,
        budget: Budget | None = None,
    ) -> None:  # fmt: skip
        self.api, self.options = api, options
        self.clock = clock or SystemClock()
        self.budget = budget or Budget()
        self.budget.on_stop = self._stopped
        self._runlog = RunLog()
        self.emit = self._runlog.observing(emit)
        self._signal: int | None = None
        self._deadline: float | None = None
        self._during = "start-up"
        self._step: tuple[int, str] | None = None
        self._inventory: Inventory | None = None
        self._parent: Parent | None = None
        self._resources: dict[Key, Resource] = {}

    def request_stop(self, signum: int) -> None:
        """From a signal handler: only attributes are assigned."""
        self._signal = signum
        self.budget.stop(signum)

    def run(self) -> DeleteResult:
        result = DeleteResult(ok=False)
        started, self._deadline = begin(self.clock, self.budget, self.options.timeout)
        try:
            self._runlog.ends(
                lambda: self._run(result),
                failed_step=lambda: self._step[1] if self._step else None,
                during=lambda: self._during,
                release=self._release,
            )
            result.ok = True
        except RunnerError as err:
            result.error = err
            step = self._step
            self.emit(Error(str(err), step[0] if step else None, step[1] if step else None,
                            getattr(err, "ref", None)))  # fmt: skip
            if step is not None:
                result.failed_step_index, result.failed_step = step
        result.elapsed = self.clock.monotonic() - started
        return result

    def _release(self) -> None:
        if self._inventory is not None:
            self._inventory.abandon(self._parent if self._runlog.record is not None else None)

    # --- the sequence ------------------------------------------------------------------------------------

    def _run(self, result: DeleteResult) -> None:
        self._check_stop()
        o = self.options
        self._during = "reading the inventory"
        inventory = Inventory(
            self.api, o.name, o.namespace, field_manager=o.field_manager, version=o.version, call=call,
            emit=self.emit, check_stop=self._check_stop, sleep=self.clock.sleep,
            monotonic=self.clock.monotonic, lease=o.lock_lease, renew=o.lock_lease / 4,
        )  # fmt: skip
        parent = inventory.read()
        if not parent.exists:
            result.absent = True
            return
        steps = steps_to_run(parent, o.on_delete, o.skip_delete_steps)  # refused before the lock is taken
        if o.dry_run:
            self._dry_run(parent, steps, result)
            return

        def start(found: Parent) -> None:
            last_plan = found.last_plan  # what the last apply planned stays what status compares with
            self._runlog.start(found, [])
            found.last_plan = last_plan
            if self._runlog.record is not None:
                self._runlog.record.command = "delete"

        self._during = "waiting for the inventory lock"
        self._inventory = inventory
        self._parent = parent = inventory.acquire(o.lock_wait, start)
        first = self._on_delete(steps, parent, result)
        plan = self._teardown(parent)  # listed under the lock: what no other run can change meanwhile
        self._report_kept(plan, result)
        for position, step in enumerate(plan.steps, first):
            self._step = (position, step.name)
            self._delete_step(position, step.name, step.groups, result)
            result.steps_done += 1
        self._step = None
        if plan.inventory_stays:
            self._during = "recording the inventory"
            holding = [k.key for k in plan.kept if k.holds_inventory]
            parent.group_kinds = {key.group_kind for key in holding}
            parent.namespaces = {key.namespace for key in holding if key.namespace}
            parent.jobs = {}
            parent.on_delete = []  # done with (or skipped): deleting what was kept needs no render
            self._runlog.end(None, None)
            inventory.close(parent)
            self._inventory = None
            result.inventory = "kept"
            flags = sorted({GUARDED[(k.group, k.kind)][1] for k in holding if (k.group, k.kind) in GUARDED})
            self.emit(Delete(str(inventory.key), "kept", f"it lists the {len(holding)} member(s) kept: "
                             f"pass {' and '.join(flags)} to delete them"))  # fmt: skip
            return
        self._during = "deleting the inventory"
        live = inventory.end_for_delete()
        self._inventory = None  # gone with its lock: nothing more to write or release
        if live is not None:
            deadline = self.clock.monotonic() + o.step_timeout
            self._delete_group(None, "", [live], result, deadline=deadline, recorded=False)
        result.inventory = "deleted"
        if plan.after_parent:
            self._step = (first + len(plan.steps), "namespace")
            self._delete_step(first + len(plan.steps), "namespace", [plan.after_parent], result)
            self._step = None

    def _on_delete(self, steps: list[Step], parent: Parent, result: DeleteResult) -> int:
        """The on-delete steps, each applied and waited for (a server dry run under ``--dry-run``);
        returns how many, the teardown's first step position. A failure stops the delete unless
        ``--force``."""
        if not steps:
            return 0
        o = self.options
        runner = DeleteStepsRunner(
            self.api, ApplyOptions(field_manager=o.field_manager, dry_run=o.dry_run, version=o.version,
                                   follow=o.follow),
            self.emit, clock=self.clock, budget=self.budget, parent=parent, inventory=self._inventory,
            check_stop=self._check_stop, deadline=self._deadline,
        )  # fmt: skip

        def starting(step: Step) -> None:
            self._step, self._during = (step.index, step.name), f"on-delete step {step.name}"

        result.went_on = runner.apply_all(steps, force=o.force, starting=starting, done=result.on_delete)
        result.steps_done += len(steps)
        self._step = None
        return len(steps)

    def _teardown(self, parent: Parent) -> Teardown:
        self._during = "reading the inventory's members"
        listed = list_members(self.api, parent, parent.group_kinds, parent.namespaces | {parent.namespace},
                              call=call, check_stop=self._check_stop)  # fmt: skip
        for obj, res in listed:
            self._resources[key_of(obj)] = res
        return teardown([obj for obj, _ in listed], parent, self.options)

    def _report_kept(self, plan: Teardown, result: DeleteResult) -> None:
        for kept in plan.kept:
            self.emit(Delete(str(kept.key), "kept", kept.why, dry_run=self.options.dry_run))
            result.kept.append(str(kept.key))

    def _dry_run(self, parent: Parent, steps: list[Step], result: DeleteResult) -> None:
        first = self._on_delete(steps, parent, result)  # listed first, as they would run
        plan = self._teardown(parent)
        self._report_kept(plan, result)
        for position, step in enumerate(plan.steps, first):
            for obj in step.members:
                self.emit(
                    Delete(str(key_of(obj)), "deleted", step=position, step_name=step.name, dry_run=True)
                )
                result.deleted.append(str(key_of(obj)))
        key = str(Key("", "Secret", parent.namespace, parent.name))
        if plan.inventory_stays:
            self.emit(Delete(key, "kept", "it would list the members kept", dry_run=True))
            result.inventory = "kept"
            return
        self.emit(Delete(key, "deleted", "the inventory", dry_run=True))
        result.inventory = "would delete"
        for obj in plan.after_parent:
            self.emit(Delete(str(key_of(obj)), "deleted", "holds the inventory: deleted after it",
                             step=first + len(plan.steps), step_name="namespace", dry_run=True))  # fmt: skip
            result.deleted.append(str(key_of(obj)))
        result.steps_done = first + len(plan.steps) + bool(plan.after_parent)

    # --- one step ----------------------------------------------------------------------------------------

    def _delete_step(
        self, position: int, name: str, groups: list[list[Member]], result: DeleteResult
    ) -> None:
        started = self.clock.monotonic()
        deadline = started + self.options.step_timeout
        if self._deadline is not None:
            deadline = min(deadline, self._deadline)
        count = sum(len(g) for g in groups)
        self.emit(StepStart(position, name, count, self.options.step_timeout, True))
        self._during = f"step {name}"
        try:
            for group in groups:
                self._delete_group(position, name, group, result, deadline=deadline)
        except (DeleteTimeout, RunTimeout):
            self.emit(StepDone(position, name, "timeout", self.clock.monotonic() - started))
            raise
        except Interrupted:
            self.emit(StepDone(position, name, "interrupted", self.clock.monotonic() - started))
            raise
        except RunnerError:
            self.emit(StepDone(position, name, "failed", self.clock.monotonic() - started))
            raise
        self.emit(StepDone(position, name, "deleted", self.clock.monotonic() - started))

    def _delete_group(
        self, position: int | None, name: str, group: list[Member], result: DeleteResult, *, deadline: float,
        recorded: bool = True,
    ) -> None:  # fmt: skip
        """Deletes ``group``'s objects, then waits until each is gone (or replaced by a newer one).
        ``position`` None: the inventory itself, which is not a step."""
        pending: dict[Key, tuple[Resource, str]] = {}
        for obj in group:
            self._check_stop()
            key = key_of(obj)
            res = self._resources.get(key) or self.api.resource(str(obj.get("apiVersion")), key.kind)
            uid = uid_of(key, obj)
            # Foreground: the object stays (deletionTimestamp set) until its dependents are gone, so
            # "gone" means its pods are too. Namespaces and CRDs delete their content themselves.
            propagation = "Background" if (key.group, key.kind) in GUARDED else "Foreground"
            if not call(key, self.api.delete, res, key.name, key.namespace, uid=uid, propagation=propagation):
                self.emit(Delete(str(key), "gone", "already gone, or replaced by a newer object", position,
                                 name or None))  # fmt: skip
                continue
            self.emit(Delete(str(key), "deleting", "", position, name or None))
            pending[key] = (res, uid)
        self._wait_gone(position, name, pending, result, deadline=deadline, recorded=recorded)

    def _wait_gone(
        self, position: int | None, name: str, pending: dict[Key, tuple[Resource, str]],
        result: DeleteResult, *, deadline: float, recorded: bool,
    ) -> None:  # fmt: skip
        started = self.clock.monotonic()
        states: dict[Key, str] = {}

        def gone(key: Key) -> None:
            states.pop(key, None)
            self.emit(Delete(str(key), "deleted", "", position, name or None))
            if recorded:
                result.deleted.append(str(key))

        watched = []
        for key, (res, uid) in pending.items():
            current = call(key, self.api.get, res, key.name, key.namespace)
            if current is None or (current.get("metadata") or {}).get("uid") != uid:
                gone(key)
                continue
            states[key] = waiting_for(current)
            watched.append(Watched(key, res, str(current["metadata"].get("resourceVersion", ""))))
            if position is not None:
                self.emit(Status(position, name, str(key), "in-progress", states[key], 0.0))
        if not watched:
            return
        if position is not None:
            self.emit(Wait(position, name, [str(w.key) for w in watched], self.options.step_timeout))

        def waiting() -> list[tuple[str, str]]:
            return [(str(k), why) for k, why in states.items()]

        watcher = Watcher(self.api, self.clock.sleep)
        try:
            watcher.follow_all(watched)
            while states:
                self._check_stop(waiting)
                remaining = deadline - self.clock.monotonic()
                if remaining <= 0:
                    raise DeleteTimeout(name or "inventory", self.options.step_timeout, waiting())
                try:
                    key, obj = watcher.updates.get(timeout=min(POLL, remaining))
                except queue.Empty:
                    continue
                if key not in states:
                    continue
                if isinstance(obj, RunnerError):
                    raise as_object_error(key, obj) if isinstance(obj, ApiStatusError) else obj
                if obj is None or (obj.get("metadata") or {}).get("uid") != pending[key][1]:
                    gone(key)
                    continue
                why = waiting_for(obj)
                if why != states[key]:
                    states[key] = why
                    if position is not None:
                        elapsed = self.clock.monotonic() - started
                        self.emit(Status(position, name, str(key), "in-progress", why, elapsed))
        finally:
            watcher.close()

    # --- helpers -----------------------------------------------------------------------------------------

    def _stopped(self) -> None:
        signum = self._signal if self._signal is not None else self.budget.signum
        if signum is not None:
            raise DeleteInterrupted(signum, self._during)
        raise RunTimeout(self.options.timeout, self._during, [])

    def _check_stop(self, waiting: Callable[[], list[tuple[str, str]]] | None = None) -> None:
        if self._signal is not None:
            raise DeleteInterrupted(self._signal, self._during)
        if self._deadline is not None and self.clock.monotonic() >= self._deadline:
            err = RunTimeout(self.options.timeout, self._during, waiting() if waiting else [])
            err.args = (str(err).replace("nothing was pruned", "the inventory lists what is left"),)
            raise err
        if self._inventory is not None:
            self._inventory.check()


# --- the command -------------------------------------------------------------------------------------------
