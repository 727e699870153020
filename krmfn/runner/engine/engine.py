"""The runner: applies a plan step by step, waits for health, records the inventory, prunes.

``_run`` and ``_run_step`` are the whole sequence; the parts they call each have a module of their own
(ARCHITECTURE.md, the engine). Everything it does is reported as events (see events.py) through
``emit``; failures end the run with a ``RunnerError`` that the last ``error`` event describes. The
cluster (``Api``) and the clock are injected, so the engine runs the same against a real API server and
in tests.

One run at a time per ApplySet: the run holds a lease on the parent Secret from before its first apply
until its last inventory write (lock.py says why there, inventory.py how the writes stay safe).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from functools import partial

from krmfn.errors import RunnerError
from krmfn.net.budget import Budget
from krmfn.runner.cluster.api import Api, call
from krmfn.runner.engine import jobs
from krmfn.runner.engine.applier import Applier
from krmfn.runner.engine.bookkeeping import Bookkeeper
from krmfn.runner.engine.discovery import Discovery
from krmfn.runner.engine.follow import Follower
from krmfn.runner.engine.health_wait import HealthWait
from krmfn.runner.engine.job_lifecycle import JobLifecycle
from krmfn.runner.engine.options import POLL, Clock, Options, Result, SystemClock, begin
from krmfn.runner.engine.parallel import groups, in_order
from krmfn.runner.engine.tracked import Tracked, Waiting
from krmfn.runner.errors import (
    Interrupted,
    InvalidObject,
    ObjectError,
    RunTimeout,
    StepTimeout,
)
from krmfn.runner.events import Error, Event, StepDone, StepStart
from krmfn.runner.inventory.applyset import Parent, as_member
from krmfn.runner.inventory.prune import prune
from krmfn.runner.inventory.runs import RunLog
from krmfn.runner.plan import Item, Key, Plan, Step

__all__ = ["POLL", "Clock", "Options", "Result", "Runner", "SystemClock"]
"""Options, Result and the clock live in options.py, imported from here as they always were."""


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
        self._step = -1
        self._during = "start-up"
        self._deadline: float | None = None
        # The run's parts, each over the ones it calls (ARCHITECTURE.md, the engine).
        self._book = Bookkeeper(
            api, options, self.emit, self.clock, self._runlog, check_stop=self._check_stop, doing=self._doing
        )
        self._waits = HealthWait(
            api, options, self.emit, self.clock, book=self._book, check_stop=self._check_stop
        )
        self._discovery = Discovery(
            api, options, self.clock, self._waits, check_stop=self._check_stop, doing=self._doing
        )
        self._applies = Applier(api, options, self.emit, self._book, self._waits)
        self._jobs = JobLifecycle(
            api, options, self.emit, self.clock, resources=self._discovery.resources, applies=self._applies,
            book=self._book, waits=self._waits,
        )  # fmt: skip

    # --- public ------------------------------------------------------------------------------------------

    def request_stop(self, signum: int) -> None:
        """Called from a signal handler: the run stops at the next request boundary or wait tick, and a
        request in flight within a tick (only attributes are assigned: safe whatever a thread holds)."""
        self._signal = signum
        self.budget.stop(signum)

    def run(self, plan: Plan) -> Result:
        self._applies.result = result = Result(ok=False)
        started, self._deadline = begin(self.clock, self.budget, self.options.timeout)
        try:
            self._runlog.ends(
                partial(self._run, plan, result),
                failed_step=partial(self._failed_step, plan),
                during=lambda: self._during,
                release=self._book.abandon,
            )
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
        self._discovery.resolve(plan)
        parent = self._book.open(plan)
        self._book.check_adoption(plan, parent)
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
            self._book.close(plan, parent, remaining)

    def _run_on_failure(self, plan: Plan, parent: Parent, result: Result, failure: RunnerError) -> None:
        """The on-failure steps, in order, each applied and waited for, after a step failed. Their
        finished Jobs run again (a notification per failure); a failure of theirs is added to the step's
        error, which stays the run's."""
        for step in plan.on_failure:
            self._step = step.index
            try:
                self._jobs.rerun_finished_jobs(step, parent)
                self._run_step(step, parent, result)
            except (Interrupted, RunTimeout):
                raise
            except RunnerError as err:
                failure.args = (f"{failure}; then the on-failure step {step.name} failed too: {err}",)
                return

    # --- one step ----------------------------------------------------------------------------------------

    def _run_step(self, step: Step, parent: Parent, result: Result) -> None:
        started = self.clock.monotonic()
        deadline = started + step.timeout
        if self._deadline is not None:
            deadline = min(deadline, self._deadline)
        self.emit(StepStart(step.index, step.name, len(step.items), step.timeout, step.wait))
        try:
            self._during = f"step {step.name}"
            self._jobs.recreate_failed_jobs(step, deadline)
            tracked = self._apply_items(step, parent, deadline)
            self._book.write(parent)  # the Jobs just started are remembered before anything is awaited
            if self.options.dry_run or not step.wait:
                self.emit(StepDone(step.index, step.name, "applied", self.clock.monotonic() - started))
                return
            self._book.flush()
            with self._follow(step, tracked):
                self._waits.wait(step, tracked, started, deadline)
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
        for group in groups(
            step.items, lambda it: jobs.is_job(it.key) or it.key not in self._discovery.resources
        ):
            if len(group) == 1 or self.options.concurrency <= 1:
                for item in group:
                    self._check_stop()
                    tracked.append(self._apply(step, item, parent, deadline))
                continue
            objs = [as_member(item.obj, parent.id) for item in group]
            tasks = [
                partial(self._applies.ssa, it.key, self._discovery.resources[it.key], obj)
                for it, obj in zip(group, objs, strict=True)
            ]
            first: RunnerError | None = None
            for i, future in in_order(tasks, self.options.concurrency, self._check_stop):
                item, res, err = group[i], self._discovery.resources[group[i].key], future.exception()
                if err is None:
                    tracked.append(self._applies.applied(step, item, res, *future.result()))
                elif jobs.forced(err, item):
                    if first is None:  # re-created after the requests in flight are done, one at a time
                        tracked.append(
                            self._applies.force_recreate(
                                step, item.key, res, objs[i], deadline, why=err.cause
                            )
                        )
                elif first is None:
                    first = err if isinstance(err, RunnerError) else ObjectError(str(item.key), str(err))
            if first is not None:
                raise first
        return tracked

    def _apply(self, step: Step, item: Item, parent: Parent, deadline: float) -> Tracked:
        res = self._discovery.resource_for(step, item, deadline)
        obj = as_member(item.obj, parent.id)
        if jobs.is_job(item.key):
            return self._jobs.apply_job(step, item, res, obj, parent=parent, deadline=deadline)
        try:
            live, created = self._applies.ssa(item.key, res, obj)
        except InvalidObject as err:
            if not jobs.forced(err, item):
                raise
            return self._applies.force_recreate(step, item.key, res, obj, deadline, why=err.cause)
        return self._applies.applied(step, item, res, live, created)

    def _follow(self, step: Step, tracked: list[Tracked]) -> AbstractContextManager[None]:
        if self._follower is None:
            return nullcontext()
        return self._follower.during(step.index, step.name, [t.key for t in tracked if jobs.is_job(t.key)])

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
        self._book.check()

    def _doing(self, what: str) -> None:
        """What the run is doing now, named by the error that would interrupt it (``_stopped``)."""
        self._during = what


def _serialised(emit: Callable[[Event], None]) -> Callable[[Event], None]:
    """``emit`` for several threads (``--follow``'s log streams beside the step loop): one event at a time."""
    lock = threading.Lock()

    def one_at_a_time(event: Event) -> None:
        with lock:
            emit(event)

    return one_at_a_time
