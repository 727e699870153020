"""What must hold after every run of the campaign, checked from the cluster itself.

jobs = JobLedger(client, namespace); jobs.observe()   # as often as possible (a sampler thread)
jobs.reruns()                                          # Job runs started more than once
render_problems(client, namespace, render, exact=False)  # after a run that exited 0
lock_problems(client, namespace, killed_pids)          # after every run
exit_problems(code, events, stderr)                    # after every krmfn process
"""

from __future__ import annotations

import itertools
import json
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime

from cluster.objects import meta
from cluster.runner_fixtures import MEMBER_KINDS, inventory_problems
from lightkube import ApiError, Client
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import ConfigMap, Pod, Secret

from krmfn.k8s.annotations import RECREATES_ON_FAILURE, enabled
from krmfn.runner.engine.jobs import SPEC_HASH
from krmfn.runner.inventory.applyset import PART_OF, applyset_id
from krmfn.runner.inventory.lock import Lease
from krmfn.runner.reserved import LOCK

from .renders import Doc, Render

KINDS: dict[str, type[ConfigMap | Deployment | Job | Secret]] = {
    "ConfigMap": ConfigMap,
    "Deployment": Deployment,
    "Job": Job,
    "Secret": Secret,
}
LEASE_SLACK = 5.0  # seconds a lease may be seen past its expiry: the observer polls, clocks tick in seconds


@dataclass
class JobRun:
    name: str
    spec_hash: str
    recreate: bool
    created: datetime
    failed: bool = False
    pods: set[str] = field(default_factory=set)


class JobLedger:
    """Every Job (by UID) and every pod of it ever seen in the namespace. Jobs come and go (prune, force
    re-creation): ``observe`` is called from a sampler thread during runs and once after each."""

    def __init__(self, client: Client, namespace: str) -> None:
        self.client, self.namespace = client, namespace
        self.runs: dict[str, JobRun] = {}
        self.reported: set[str] = set()  # each problem is reported once, by the run that caused it
        self._lock = threading.Lock()

    def observe(self) -> None:
        jobs = list(self.client.list(Job, namespace=self.namespace))
        pods = list(self.client.list(Pod, namespace=self.namespace))
        with self._lock:
            for job in jobs:
                m = meta(job)
                notes = m.annotations or {}
                uid = str(m.uid)
                if uid not in self.runs:
                    recreate = enabled(notes, RECREATES_ON_FAILURE)
                    self.runs[uid] = JobRun(
                        str(m.name),
                        notes.get(SPEC_HASH, ""),
                        recreate,
                        m.creationTimestamp or datetime.now(UTC),
                    )
                conditions = (job.status.conditions if job.status else None) or []
                if any(c.type in ("Failed", "FailureTarget") and c.status == "True" for c in conditions):
                    self.runs[uid].failed = True
            for pod in pods:
                for owner in meta(pod).ownerReferences or []:
                    if owner.kind == "Job" and owner.uid in self.runs:
                        self.runs[owner.uid].pods.add(str(meta(pod).uid))

    def observe_quietly(self) -> None:
        """``observe``, ignoring the errors of a control plane that is being restarted."""
        try:
            self.observe()
        except Exception:
            return

    def reruns(self) -> list[str]:
        """A Job run (name + run hash) started by more than one Job, unless the earlier one failed and
        the Job asks for recreate-on-failure; a Job with more pods than its backoffLimit allows (0: one)."""
        problems = []
        with self._lock:
            by_run: dict[tuple[str, str], list[JobRun]] = {}
            for run in self.runs.values():
                if run.pods:
                    by_run.setdefault((run.name, run.spec_hash), []).append(run)
                if len(run.pods) > 1:
                    problems.append(f"Job {run.name} (run {run.spec_hash[:8]}) has {len(run.pods)} pods")
            for (name, spec_hash), runs in by_run.items():
                runs.sort(key=lambda r: r.created)
                for earlier, later in itertools.pairwise(runs):
                    if not (earlier.failed and later.recreate):
                        problems.append(
                            f"Job {name} run {spec_hash[:8]} ran {len(runs)} times "
                            f"(earlier one failed: {earlier.failed})"
                        )
                        break
        fresh = [p for p in problems if p not in self.reported]
        self.reported.update(fresh)
        return fresh


def members(client: Client, namespace: str) -> set[tuple[str, str]]:
    set_id = applyset_id("krmfn", namespace)
    found = set()
    for res in MEMBER_KINDS:
        for obj in client.list(res, namespace=namespace, labels={PART_OF: set_id}):
            found.add((res.__name__, str(meta(obj).name)))
    return found


