"""The runner: applies a plan step by step, waits for health, records the inventory, prunes.

Everything it does is reported as events (see events.py) through ``emit``; failures end the run with a
``RunnerError`` that the last ``error`` event describes. The cluster (``Api``) and the clock are
injected, so the engine runs the same against a real API server and in tests.

One run at a time per ApplySet: the run holds a lease on the parent Secret from before its first apply
until its last inventory write (lock.py says why there, inventory.py how the writes stay safe).
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from typing import Any, ParamSpec, Protocol, TypeVar

import krmfn
from krmfn.errors import DEBUG_ENV, RunnerError
from krmfn.kobj import annotations_of
from krmfn.net.budget import Budget
from krmfn.runner.cluster.api import Api, ApiStatusError, NoSuchKind, Resource, as_object_error, call
from krmfn.runner.engine import joblogs, jobs
from krmfn.runner.engine.follow import Follower
from krmfn.runner.engine.parallel import DEFAULT_CONCURRENCY, groups, in_order
from krmfn.runner.engine.waiter import Watched, Watcher
from krmfn.runner.errors import (
    InternalError,
    Interrupted,
    InvalidObject,
    InventoryError,
    JobSpecChanged,
    ObjectError,
    RunTimeout,
    StepFailed,
    StepTimeout,
    UnknownKind,
)
from krmfn.runner.events import (
    Apply,
    ApplyAction,
    Error,
    Event,
    Status,
    StepDone,
    StepStart,
    Wait,
)
from krmfn.runner.events import Inventory as InventoryEvent
from krmfn.runner.health import blocked, podtrouble, settle, workloads
from krmfn.runner.health.healthexprs import HealthChecks
from krmfn.runner.health.status import Health, health
from krmfn.runner.inventory.applyset import JobRecord, Outcome, Parent, as_member
from krmfn.runner.inventory.inventory import Inventory
from krmfn.runner.inventory.lock import LEASE
from krmfn.runner.inventory.members import foreign_inventory, list_members
from krmfn.runner.inventory.prune import prune, uid_of
from krmfn.runner.inventory.runs import RunLog
from krmfn.runner.plan import Item, Key, Plan, Step, key_of
from krmfn.runner.settle_annotations import budget_of, window_of

T = TypeVar("T")
P = ParamSpec("P")
Waiting = Callable[[], list[tuple[str, str]]]
"""What a step still waits for (object, why), computed only when an error needs it."""
POLL = 0.2  # how often a wait looks at the stop flag and the deadline when no event arrives
UNCHANGED: frozenset[ApplyAction] = frozenset({"unchanged", "skipped"})
CHANGED: frozenset[ApplyAction] = frozenset({"created", "configured", "recreated"})
POD_POLL = 1.0  # how often a wait lists the pods of a pending Job, to show failures as they happen
JOBS_PER_LIST = 50  # Jobs whose pods one list request asks for (a label selector ``in (...)``)


class Clock(Protocol):
    def monotonic(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


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


class Runner:
    def __init__(
        self,
        api: Api,
        options: Options,
        emit: Callable[[Event], None],
        clock: Clock | None = None,
        budget: Budget | None = None,
    ) -> None:
        self.api = api
        self.budget = budget or Budget()
        """The run's deadline and signals, shared with the requests (krmfn/net/budget.py): a request in
        flight when the run must stop ends with the run's own error (``_stopped``)."""
        self.budget.on_stop = self._stopped
        self.options = options
        self._runlog = RunLog()
        """The record of this run on the parent (runs.py), for ``krmfn status``."""
        self.emit = self._runlog.observing(_serialised(emit) if options.follow else emit)
        self._follower = Follower(api, self.emit) if options.follow else None
        self.clock = clock or SystemClock()
        self._signal: int | None = None
        self._resources: dict[Key, Resource] = {}
        self._crds: dict[tuple[str, str], Item] = {}
        self._step = -1
        self._during = "start-up"
        self._inventory: Inventory | None = None
        self._result = Result(ok=False)
        self._before: dict[Key, dict[str, Any]] = {}
        """Members of the ApplySet as they were when the run started: what an apply is compared with."""
        self._deadline: float | None = None
        self._recorded: tuple[set[str], set[str]] = (set(), set())
        """The kinds and namespaces the parent listed before this run widened them."""
        self._parent: Parent | None = None

    # --- public ------------------------------------------------------------------------------------------

    def request_stop(self, signum: int) -> None:
        """Called from a signal handler: the run stops at the next request boundary or wait tick, and a
        request in flight within a tick (only attributes are assigned: safe whatever a thread holds)."""
        self._signal = signum
        self.budget.stop(signum)

    def run(self, plan: Plan) -> Result:
        self._result = result = Result(ok=False)
        started = self.clock.monotonic()
        self.budget.start(self.options.timeout)
        if self.options.timeout > 0:
            self._deadline = started + self.options.timeout
        try:
            try:
                self._run(plan, result)
            except RunnerError as err:
                self._runlog.end(err, self._failed_step(plan))
                raise
            except Exception as err:  # a bug: the run still ends as a failure, recorded, its lock released
                internal = InternalError(err, self._during)
                self._runlog.end(internal, self._failed_step(plan))
                if os.environ.get(DEBUG_ENV):
                    raise
                raise internal from err
            finally:
                if self._inventory is not None:
                    # Releases the lock after a failure, recording how the run ended; nothing after close().
                    self._inventory.abandon(self._parent if self._runlog.record is not None else None)
            result.ok = True
        except RunnerError as err:
            result.error = err
            ref = getattr(err, "ref", None)
            step = self._step if self._step >= 0 else None
            name = plan.steps[self._step].name if step is not None and step < len(plan.steps) else None
            self.emit(Error(message=str(err), step=step, step_name=name, object=ref))
            if name is not None:
                result.failed_step, result.failed_step_index = name, step
        result.elapsed = self.clock.monotonic() - started
        return result

    def _failed_step(self, plan: Plan) -> str | None:
        return plan.steps[self._step].name if 0 <= self._step < len(plan.steps) else None

    # --- the sequence ------------------------------------------------------------------------------------

    def _run(self, plan: Plan, result: Result) -> None:
        self._check_stop()  # a signal received while the command started: nothing is sent at all
        result.on_delete = [step.name for step in plan.on_delete]
        self._resolve(plan)
        parent = self._open_parent(plan)
        self._check_adoption(plan, parent)
        for step in plan.steps:
            self._step = step.index
            try:
                self._run_step(step, parent, result)
            except (Interrupted, RunTimeout):
                raise  # stopped from outside: nothing more is applied, on-failure steps included
            except RunnerError as err:
                if isinstance(err, StepTimeout) and step.on_timeout == "continue":
                    result.timed_out.append((step.name, str(err)))
                    self._runlog.went_on(step.name)
                    continue
                if plan.on_failure:
                    self._run_on_failure(plan, parent, result, err)
                    self._step = step.index  # the run failed in this step, whatever ran after it
                raise
            result.steps_done += 1
        self._step = -1
        remaining: list[Key] | None = None  # members not rendered that stay; None: not looked (--no-prune)
        if self.options.prune:
            self._during = "prune"
            remaining = self._prune(plan, parent, result)
        if not self.options.dry_run:
            current = {jobs.job_ref(it.key) for it in plan.items if jobs.is_job(it.key)}
            parent.jobs = {k: v for k, v in parent.jobs.items() if k in current}
            if remaining is not None:
                # Narrow to what members remain (the KEP's superset rule): without a prune the widened
                # sets stay, so a later prune still finds what this run left in place.
                members = [it.key for it in plan.items] + remaining
                parent.group_kinds = {key.group_kind for key in members}
                parent.namespaces = {key.namespace for key in members if key.namespace}
            parent.on_delete = [step.name for step in plan.on_delete]  # what delete must be given
            self._during = "recording the inventory"
            self._runlog.end(None, None)
            self._inventory_of().close(parent)

    def _run_on_failure(self, plan: Plan, parent: Parent, result: Result, failure: RunnerError) -> None:
        """The on-failure steps, in order, each applied and waited for, after a step failed. Their
        finished Jobs run again (a notification per failure); a failure of theirs is added to the step's
        error, which stays the run's."""
        for step in plan.on_failure:
            self._step = step.index
            try:
                self._rerun_finished_jobs(step, parent)
                self._run_step(step, parent, result)
            except (Interrupted, RunTimeout):
                raise
            except RunnerError as err:
                failure.args = (f"{failure}; then the on-failure step {step.name} failed too: {err}",)
                return

    def _rerun_finished_jobs(self, step: Step, parent: Parent) -> None:
        """An on-failure step's Jobs run on every failure: a finished one is deleted, and the record of
        its run forgotten (one deleted by its TTL would otherwise be skipped as already run)."""
        deadline = self.clock.monotonic() + step.timeout
        for item in step.items:
            res = self._resources.get(item.key)
            if not jobs.is_job(item.key) or res is None or self.options.dry_run:
                continue
            parent.jobs.pop(jobs.job_ref(item.key), None)
            live = call(item.key, self.api.get, res, item.key.name, item.key.namespace)
            if live is not None and jobs.outcome_of(live) is not None:
                self._delete_and_wait(step, item.key, res, live, deadline)
                self.emit(
                    Apply(step.index, step.name, str(item.key), "deleted", "finished before; runs again")
                )

    def _resolve(self, plan: Plan) -> None:
        """Discovery for every object before anything is applied, so an unknown kind fails the run
        up front. Kinds whose CRD is part of the plan are resolved when their turn comes."""
        self._during = "discovery"
        for item in plan.items:
            if item.kind == "CustomResourceDefinition":
                spec = item.obj.get("spec") or {}
                self._crds[(str(spec.get("group", "")), str((spec.get("names") or {}).get("kind", "")))] = (
                    item
                )
        for item in plan.items:
            try:
                res = self.api.resource(item.api_version, item.kind)
            except NoSuchKind as err:
                if (item.key.group, item.kind) in self._crds:
                    continue
                raise UnknownKind(str(item.key), str(err)) from None
            self._place(item, res)

    def _place(self, item: Item, res: Resource) -> None:
        if not res.namespaced:
            item.drop_namespace()
        self._resources[item.key] = res

    # --- inventory ---------------------------------------------------------------------------------------

    def _open_parent(self, plan: Plan) -> Parent:
        self._during = "reading the inventory"
        namespace = self.options.namespace or self.api.default_namespace
        self.emit(
            InventoryEvent(self.options.applyset, namespace, self.options.applyset_source, self.options.prune)
        )
        self._inventory = inventory = Inventory(
            self.api, self.options.applyset, namespace,
            field_manager=self.options.field_manager, version=self.options.version, call=call,
            emit=self.emit, check_stop=self._check_stop, sleep=self.clock.sleep,
            monotonic=self.clock.monotonic, lease=self.options.lock_lease, renew=self.options.lock_lease / 4,
        )  # fmt: skip
        if self.options.dry_run:
            self._parent = inventory.read()
            self._recorded = (set(self._parent.group_kinds), set(self._parent.namespaces))
            return self._parent

        def widen(parent: Parent) -> None:
            self._recorded = (set(parent.group_kinds), set(parent.namespaces))
            # Superset first (the KEP's rule): if this run dies half-way, the next prune still finds
            # every kind and namespace that may hold members.
            parent.group_kinds |= {it.key.group_kind for it in plan.items}
            parent.namespaces |= {it.key.namespace for it in plan.items if it.key.namespace}
            parent.on_delete = list(dict.fromkeys([*parent.on_delete, *(s.name for s in plan.on_delete)]))
            self._runlog.start(parent, [str(it.key) for it in plan.items])

        self._during = "waiting for the inventory lock"
        # Members are applied only once the parent lists their kinds and this run holds the lock.
        self._parent = inventory.acquire(self.options.lock_wait, widen)
        return self._parent

    def _check_adoption(self, plan: Plan, parent: Parent) -> None:
        """Reads the members the inventory had before this run (what applies are compared with), and
        refuses to adopt another app's inventory: with prune on, members this render never had would be
        deleted, so an inventory whose members include none of this render's is not taken over unless
        ``--adopt`` says so. Namespaces and CRDs do not count: two apps often render the same one."""
        self._during = "reading the inventory's members"
        kinds, namespaces = self._recorded
        members = self._members(parent, kinds, namespaces | {parent.namespace})
        self._before = {key_of(obj): obj for obj in members}
        if not self.options.prune or self.options.adopt or (self.options.allow_empty and not plan.items):
            return
        foreign = foreign_inventory(
            parent, self.options.applyset_source, {it.key for it in plan.items}, self._before
        )
        if foreign is not None:
            raise InventoryError(f"{foreign}; nothing was applied")

    def _members(self, parent: Parent, kinds: set[str], namespaces: set[str]) -> list[dict[str, Any]]:
        listed = list_members(self.api, parent, kinds, namespaces, call=call, check_stop=self._check_stop)
        return [obj for obj, _ in listed]

    def _inventory_of(self) -> Inventory:
        assert self._inventory is not None, "the parent is opened before anything is written"
        return self._inventory

    def _write_parent(self, parent: Parent) -> None:
        if not self.options.dry_run:
            self._inventory_of().write(parent)

    def _flush_parent(self) -> None:
        if self._inventory is not None:
            self._inventory.flush()

    # --- one step ----------------------------------------------------------------------------------------

    def _run_step(self, step: Step, parent: Parent, result: Result) -> None:
        started = self.clock.monotonic()
        deadline = started + step.timeout
        if self._deadline is not None:
            deadline = min(deadline, self._deadline)
        self.emit(StepStart(step.index, step.name, len(step.items), step.timeout, step.wait))
        try:
            self._during = f"step {step.name}"
            self._recreate_failed_jobs(step, deadline)
            tracked = self._apply_items(step, parent, deadline)
            self._write_parent(parent)  # the Jobs just started are remembered before anything is awaited
            if self.options.dry_run or not step.wait:
                self.emit(StepDone(step.index, step.name, "applied", self.clock.monotonic() - started))
                return
            self._flush_parent()
            with self._follow(step, tracked):
                self._wait(step, tracked, started, deadline)
        except (StepTimeout, RunTimeout):
            self.emit(StepDone(step.index, step.name, "timeout", self.clock.monotonic() - started))
            raise
        except Interrupted:
            self.emit(StepDone(step.index, step.name, "interrupted", self.clock.monotonic() - started))
            raise
        except RunnerError:
            self.emit(StepDone(step.index, step.name, "failed", self.clock.monotonic() - started))
            raise
        self.emit(StepDone(step.index, step.name, "healthy", self.clock.monotonic() - started))

    def _apply_items(self, step: Step, parent: Parent, deadline: float) -> list[Tracked]:
        """The step's objects, in groups of one kind rank (parallel.py); a group's objects concurrently,
        at most ``concurrency`` requests in flight, reported in plan order."""
        tracked: list[Tracked] = []
        for group in groups(step.items, lambda it: jobs.is_job(it.key) or it.key not in self._resources):
            if len(group) == 1 or self.options.concurrency <= 1:
                for item in group:
                    self._check_stop()
                    tracked.append(self._apply(step, item, parent, deadline))
                continue
            objs = [as_member(item.obj, parent.id) for item in group]
            tasks = [
                partial(self._ssa, it.key, self._resources[it.key], obj)
                for it, obj in zip(group, objs, strict=True)
            ]
            first: RunnerError | None = None
            for i, future in in_order(tasks, self.options.concurrency, self._check_stop):
                item, res, err = group[i], self._resources[group[i].key], future.exception()
                if err is None:
                    tracked.append(self._applied(step, item, res, *future.result()))
                elif jobs.forced(err, item):
                    if first is None:  # re-created after the requests in flight are done, one at a time
                        tracked.append(
                            self._force_recreate(step, item.key, res, objs[i], deadline, why=err.cause)
                        )
                elif first is None:
                    first = err if isinstance(err, RunnerError) else ObjectError(str(item.key), str(err))
            if first is not None:
                raise first
        return tracked

    def _apply(self, step: Step, item: Item, parent: Parent, deadline: float) -> Tracked:
        res = self._resource_for(step, item, deadline)
        obj = as_member(item.obj, parent.id)
        if jobs.is_job(item.key):
            return self._apply_job(step, item, res, obj, parent=parent, deadline=deadline)
        try:
            live, created = self._ssa(item.key, res, obj)
        except InvalidObject as err:
            if not jobs.forced(err, item):
                raise
            return self._force_recreate(step, item.key, res, obj, deadline, why=err.cause)
        return self._applied(step, item, res, live, created)

    def _applied(self, step: Step, item: Item, res: Resource, live: dict[str, Any], created: bool) -> Tracked:
        if created:
            action: ApplyAction = "created"
        elif not _changed(self._before.get(item.key), live):
            action = "unchanged"  # the server changed nothing the object says
        else:
            action = "configured"
        self._report_apply(step, item.key, action)
        return Tracked(item.key, res, live, unchanged=action == "unchanged")

    def _force_recreate(
        self, step: Step, key: Key, res: Resource, obj: dict[str, Any], deadline: float, *, why: str
    ) -> Tracked:
        """``krmfn.dev/force`` on a change the API server refuses in place (any kind, as the Flux Operator
        does): delete the live object (foreground, with a UID precondition) and create it again."""
        live = call(key, self.api.get, res, key.name, key.namespace)
        detail = f"field is immutable; deleted and re-created (force): {why}"
        if self.options.dry_run or live is None:
            self._report_apply(step, key, "recreated", detail)
            return Tracked(key, res, live)
        self._delete_and_wait(step, key, res, live, deadline)
        applied, _ = self._ssa(key, res, obj)
        self._report_apply(step, key, "recreated", detail)
        return Tracked(key, res, applied)

    def _report_apply(self, step: Step, key: Key, action: ApplyAction, detail: str = "") -> None:
        if action in CHANGED:
            self._result.applied.append(str(key))
        elif action in UNCHANGED:
            self._result.unchanged.append(str(key))
        self.emit(Apply(step.index, step.name, str(key), action, detail, self.options.dry_run))

    def _ssa(
        self, key: Key, res: Resource, obj: dict[str, Any], dry_run: bool = False
    ) -> tuple[dict[str, Any], bool]:
        return call(
            key, self.api.apply, res, obj, field_manager=self.options.field_manager,
            force=self.options.force_conflicts, dry_run=dry_run or self.options.dry_run,
        )  # fmt: skip

    def _resource_for(self, step: Step, item: Item, deadline: float) -> Resource:
        """The REST resource of ``item``; for a kind whose CRD is in the plan, waits until the CRD is
        Established and discovery serves the kind."""
        found = self._resources.get(item.key)
        if found is not None:
            return found
        crd = self._crds[(item.key.group, item.kind)]
        if self.options.dry_run:
            raise UnknownKind(str(item.key), f"its CRD {crd.key.name} is not installed yet (server dry run)")
        crd_res = self._resources[crd.key]
        crd_live = call(crd.key, self.api.get, crd_res, crd.key.name, "")
        self._wait(step, [Tracked(crd.key, crd_res, crd_live)], self.clock.monotonic(), deadline, quiet=True)
        delay = 0.02
        while True:
            self.api.forget(item.api_version)
            try:
                res = self.api.resource(item.api_version, item.kind)
            except NoSuchKind as err:
                # Established is set a moment before discovery serves the new kind.
                if self.clock.monotonic() + delay > deadline:
                    raise UnknownKind(str(item.key), str(err)) from None
                self._check_stop()
                self.clock.sleep(delay)
                delay = min(delay * 2, 0.5)
                continue
            self._place(item, res)
            return res

    # --- Jobs --------------------------------------------------------------------------------------------

    def _recreate_failed_jobs(self, step: Step, deadline: float) -> None:
        for item in step.items:
            if not jobs.is_job(item.key) or not jobs.enabled(item.annotations, jobs.RECREATE_ON_FAILURE):
                continue
            res = self._resources[item.key]
            live = call(item.key, self.api.get, res, item.key.name, item.key.namespace)
            if not jobs.is_failed(live) or live is None:
                continue
            if self.options.dry_run:
                self._report_apply(
                    step, item.key, "deleted", "failed; would be re-created (recreate-on-failure)"
                )
                continue
            self._delete_and_wait(step, item.key, res, live, deadline)
            self.emit(
                Apply(
                    step.index,
                    step.name,
                    str(item.key),
                    "deleted",
                    "failed; re-created (recreate-on-failure)",
                )
            )

    def _apply_job(
        self, step: Step, item: Item, res: Resource, obj: dict[str, Any], *, parent: Parent, deadline: float
    ) -> Tracked:
        """A Job is applied like any object, so labels, annotations and the spec fields the API server
        lets change on a live Job are changed in place; the API server's 422 "field is immutable" is what
        tells a new run (re-created under ``force``, an error otherwise). A Job no longer on the cluster
        is run again only when the inventory has no record of this run (jobspec.py says what a run is),
        or, after a failure, under ``recreate-on-failure``."""
        key, ref = item.key, jobs.job_ref(item.key)
        wanted = jobs.run_hash_of(item)
        obj["metadata"].setdefault("annotations", {})[jobs.SPEC_HASH] = wanted
        live = call(key, self.api.get, res, key.name, key.namespace)
        if live is not None and (live.get("metadata") or {}).get("deletionTimestamp"):
            self._wait_gone(step, key, res, live, deadline)
            live = None
        if live is None:
            gone, detail = self._gone_job(step, item, res, parent, wanted)
            if gone is not None:
                return gone
            applied, _ = self._ssa(key, res, obj)
            self._record(ref, wanted, "started")
            self._report_apply(step, key, "created", detail)
            return self._suspended_as_rendered(step, item, Tracked(key, res, applied))
        try:
            applied, _ = self._ssa(key, res, obj)
        except InvalidObject as err:
            if not jobs.is_immutable_error(str(err)):
                raise
            kept = jobs.same_triggers(item, live, wanted, jobs.enabled(item.annotations, jobs.FORCE))
            if kept is not None:  # a change outside the Job's triggers: not a new run (jobs.py)
                self._record(ref, wanted, kept.outcome)
                self._report_apply(step, key, "skipped", kept.why)
                return Tracked(key, res, live)
            if not jobs.enabled(item.annotations, jobs.FORCE):
                raise JobSpecChanged(str(key), jobs.spec_changed(item, err.cause)) from None
            tracked = self._force_recreate(step, key, res, obj, deadline, why="spec changed")
            self._record(ref, wanted, "started")
            return self._suspended_as_rendered(step, item, tracked)
        previous = annotations_of(live).get(jobs.SPEC_HASH)
        record = parent.jobs.get(ref)
        if not _changed(live, applied):
            action: ApplyAction = "unchanged"
            detail = ""
        elif previous is None:
            action, detail = "configured", "adopted"
        else:
            action, detail = "configured", "changed in place (fields a live Job may change)"
        self._report_apply(step, key, action, detail)
        outcome = jobs.outcome_of(applied) or (
            record.outcome if record is not None and jobs.same_run(record, wanted, item.obj) else "started"
        )
        self._record(ref, wanted, outcome)
        return self._suspended_as_rendered(step, item, Tracked(key, res, applied))

    def _gone_job(
        self, step: Step, item: Item, res: Resource, parent: Parent, wanted: str
    ) -> tuple[Tracked | None, str]:
        """A Job not on the cluster: (tracked, "") when this run is recorded and is not run again, else
        (None, detail of the create). A record under an older hashed name of the same base counts too:
        hash-job-names renamed the same run when its hash stopped covering the fields a live Job may
        change."""
        key, ref = item.key, jobs.job_ref(item.key)
        record, ran_as = parent.jobs.get(ref), ""
        if record is None or not jobs.same_run(record, wanted, item.obj):
            record, ran_as = jobs.renamed_run(item, parent, wanted)
            if record is None:
                return None, ""
        self._record(ref, wanted, record.outcome)  # recorded again under this name and run hash
        where = f" as {ran_as}" if ran_as else ""
        if record.outcome == "failed":
            if jobs.enabled(item.annotations, jobs.RECREATE_ON_FAILURE):
                return None, f"failed before{where} and deleted since; run again (recreate-on-failure)"
            why = (
                f"failed before{where} and deleted since (ttlSecondsAfterFinished); not run again: change "
                f"its spec, or annotate it with {jobs.RECREATE_ON_FAILURE[0]}: enabled to retry it"
            )
            self._report_apply(step, key, "skipped", why)
            return Tracked(key, res, None, settled=Health("failed", why)), ""
        if record.outcome == "completed":
            why = f"completed before{where} and deleted since (ttlSecondsAfterFinished); not run again"
        else:
            why = (
                f"applied before{where} and deleted since, never seen finishing (its step did not wait); "
                "not run again"
            )
        self._report_apply(step, key, "skipped", why)
        return Tracked(key, res, None, settled=Health("current", why)), ""

    def _suspended_as_rendered(self, step: Step, item: Item, tracked: Tracked) -> Tracked:
        """A Job rendered with ``suspend: true`` cannot complete until someone resumes it: a step that
        waits for it fails at once rather than at its timeout. (A Job suspended on the cluster by another
        controller, such as a queue, is waited for: it is resumed when admitted.)"""
        if (item.obj.get("spec") or {}).get("suspend") is True and step.wait and not self.options.dry_run:
            tracked.settled = Health(
                "failed",
                "suspended (spec.suspend: true as rendered): it cannot complete until resumed, so the step "
                "fails instead of waiting for its timeout; set suspend: false (applied in place), or put "
                'the Job in a final step with krmfn.dev/wait: "false"',
            )
        return tracked

    def _record(self, ref: str, spec_hash: str, outcome: Outcome) -> None:
        if self._parent is not None:
            self._parent.jobs[ref] = JobRecord(spec_hash, outcome)

    def _delete_and_wait(
        self, step: Step, key: Key, res: Resource, live: dict[str, Any], deadline: float
    ) -> None:
        uid = uid_of(key, live)
        call(key, self.api.delete, res, key.name, key.namespace, uid=uid, propagation="Foreground")
        self._wait_gone(step, key, res, live, deadline)

    def _wait_gone(self, step: Step, key: Key, res: Resource, live: dict[str, Any], deadline: float) -> None:
        uid = (live.get("metadata") or {}).get("uid")
        current = call(key, self.api.get, res, key.name, key.namespace)
        if current is None or (current.get("metadata") or {}).get("uid") != uid:
            return
        watcher = Watcher(self.api, self.clock.sleep)
        try:
            version = str(current["metadata"].get("resourceVersion", ""))
            watcher.follow(Watched(key, res, version))
            while True:
                update = self._next(
                    watcher, deadline, step, lambda: [(str(key), "waiting for the deletion to finish")]
                )
                if update is None:
                    continue
                _, obj = update
                if isinstance(obj, RunnerError):
                    raise obj
                if obj is None or (obj.get("metadata") or {}).get("uid") != uid:
                    return
        finally:
            watcher.close()

    # --- waiting -----------------------------------------------------------------------------------------

    def _follow(self, step: Step, tracked: list[Tracked]) -> AbstractContextManager[None]:
        if self._follower is None:
            return nullcontext()
        return self._follower.during(step.index, step.name, [t.key for t in tracked if jobs.is_job(t.key)])

    def _wait(
        self, step: Step, tracked: list[Tracked], started: float, deadline: float, quiet: bool = False
    ) -> None:
        states: dict[Key, Health] = {}
        by_key = {t.key: t for t in tracked}
        watcher = Watcher(self.api, self.clock.sleep)
        try:
            watched = []
            for t in tracked:
                self._start_settling(t)
            self._look_at_workloads([t for t in tracked if t.settler is not None], self.clock.monotonic())
            for t in tracked:
                states[t.key] = self._health(t, t.live)
                self._status(step, t.key, states[t.key], started, quiet, t=t)
                self._settle(step, t, t.live, states[t.key])
                if not states[t.key].done:
                    version = str(((t.live or {}).get("metadata") or {}).get("resourceVersion", ""))
                    watched.append(Watched(t.key, t.res, version))
            watcher.follow_all(watched)
            pending = [k for k, h in states.items() if not h.done]
            if pending and not quiet:
                self.emit(Wait(step.index, step.name, [str(k) for k in pending], step.timeout))
            # Kept up to date rather than recomputed per event: a step of N objects sees ~N events.
            running = set(pending)
            job_items = [t for t in tracked if jobs.is_job(t.key)]
            settling = [t for t in tracked if t.settler is not None]

            waiting = partial(self._waiting, by_key, states, running)

            while running:
                now = self.clock.monotonic()
                due = [t for t in job_items if t.key in running and t.live is not None and now >= t.next_poll]
                self._look_at_jobs(step, due, states, now, (started, quiet))
                running -= self._settled_workloads(step, settling, running, states, (now, started))
                if not running:
                    break
                update = self._next(watcher, deadline, step, waiting)
                if update is None:
                    continue
                key, obj = update
                if isinstance(obj, RunnerError):
                    raise as_object_error(key, obj) if isinstance(obj, ApiStatusError) else obj
                t = by_key[key]
                t.live = obj
                new = self._health(t, obj)
                if new.state == "not-found":
                    new = Health("in-progress", "deleted; waiting for it to come back")
                if new != states[key]:
                    states[key] = new
                    self._status(step, key, new, started, quiet, t=t)
                self._settle(step, t, obj, new)
                if new.done:
                    running.discard(key)
                else:
                    running.add(key)
        finally:
            watcher.close()

    def _health(self, t: Tracked, live: dict[str, Any] | None) -> Health:
        """The object's health; for a Job still running, with the pod failures seen so far (a Job whose
        podFailurePolicy ignores them, or one restarting in place, shows them long before it fails)."""
        if t.settled is not None:
            return t.settled
        if t.trouble is not None:
            return t.trouble
        found = self._judge(live)
        if t.settler is not None:
            return t.settler.judge(found, self.clock.monotonic())
        if jobs.is_job(t.key) and found.state == "in-progress" and t.problems:
            return Health(found.state, f"{found.message}; {jobs.summary(t.problems)}")
        if jobs.is_job(t.key) and found.state == "failed" and live is not None:
            if t.failure is None:
                t.failure = self._job_failure(t, live, found)
            return t.failure[0]
        return found

    def _judge(self, live: dict[str, Any] | None) -> Health:
        """The object's own health: by its kind's health check expressions if there are any
        (healthexprs.py), else by the built-in rules (status.py)."""
        checks = self.options.health_checks
        if checks and live is not None and not (live.get("metadata") or {}).get("deletionTimestamp"):
            custom = checks.judge(live)
            if custom is not None:
                return custom
        return health(live)

    def _poll_pods(self, due: list[Tracked], now: float) -> list[Tracked]:
        """Lists the pods of the running Jobs ``due`` (one request per namespace for up to JOBS_PER_LIST of
        them, not one per Job) and polls them again after POD_POLL seconds; the Jobs whose pod failures
        changed."""
        changed = []
        by_namespace: dict[str, list[Tracked]] = {}
        for t in due:
            t.next_poll = now + POD_POLL
            by_namespace.setdefault(t.key.namespace, []).append(t)
        for namespace, group in by_namespace.items():
            for first in range(0, len(group), JOBS_PER_LIST):
                chunk = group[first : first + JOBS_PER_LIST]
                pods = self._pods_of_jobs(namespace, [t.key.name for t in chunk])
                changed += [t for t in chunk if self._pod_problems_changed(t, pods)]
        return changed

    def _waiting(
        self, by_key: dict[Key, Tracked], states: dict[Key, Health], running: set[Key]
    ) -> list[tuple[str, str]]:
        """Each object still waiting, and why it is blocked: computed only when an error needs it."""
        probes: dict[str, dict[str, str]] = {}
        return [(str(k), self._blocked(by_key[k], states[k], probes)) for k in states if k in running]

    def _blocked(self, t: Tracked, state: Health, probes: dict[str, dict[str, str]]) -> str:
        """Why ``t`` is still waiting, in one line (blocked.py): its goal, its health, its unready pods
        with their latest probe failure (``probes``: by namespace, from its Events, read once and only
        now: the step has failed)."""
        pods = t.settler.pods if t.settler is not None else None
        namespace = t.key.namespace
        if pods and not all(podtrouble.ready(p) for p in pods) and namespace not in probes:
            try:
                events = self.api.list(self.api.resource("v1", "Event"), namespace, "")
            except RunnerError:
                events = []  # a courtesy: the pods' status has said the rest
            probes[namespace] = blocked.probe_failures(events)
        return blocked.line(t.live, state, pods, probes.get(namespace))

    def _start_settling(self, t: Tracked) -> None:
        """A workload gets its settle state (settle.py) and a first look at its pods."""
        if workloads.is_workload(t.key) and t.settled is None and t.live is not None:
            notes = annotations_of(t.live)
            window, now = window_of(notes), self.api.server_time() if t.unchanged else None
            held = now - timedelta(seconds=window) if now is not None else None
            t.settler = settle.Settler(window, budget_of(notes), held_before=held)

    def _look_at_jobs(
        self, step: Step, due: list[Tracked], states: dict[Key, Health], now: float, how: tuple[float, bool]
    ) -> None:
        """Polls the pods of the Jobs ``due``, reports what changed, raises a fail-fast reason."""
        for t in self._poll_pods(due, now):
            new = self._health(t, t.live)
            if new != states[t.key]:
                states[t.key] = new
                self._status(step, t.key, new, *how, t=t)
            if t.trouble is not None:
                # Not the Job's outcome (its controller still waits): nothing is recorded, and a run after
                # the fix waits for the same Job again.
                raise StepFailed(step.name, str(t.key), t.trouble.message)

    def _settled_workloads(
        self,
        step: Step,
        settling: list[Tracked],
        running: set[Key],
        states: dict[Key, Health],
        when: tuple[float, float],
    ) -> set[Key]:
        """The workloads of ``settling`` that are done now, their pods listed again when due."""
        now, started = when
        live = [t for t in settling if t.key in running and t.live is not None]
        self._look_at_workloads([t for t in live if now >= t.next_poll], now)
        return {t.key for t in live if self._settled(step, t, states, now, started)}

    def _settled(self, step: Step, t: Tracked, states: dict[Key, Health], now: float, started: float) -> bool:
        """Whether a workload is done (settle.py); reports a change of its health, raises its failure.
        Called at every tick: the settle window ends without an event."""
        assert t.live is not None
        new = self._health(t, t.live)
        if new != states[t.key]:
            states[t.key] = new
            self._status(step, t.key, new, started, quiet=False, t=t)
        self._settle(step, t, t.live, new)
        return new.done

    def _look_at_workloads(self, due: list[Tracked], now: float) -> None:
        """Lists the current pods of the workloads ``due`` for their settle rule (one request per namespace
        for up to workloads.PER_LIST of them), and polls them again after POD_POLL."""
        by_namespace: dict[str, list[Tracked]] = {}
        for t in due:
            t.next_poll = now + POD_POLL
            by_namespace.setdefault(t.key.namespace, []).append(t)
        for namespace, group in by_namespace.items():
            lives = [t.live for t in group if t.live is not None]
            for t, pods in zip(group, workloads.current_pods(self.api, namespace, lives), strict=True):
                assert t.settler is not None
                t.trouble = t.settler.observe(pods)

    def _pod_problems_changed(self, t: Tracked, pods: list[dict[str, Any]]) -> bool:
        assert t.live is not None
        owned = _owned_by(pods, t.live)
        # A Job's pods that cannot start fail the step at once; its crash loops (restartPolicy OnFailure)
        # are its backoffLimit's to judge.
        stuck = podtrouble.stuck(owned, crash_loops=False)
        if stuck:
            t.trouble = Health("failed", stuck[0].describe())
            return True
        found = jobs.pod_problems(owned, t.live.get("spec") or {})
        if not found or found == t.problems:
            return False  # pods of a finished attempt may be gone: keep what was seen
        t.problems = found
        for problem in found[-joblogs.MAX_CONTAINERS :]:
            # Read now: when the Job fails, the controller deletes its running pods, and with them the
            # logs of a container that restarted in place.
            where = (problem.pod, problem.container, problem.previous)
            if problem.container and self.options.log_lines > 0 and where not in t.logs:
                t.logs[where] = self.api.logs(
                    problem.pod, t.key.namespace, problem.container, self.options.log_lines, problem.previous
                )
        return True

    def _pods_of_jobs(self, namespace: str, names: list[str]) -> list[dict[str, Any]]:
        """The pods of the Jobs ``names`` (by the label the Job controller sets); none when they cannot be
        listed: pod details are a courtesy, the Job's own status decides."""
        label = "batch.kubernetes.io/job-name"
        selector = f"{label}={names[0]}" if len(names) == 1 else f"{label} in ({','.join(names)})"
        try:
            return self.api.list(self.api.resource("v1", "Pod"), namespace, selector)
        except RunnerError:
            return []

    def _next(
        self, watcher: Watcher, deadline: float, step: Step, waiting: Waiting
    ) -> tuple[Key, dict[str, Any] | RunnerError | None] | None:
        self._check_stop(waiting)
        remaining = deadline - self.clock.monotonic()
        if remaining <= 0:
            raise StepTimeout(step.name, step.timeout_text, waiting())
        try:
            return watcher.updates.get(timeout=min(POLL, remaining))
        except queue.Empty:
            return None

    def _status(
        self, step: Step, key: Key, state: Health, started: float, quiet: bool, *, t: Tracked | None = None
    ) -> None:
        if not quiet:
            logs = None
            if t is not None and t.failure is not None and t.failure[0] == state and t.failure[1]:
                logs = [log.to_dict() for log in t.failure[1]]
            elapsed = self.clock.monotonic() - started
            self.emit(Status(step.index, step.name, str(key), state.state, state.message, elapsed, logs))

    def _settle(self, step: Step, t: Tracked, live: dict[str, Any] | None, state: Health) -> None:
        """A Job's outcome goes into the inventory's record as soon as it is known; a failure ends the
        step, with the pods' exit codes and last log lines."""
        if not state.done:
            return
        parent, ref = self._parent, jobs.job_ref(t.key)
        if jobs.is_job(t.key) and t.settled is None and live is not None and parent is not None:
            record = parent.jobs.get(ref)
            if record is not None:
                self._record(ref, record.spec_hash, "completed" if state.state == "current" else "failed")
                self._write_parent(parent)
        if state.state != "failed":
            return
        raise StepFailed(step.name, str(t.key), state.message)

    def _job_failure(
        self, t: Tracked, job: dict[str, Any], found: Health
    ) -> tuple[Health, list[joblogs.ContainerLog]]:
        """The failed Job's health with its pods' exit codes and last log lines (joblogs.py)."""
        pods = _owned_by(self._pods_of_jobs(t.key.namespace, [t.key.name]), job)
        problems = jobs.pod_problems(pods, job.get("spec") or {}) or t.problems

        def fetch(pod: str, container: str, lines: int, previous: bool) -> str | None:
            found = self.api.logs(pod, t.key.namespace, container, lines, previous)
            return found if found is not None else t.logs.get((pod, container, previous))

        collected = joblogs.collect(problems, fetch, self.options.log_lines)
        parts = [joblogs.describe(problem, log) for problem, log in collected]
        message = found.message + ("; " + "; ".join(parts) if parts else "")
        return Health("failed", message), [log for _, log in collected if log is not None]

    # --- prune -------------------------------------------------------------------------------------------

    def _prune(self, plan: Plan, parent: Parent, result: Result) -> list[Key]:
        """Deletes members no longer rendered (prune.py); returns those that stay."""
        pruned = prune(
            self.api, plan, parent, self.options, emit=self.emit, call=call, check_stop=self._check_stop
        )
        result.pruned.extend(pruned.deleted)
        return pruned.remaining

    # --- helpers -----------------------------------------------------------------------------------------

    def _stopped(self) -> None:
        """A request the budget ended raises the run's error, naming what the run was doing."""
        signum = self._signal if self._signal is not None else self.budget.signum
        if signum is not None:
            raise Interrupted(signum, self._during)
        raise RunTimeout(self.options.timeout, self._during, [])

    def _check_stop(self, waiting: Waiting | None = None) -> None:
        if self._signal is not None:
            raise Interrupted(self._signal, self._during)
        if self._deadline is not None and self.clock.monotonic() >= self._deadline:
            raise RunTimeout(self.options.timeout, self._during, waiting() if waiting else [])
        if self._inventory is not None:
            self._inventory.check()


