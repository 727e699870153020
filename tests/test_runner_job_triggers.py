"""The runner and a Job's triggers (``krmfn.dev/hash-from``) on a fake API server that refuses a changed
Job spec as the real one does (``field is immutable``): a change outside the triggers keeps the name, and
the live Job that ran for the same triggers is that run (skipped, with why), not an error; a changed
trigger is a new name and a new run. tests/cluster/test_apply_job_triggers.py runs the same story on a
real control plane."""

from __future__ import annotations

import copy
from typing import Any

from fake_kube import FakeApi

from krmfn.functions.hash_job_names import FUNCTION as HASH
from krmfn.k8s.jobspec import IMMUTABLE_SPEC_FIELDS
from krmfn.runner.cluster.api import ApiStatusError, Resource
from krmfn.runner.engine import jobs
from krmfn.runner.engine.diff import Change
from krmfn.runner.engine.differ import Differ, DiffOptions
from krmfn.runner.engine.engine import Options, Result, Runner
from krmfn.runner.errors import JobSpecChanged
from krmfn.runner.events import Apply, Event
from krmfn.runner.plan import build_plan
from krmfn.runner.reserved import JOB_RECORDS
from krmfn.yaml.io import _load_fast, dump_fast

Doc = dict[str, Any]


class ImmutableJobs(FakeApi):
    """A FakeApi whose Jobs refuse a change of an immutable spec field, in the API server's words."""

    def apply(self, res: Resource, obj: Doc, *, field_manager: str, force: bool, dry_run: bool) -> Any:
        live = self.object(str(obj["apiVersion"]), obj["kind"], obj["metadata"].get("namespace", ""),
                           obj["metadata"]["name"])  # fmt: skip
        if obj["kind"] == "Job" and live is not None:
            for name in IMMUTABLE_SPEC_FIELDS:
                if live["spec"].get(name) != obj["spec"].get(name):
                    raise ApiStatusError(
                        422, "Invalid", f'Job.batch "{obj["metadata"]["name"]}" is invalid: spec.{name}: '
                        "Invalid value: ...: field is immutable",
                    )  # fmt: skip
        return super().apply(res, obj, field_manager=field_manager, force=force, dry_run=dry_run)


def finish(outcome: str) -> Any:
    def controller(obj: Doc) -> None:
        if obj["kind"] == "Job" and "status" not in obj:
            kind = "Complete" if outcome == "completed" else "Failed"
            obj["status"] = {"conditions": [{"type": kind, "status": "True", "reason": "Test"}]}

    return controller


def docs(image: str = "migrate:1", level: str = "info", schema: str = "v1", hash_from: str | None = None,
         **notes: str) -> list[Doc]:  # fmt: skip
    """The migration Job and its schema ConfigMap, named by hash-job-names as a render would."""
    annotations = {HASH_FROM: hash_from} if hash_from is not None else {}
    job: Doc = {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "migrate", "annotations": {**annotations, **notes}},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
            {"name": "m", "image": image, "env": [{"name": "LOG_LEVEL", "value": level}],
             "envFrom": [{"configMapRef": {"name": "db-schema"}}]}]}}},
    }  # fmt: skip
    schema_cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "db-schema"},
                 "data": {"version": schema}}  # fmt: skip
    rl = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [schema_cm, job]}
    text, code = HASH.process(dump_fast(rl))
    assert code == 0, text
    return list(_load_fast(text)["items"])


HASH_FROM = "krmfn.dev/hash-from"
TRIGGERS = "image,configmap/db-schema"


class Cluster:
    def __init__(self, outcome: str = "completed") -> None:
        self.api = ImmutableJobs("apps")
        self.api.controllers.append(finish(outcome))
        self.events: list[Event] = []

    def apply(self, rendered: list[Doc], wait: bool = True, **options: Any) -> Result:
        self.events = []
        plan = build_plan(copy.deepcopy(rendered), namespace="apps", default_timeout=30, wait=wait)
        return Runner(self.api, Options(namespace="apps", **options), self.events.append).run(plan)

    def job_events(self) -> list[tuple[str, str, str]]:
        return [
            (e.object, e.action, e.detail) for e in self.events if isinstance(e, Apply) and "Job" in e.object
        ]

    def records(self) -> str:
        parent = self.api.object("v1", "Secret", "apps", "krmfn")
        assert parent is not None
        return str(parent["metadata"]["annotations"][JOB_RECORDS])

    def job(self, name: str) -> Doc:
        found = self.api.object("batch/v1", "Job", "apps", name)
        assert found is not None
        return found


def name_of(rendered: list[Doc]) -> str:
    return str(next(d for d in rendered if d["kind"] == "Job")["metadata"]["name"])