def _healthy(kind: str, obj: object) -> str:
    """'' when healthy, else why not."""
    if kind == "Job":
        conditions = (obj.status.conditions if obj.status else None) or []  # type: ignore[attr-defined]
        if not any(c.type == "Complete" and c.status == "True" for c in conditions):
            return "not Complete"
    if kind == "Deployment":
        spec, status, m = obj.spec, obj.status, obj.metadata  # type: ignore[attr-defined]
        want = spec.replicas
        if status is None or (status.observedGeneration or 0) < (m.generation or 0):
            return "rollout not observed"
        if (status.updatedReplicas or 0) < want or (status.availableReplicas or 0) < want:
            return (
                f"rollout not done ({status.updatedReplicas} updated, {status.availableReplicas} available)"
            )
    return ""


def _matches(kind: str, live: object, doc: Doc) -> str:
    """'' when the live object carries the rendered values of the fields the campaign changes."""
    if kind == "ConfigMap" and (live.data or {}) != doc["data"]:  # type: ignore[attr-defined]
        return f"data {live.data} != {doc['data']}"  # type: ignore[attr-defined]
    if kind in ("Deployment", "Job"):
        image = live.spec.template.spec.containers[0].image  # type: ignore[attr-defined]
        want = doc["spec"]["template"]["spec"]["containers"][0]["image"]
        if image != want:
            return f"image {image} != {want}"
        if kind == "Deployment" and live.spec.replicas != doc["spec"]["replicas"]:  # type: ignore[attr-defined]
            return f"replicas {live.spec.replicas} != {doc['spec']['replicas']}"  # type: ignore[attr-defined]
    return ""


def render_problems(client: Client, namespace: str, render: Render, *, exact: bool) -> list[str]:
    """After a run that exited 0: every object of the render is there and healthy, the ApplySet has
    nothing else, the inventory lists every member; ``exact``: the fields equal the render's too."""
    problems = []
    for doc in render.docs:
        kind, name = doc["kind"], doc["metadata"]["name"]
        try:
            live: object = client.get(KINDS[kind], name, namespace=namespace)
        except ApiError as err:
            problems.append(f"{kind} {name}: {err.status.code} after a successful run")
            continue
        why = _healthy(kind, live) or (_matches(kind, live, doc) if exact else "")
        if why:
            problems.append(f"{kind} {name}: {why}")
    extra = members(client, namespace) - render.keys()
    if extra:
        problems.append(f"ApplySet members not in the render: {sorted(extra)}")
    problems += [p for p in inventory_problems(client, namespace) if not p.startswith("lock left behind")]
    return problems


def lock_problems(client: Client, namespace: str, killed: set[int]) -> list[str]:
    """Once every krmfn of a run has exited: a lock may remain only if a SIGKILLed process held it,
    and no lease is ever seen past its expiry."""
    try:
        parent = client.get(Secret, "krmfn", namespace=namespace)
    except ApiError as err:
        return [] if err.status.code == 404 else [f"parent: {err.status.code}"]
    raw = (meta(parent).annotations or {}).get(LOCK)
    if not raw:
        return []
    lease = Lease.parse(raw)
    if lease is None:
        return [f"malformed lock {raw!r}"]
    problems = []
    pid = lease.holder.rpartition("/")[2]
    if not (pid.isdigit() and int(pid) in killed):
        problems.append(f"lock of {lease.holder} outlived its run (no SIGKILL): {raw}")
    overdue = (datetime.now(UTC) - lease.expires).total_seconds()
    if overdue > LEASE_SLACK:
        problems.append(f"lock outlived its lease by {overdue:.0f}s: {raw}")
    return problems


def exit_problems(code: int, events: list[Doc], stderr: str) -> list[str]:
    """The exit code agrees with the last ``-o json`` event; no traceback; no usage error."""
    problems = []
    if "Traceback (most recent call last)" in stderr:
        problems.append("traceback on stderr: " + stderr.strip().splitlines()[-1][:200])
    if code < 0:  # killed by a signal: whatever it printed, it had no chance to finish
        return problems
    last = events[-1] if events else {}
    if last.get("type") != "result":
        return [*problems, f"exit {code} but the last event is {json.dumps(last)[:200]}"]
    ok = last.get("ok")
    expected = {0: ok is True, 1: ok is False, 130: ok is False, 143: ok is False}
    if code not in expected:
        problems.append(f"unexpected exit code {code}: {stderr.strip()[:200]}")
    elif not expected[code]:
        problems.append(f"exit {code} but the result event says ok={ok}")
    elif code in (130, 143) and "interrupted" not in str(last.get("error")):
        problems.append(f"exit {code} but the error is {last.get('error')!r}")
    return problems