def _serialised(emit: Callable[[Event], None]) -> Callable[[Event], None]:
    """``emit`` for several threads (``--follow``'s log streams beside the step loop): one event at a time."""
    lock = threading.Lock()

    def one_at_a_time(event: Event) -> None:
        with lock:
            emit(event)

    return one_at_a_time


def _owned_by(pods: list[dict[str, Any]], job: dict[str, Any]) -> list[dict[str, Any]]:
    """The pods of ``pods`` that this very Job owns (not an earlier Job of the same name)."""
    uid = (job.get("metadata") or {}).get("uid")
    return [
        p
        for p in pods
        if any(o.get("uid") == uid for o in (p.get("metadata") or {}).get("ownerReferences") or [])
    ]


def _changed(before: dict[str, Any] | None, after: dict[str, Any]) -> bool:
    """Whether an apply changed what the object says, as the server answered: everything but its status
    and the server's own metadata (resourceVersion, generation, managedFields...), so a ConfigMap's data
    counts as a Deployment's spec does. A server dry run answers with the object it would store, without
    a new resourceVersion, so the content is compared, not the version. ``before`` None: not known."""

    def view(obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj.get("metadata") or {}
        body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata", "status")}
        return {**body, "labels": meta.get("labels") or {}, "annotations": meta.get("annotations") or {}}

    return before is None or view(before) != view(after)