def test_a_change_outside_the_triggers_keeps_the_completed_run() -> None:
    cluster = Cluster()
    first = docs(hash_from=TRIGGERS)
    assert cluster.apply(first).error is None
    name = name_of(first)
    uid = cluster.job(name)["metadata"]["uid"]
    run = jobs.run_hash_of(build_plan(copy.deepcopy(first), namespace="apps", default_timeout=30).items[-1])
    assert cluster.records() == f"apps/{name}={run}:completed"

    unrelated = docs(level="debug", hash_from=TRIGGERS)
    assert name_of(unrelated) == name
    result = cluster.apply(unrelated)
    assert result.error is None
    [(obj, action, detail)] = cluster.job_events()
    assert (obj, action) == (f"Job.batch apps/{name}", "skipped")
    assert detail.startswith(
        "completed under this name for the same triggers (krmfn.dev/hash-from: configmap/db-schema,image); "
        "the spec changed since only outside them, which does not run it again"
    )
    assert cluster.job(name)["metadata"]["uid"] == uid  # not re-created
    assert cluster.records() == f"apps/{name}={run}:completed"  # the same run: the same trigger values

    # deleted by its TTL since: the record of the same trigger values keeps it from running again
    cluster.api.remove("batch/v1", "Job", "apps", name)
    assert cluster.apply(docs(level="warn", hash_from=TRIGGERS)).error is None
    assert [a for _, a, _ in cluster.job_events()] == ["skipped"]

    changed = docs(image="migrate:2", level="debug", hash_from=TRIGGERS)
    assert name_of(changed) != name
    assert cluster.apply(changed).error is None
    assert [a for _, a, _ in cluster.job_events()] == ["created"]


def test_without_triggers_the_same_change_is_refused_as_before() -> None:
    cluster = Cluster()
    first = docs()
    assert cluster.apply(first).error is None
    stale = docs(level="debug")
    for doc in stale:  # the name of the first render: hash-job-names was not run again
        if doc["kind"] == "Job":
            doc["metadata"]["name"] = name_of(first)
    result = cluster.apply(stale)
    assert isinstance(result.error, JobSpecChanged)
    assert "the name's hash" in str(result.error) and "does not match the rendered spec" in str(result.error)


def test_a_trigger_changed_after_naming_is_refused_by_the_triggers_recipe() -> None:
    cluster = Cluster()
    first = docs(hash_from=TRIGGERS)
    assert cluster.apply(first).error is None
    stale = docs(image="migrate:2", hash_from=TRIGGERS)
    for doc in stale:  # an overlay set the image after hash-job-names: the name is the first render's
        if doc["kind"] == "Job":
            doc["metadata"]["name"] = name_of(first)
    result = cluster.apply(stale)
    assert isinstance(result.error, JobSpecChanged)
    carried = name_of(first).rpartition("-")[2]
    assert f"the name's hash {carried} does not match the Job's triggers (krmfn.dev/hash-from: " in str(
        result.error
    )
    assert [a for _, a, _ in cluster.job_events()] == []


def test_a_failed_run_stays_failed_for_a_change_outside_its_triggers_unless_forced() -> None:
    cluster = Cluster(outcome="failed")
    first = docs(hash_from=TRIGGERS)
    assert cluster.apply(first).error is not None  # the Job failed
    result = cluster.apply(docs(level="debug", hash_from=TRIGGERS))
    [(_, action, detail)] = cluster.job_events()
    assert action == "skipped" and detail.startswith("failed under this name for the same triggers")
    assert "krmfn.dev/recreate-on-failure: enabled to retry it" in detail
    assert result.error is not None  # the step waits for the live Job, which failed
    forced = docs(level="debug", hash_from=TRIGGERS, **{"krmfn.dev/force": "enabled"})
    cluster.apply(forced)
    assert [a for _, a, _ in cluster.job_events()] == ["recreated"]


def test_a_running_job_is_waited_for_as_it_runs() -> None:
    cluster = Cluster(outcome="completed")
    cluster.api.controllers.clear()  # it keeps running
    assert cluster.apply(docs(hash_from=TRIGGERS), wait=False).error is None
    result = cluster.apply(docs(level="debug", hash_from=TRIGGERS), wait=False)
    assert result.error is None
    [(_, action, detail)] = cluster.job_events()
    assert action == "skipped" and detail.startswith("running under this name for the same triggers")


def test_a_dry_run_says_the_same() -> None:
    cluster = Cluster()
    assert cluster.apply(docs(hash_from=TRIGGERS)).error is None
    assert cluster.apply(docs(level="debug", hash_from=TRIGGERS), dry_run=True).error is None
    assert [a for _, a, _ in cluster.job_events()] == ["skipped"]


def test_krmfn_diff_shows_the_same_run_for_a_change_outside_the_triggers() -> None:
    cluster = Cluster()
    assert cluster.apply(docs(hash_from=TRIGGERS)).error is None
    differ = Differ(
        cluster.api, DiffOptions(applyset="krmfn", applyset_source="--applyset", namespace="apps")
    )
    plan = build_plan(docs(level="debug", hash_from=TRIGGERS), namespace="apps", default_timeout=30)
    [change] = [c for c in differ.changes(plan) if isinstance(c, Change) and c.object.startswith("Job.batch")]
    assert change.detail == "the same run (its triggers are unchanged)"
    assert change.before == change.after  # nothing of it would change
