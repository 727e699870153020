"""Waiting within a step: until its objects are healthy (by their kind's health check expressions, or
kstatus's rules with the settle rule for workloads and the pod failures of Jobs), or until a deleted object
is gone. Every wait ends at the step's deadline, on a signal, or at the first failure, which names what
was still waited for and why."""

from __future__ import annotations

import queue
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from typing import Any

from krmfn.errors import RunnerError
from krmfn.k8s.kobj import annotations_of
from krmfn.runner.cluster.api import Api, ApiStatusError, Resource, as_object_error, call
from krmfn.runner.engine import joblogs, jobs
from krmfn.runner.engine.bookkeeping import Bookkeeper
from krmfn.runner.engine.options import POLL, Clock, Options
from krmfn.runner.engine.tracked import CheckStop, Tracked, Waiting
from krmfn.runner.engine.waiter import Watched, Watcher
from krmfn.runner.errors import StepFailed, StepTimeout
from krmfn.runner.events import Event, Status, Wait
from krmfn.runner.health import blocked, podtrouble, settle, workloads
from krmfn.runner.health.status import Health, health
from krmfn.runner.inventory.prune import uid_of
from krmfn.runner.plan import Key, Step
from krmfn.runner.settle_annotations import budget_of, window_of

POD_POLL = 1.0  # how often a wait lists the pods of a pending Job, to show failures as they happen
JOBS_PER_LIST = 50  # Jobs whose pods one list request asks for (a label selector ``in (...)``)


class HealthWait:
    def __init__(
        self,
        api: Api,
        options: Options,
        emit: Callable[[Event], None],
        clock: Clock,
        *,
        book: Bookkeeper,
        check_stop: CheckStop,
    ) -> None:
        self.api, self.options, self.emit, self.clock = api, options, emit, clock
        self._book, self._check_stop = book, check_stop

    def delete_and_wait(
        self, step: Step, key: Key, res: Resource, live: dict[str, Any], deadline: float
    ) -> None:
        uid = uid_of(key, live)
        call(key, self.api.delete, res, key.name, key.namespace, uid=uid, propagation="Foreground")
        self.wait_gone(step, key, res, live, deadline)

    def wait_gone(self, step: Step, key: Key, res: Resource, live: dict[str, Any], deadline: float) -> None:
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

    def wait(
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
                if self._updated(step, t, obj, states, (started, quiet)):
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
            if (t.live.get("spec") or {}).get("replicas") == 0:
                window = 0.0  # no pod is wanted: none can crash, nothing to hold (settle.py)
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

    def _updated(
        self,
        step: Step,
        t: Tracked,
        obj: dict[str, Any] | None,
        states: dict[Key, Health],
        how: tuple[float, bool],
    ) -> bool:
        """Takes a watch event's object for ``t``, reports a change of its health; whether it is done."""
        t.live = obj
        new = self._health(t, obj)
        if t.settler is not None and t.settler.behind:
            t.next_poll = 0.0  # the pods at the next tick (settle.py); on events only: bounded
        if new.state == "not-found":
            new = Health("in-progress", "deleted; waiting for it to come back")
        if new != states[t.key]:
            states[t.key] = new
            self._status(step, t.key, new, *how, t=t)
        self._settle(step, t, obj, new)
        return new.done

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
        parent, ref = self._book.parent, jobs.job_ref(t.key)
        if jobs.is_job(t.key) and t.settled is None and live is not None and parent is not None:
            record = parent.jobs.get(ref)
            if record is not None:
                self._book.record(
                    ref, record.spec_hash, "completed" if state.state == "current" else "failed"
                )
                self._book.write(parent)
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


def _owned_by(pods: list[dict[str, Any]], job: dict[str, Any]) -> list[dict[str, Any]]:
    """The pods of ``pods`` that this very Job owns (not an earlier Job of the same name)."""
    uid = (job.get("metadata") or {}).get("uid")
    return [
        p
        for p in pods
        if any(o.get("uid") == uid for o in (p.get("metadata") or {}).get("ownerReferences") or [])
    ]
