"""A Job's life across runs: whether this run of it already ran (the inventory's record), so it is
skipped, applied in place, run, or re-created (a spec change under ``force``, a failure under
``recreate-on-failure``, an on-failure step's Job on every failure); jobs.py holds the pure rules.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from krmfn.k8s.annotations import FORCES, RECREATE_ON_FAILURE, RECREATES_ON_FAILURE, enabled
from krmfn.k8s.kobj import annotations_of
from krmfn.runner.cluster.api import Api, Resource, call
from krmfn.runner.engine import jobs
from krmfn.runner.engine.applier import Applier, changed
from krmfn.runner.engine.bookkeeping import Bookkeeper
from krmfn.runner.engine.health_wait import HealthWait
from krmfn.runner.engine.options import Clock, Options
from krmfn.runner.engine.tracked import Tracked
from krmfn.runner.errors import InvalidObject, JobSpecChanged
from krmfn.runner.events import Apply, ApplyAction, Event
from krmfn.runner.health.status import Health
from krmfn.runner.inventory.applyset import Parent
from krmfn.runner.plan import Item, Key, Step


class JobLifecycle:
    def __init__(
        self, api: Api, options: Options, emit: Callable[[Event], None], clock: Clock, *,
        resources: dict[Key, Resource], applies: Applier, book: Bookkeeper, waits: HealthWait,
    ) -> None:  # fmt: skip
        self.api, self.options, self.emit, self.clock = api, options, emit, clock
        self._resources = resources
        """Discovery's map (discovery.py), shared: a kind its CRD installs is added when its turn comes."""
        self._applies, self._book, self._waits = applies, book, waits

    def recreate_failed_jobs(self, step: Step, deadline: float) -> None:
        for item in step.items:
            if not jobs.is_job(item.key) or not enabled(item.annotations, RECREATES_ON_FAILURE):
                continue
            res = self._resources[item.key]
            live = call(item.key, self.api.get, res, item.key.name, item.key.namespace)
            if not jobs.is_failed(live) or live is None:
                continue
            if self.options.dry_run:
                self._applies.report_apply(
                    step, item.key, "deleted", "failed; would be re-created (recreate-on-failure)"
                )
                continue
            self._waits.delete_and_wait(step, item.key, res, live, deadline)
            self.emit(
                Apply(
                    step.index,
                    step.name,
                    str(item.key),
                    "deleted",
                    "failed; re-created (recreate-on-failure)",
                )
            )

    def rerun_finished_jobs(self, step: Step, parent: Parent) -> None:
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
                self._waits.delete_and_wait(step, item.key, res, live, deadline)
                self.emit(
                    Apply(step.index, step.name, str(item.key), "deleted", "finished before; runs again")
                )

    def apply_job(
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
            self._waits.wait_gone(step, key, res, live, deadline)
            live = None
        if live is None:
            gone, detail = self._gone_job(step, item, res, parent, wanted)
            if gone is not None:
                return gone
            applied, _ = self._applies.ssa(key, res, obj)
            self._book.record(ref, wanted, "started")
            self._applies.report_apply(step, key, "created", detail)
            return self._suspended_as_rendered(step, item, Tracked(key, res, applied))
        try:
            applied, _ = self._applies.ssa(key, res, obj)
        except InvalidObject as err:
            if not jobs.is_immutable_error(str(err)):
                raise
            kept = jobs.same_triggers(item, live, wanted, enabled(item.annotations, FORCES))
            if kept is not None:  # a change outside the Job's triggers: not a new run (jobs.py)
                self._book.record(ref, wanted, kept.outcome)
                self._applies.report_apply(step, key, "skipped", kept.why)
                return Tracked(key, res, live)
            if not enabled(item.annotations, FORCES):
                raise JobSpecChanged(str(key), jobs.spec_changed(item, err.cause)) from None
            tracked = self._applies.force_recreate(step, key, res, obj, deadline, why="spec changed")
            self._book.record(ref, wanted, "started")
            return self._suspended_as_rendered(step, item, tracked)
        previous = annotations_of(live).get(jobs.SPEC_HASH)
        record = parent.jobs.get(ref)
        if not changed(live, applied):
            action: ApplyAction = "unchanged"
            detail = ""
        elif previous is None:
            action, detail = "configured", "adopted"
        else:
            action, detail = "configured", "changed in place (fields a live Job may change)"
        self._applies.report_apply(step, key, action, detail)
        outcome = jobs.outcome_of(applied) or (
            record.outcome if record is not None and jobs.same_run(record, wanted, item.obj) else "started"
        )
        self._book.record(ref, wanted, outcome)
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
        self._book.record(ref, wanted, record.outcome)  # recorded again under this name and run hash
        where = f" as {ran_as}" if ran_as else ""
        if record.outcome == "failed":
            if enabled(item.annotations, RECREATES_ON_FAILURE):
                return None, f"failed before{where} and deleted since; run again (recreate-on-failure)"
            why = (
                f"failed before{where} and deleted since (ttlSecondsAfterFinished); not run again: change "
                f"its spec, or annotate it with {RECREATE_ON_FAILURE}: enabled to retry it"
            )
            self._applies.report_apply(step, key, "skipped", why)
            return Tracked(key, res, None, settled=Health("failed", why)), ""
        if record.outcome == "completed":
            why = f"completed before{where} and deleted since (ttlSecondsAfterFinished); not run again"
        else:
            why = (
                f"applied before{where} and deleted since, never seen finishing (its step did not wait); "
                "not run again"
            )
        self._applies.report_apply(step, key, "skipped", why)
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
