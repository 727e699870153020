"""Job rules that need no cluster: run hashes, outcomes, the force/recreate annotations, and what the
pods of a Job say about why it fails (exit codes, restarts, the podFailurePolicy rule that matched)."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, TypeGuard

from krmfn.k8s.annotations import FORCE, FORCES, JOB_BASE_NAME, RECREATE_ON_FAILURE, enabled
from krmfn.k8s.jobhash import name_hash, spec_hash
from krmfn.k8s.jobspec import digest, run_identity
from krmfn.k8s.jobtriggers import HASH_FROM
from krmfn.k8s.names import JOB_NAME_MAX, trim_for_suffix
from krmfn.runner.errors import InvalidObject
from krmfn.runner.health import podtrouble
from krmfn.runner.inventory.applyset import JobRecord, Outcome, Parent
from krmfn.runner.plan import Item, Key
from krmfn.yaml.io import plain

SPEC_HASH = "krmfn.dev/applied-spec-hash"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
# Waiting reasons of a container that will not start by itself: shown at once while waiting.
STUCK_REASONS = podtrouble.FAIL_FAST


def run_hash(job: dict[str, Any]) -> str:
    """sha256 of the spec without the fields the API server lets change on a live Job (krmfn/k8s/jobspec.py),
    canonical JSON. Stamped on the Job and kept in the inventory's record: equal hashes, the same run, so
    a Job deleted by its TTL is not run again when only its TTL (or another mutable field) changed."""
    return digest(run_identity(plain(job.get("spec") or {})), 32)


def run_hash_of(item: Item) -> str:
    """The run ``item`` stands for: its triggers' values when it names some (``krmfn.dev/hash-from``,
    hashed by the plan over the stream, as hash-job-names hashed them into its name), else ``run_hash``."""
    return item.triggered.run_hash if item.triggered is not None else run_hash(item.obj)


def legacy_spec_hash(job: dict[str, Any]) -> str:
    """What krmfn 0.1 stamped and recorded: sha256 of the whole spec. Read to recognise its records."""
    canonical = json.dumps(plain(job.get("spec") or {}), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


def _true(job: dict[str, Any] | None, *types: str) -> bool:
    for cond in ((job or {}).get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") in types and cond.get("status") == "True":
            return True
    return False


def is_failed(job: dict[str, Any] | None) -> bool:
    """Failed, or FailureTarget: the Job controller's decision, never reverted; Failed follows once the
    pods have stopped."""
    return _true(job, "Failed", "FailureTarget")


def outcome_of(job: dict[str, Any] | None) -> Outcome | None:
    """``completed`` (Complete, or SuccessCriteriaMet: decided, Complete follows), ``failed``, or None."""
    if is_failed(job):
        return "failed"
    if _true(job, "Complete", "SuccessCriteriaMet"):
        return "completed"
    return None


IMMUTABLE_MESSAGES = re.compile(
    r"is\s+immutable|immutable\s+field|cannot change roleRef"
    r"|updates to statefulset spec for fields other than"
)
"""How the API server says a field cannot change: built-in validation (``field is immutable``), CEL rules
of CRDs (``immutable field``), the StatefulSet and RoleBinding wordings. Only these 422s let
``krmfn.dev/force`` delete an object: any other 422 would refuse the re-created object too."""


def is_immutable_error(message: str) -> bool:
    return bool(IMMUTABLE_MESSAGES.search(message))


@dataclass(frozen=True)
class PodProblem:
    """Why one container of one pod of a Job failed or cannot start."""

    pod: str
    container: str
    why: str
    previous: bool = False
    """The failure is the container's previous run (restarted in place): its logs need ``previous``."""
    index: str | None = None
    action: str | None = None
    """The podFailurePolicy action that matched this failure (``Ignore``: not counted), if any."""

    def describe(self) -> str:
        where = f"pod {self.pod}" + (f" (index {self.index})" if self.index is not None else "")
        where += f" container {self.container}" if self.container else ""
        text = f"{where}: {self.why}"
        if self.action == "Ignore":
            text += " (ignored by the podFailurePolicy: not counted as a failure)"
        elif self.action:
            text += f" (podFailurePolicy: {self.action})"
        return text


def _terminated_text(term: dict[str, Any]) -> str:
    why = f"{term.get('reason') or 'terminated'} (exit code {term.get('exitCode')})"
    if term.get("message"):
        why += f": {str(term['message']).strip()}"
    return why


def _container_problems(pod: str, index: str | None, status: dict[str, Any], phase: str) -> list[PodProblem]:
    name = str(status.get("name", ""))
    state, last = status.get("state") or {}, status.get("lastState") or {}
    term, last_term = state.get("terminated") or {}, last.get("terminated") or {}
    restarts = status.get("restartCount") or 0
    again = f", restarted {restarts} time{'s' if restarts != 1 else ''}" if restarts else ""
    if last_term and last_term.get("exitCode") not in (0, None):
        # Restarted in place (restartPolicy OnFailure): the previous run holds the true reason; a kill
        # when the Job stopped (exit 137) only ends the story.
        why = _terminated_text(last_term) + again
        if term:
            why += f"; its last run ended with {_terminated_text(term)}"
        return [PodProblem(pod, name, why, previous=True, index=index)]
    if term and term.get("exitCode") not in (0, None):
        return [PodProblem(pod, name, _terminated_text(term) + again, index=index)]
    waiting = state.get("waiting") or {}
    if phase != "Failed" and waiting.get("reason") in STUCK_REASONS:
        why = f"waiting: {waiting['reason']}" + (f": {waiting['message']}" if waiting.get("message") else "")
        return [PodProblem(pod, name, why, index=index)]
    return []


def _statuses(pod_status: dict[str, Any]) -> list[Any]:
    return [*(pod_status.get("initContainerStatuses") or []), *(pod_status.get("containerStatuses") or [])]


def pod_problems(pods: list[dict[str, Any]], job_spec: dict[str, Any] | None = None) -> list[PodProblem]:
    """Every failed or stuck container of ``pods``, oldest pod first: a failed pod's terminated
    containers, and a running pod's containers that restarted after a failure (restartPolicy OnFailure:
    ``lastState.terminated``) or wait for something that will not come by itself. A failed pod's match in
    the Job's podFailurePolicy is given too, as the Job controller would find it."""
    found: list[PodProblem] = []
    pods = sorted(pods, key=lambda p: str((p.get("metadata") or {}).get("creationTimestamp", "")))
    for pod in pods:
        meta, status = pod.get("metadata") or {}, pod.get("status") or {}
        phase = str(status.get("phase", ""))
        name = str(meta.get("name", ""))
        notes = meta.get("annotations") or {}
        index = str(notes[COMPLETION_INDEX]) if COMPLETION_INDEX in notes else None
        problems: list[PodProblem] = []
        for container in _statuses(status):
            if isinstance(container, dict):
                problems.extend(_container_problems(name, index, container, phase))
        if phase == "Failed" and not problems and status.get("reason"):
            text = f"{status['reason']}: {status.get('message', '')}".rstrip(": ")
            problems.append(PodProblem(name, "", text, index=index))
        if phase == "Failed" and job_spec is not None:
            action = policy_action(job_spec, pod)
            problems = [PodProblem(p.pod, p.container, p.why, p.previous, p.index, action) for p in problems]
        found.extend(problems)
    return found


def policy_action(job_spec: dict[str, Any], pod: dict[str, Any]) -> str | None:
    """The action of the first podFailurePolicy rule that matches the failed ``pod``, as the Job
    controller evaluates them: ``onExitCodes`` against the non-zero exit codes of terminated containers
    (of ``containerName`` only, when given), ``onPodConditions`` against the pod's conditions."""
    policy = job_spec.get("podFailurePolicy") or {}
    status = pod.get("status") or {}
    statuses = _statuses(status)
    conditions = {str(c.get("type")): str(c.get("status")) for c in status.get("conditions") or []}
    for rule in policy.get("rules") or []:
        if not isinstance(rule, dict):
            continue
        codes = rule.get("onExitCodes")
        if isinstance(codes, dict):
            values = set(codes.get("values") or [])
            for container in statuses:
                if codes.get("containerName") not in (None, container.get("name")):
                    continue
                code = ((container.get("state") or {}).get("terminated") or {}).get("exitCode")
                if code in (None, 0):
                    continue
                if (code in values) == (codes.get("operator") == "In"):
                    return str(rule.get("action"))
        for pattern in rule.get("onPodConditions") or []:
            if conditions.get(str(pattern.get("type"))) == str(pattern.get("status", "True")):
                return str(rule.get("action"))
    return None


def summary(problems: list[PodProblem]) -> str:
    """One line for a Job that is still running: how many failures, and the latest."""
    if not problems:
        return ""
    ignored = sum(p.action == "Ignore" for p in problems)
    count = f"{len(problems)} pod failure{'s' if len(problems) != 1 else ''}"
    if ignored:
        count += f" ({ignored} ignored by the podFailurePolicy)"
    return f"{count}, latest: {problems[-1].describe()}"


# --- the engine's Job policy: which run a live Job or a record is, and what to say when it differs ---


def forced(err: BaseException, item: Item) -> TypeGuard[InvalidObject]:
    """A change the API server refuses in place, on an object annotated to be re-created for it."""
    return (
        isinstance(err, InvalidObject) and is_immutable_error(str(err)) and enabled(item.annotations, FORCES)
    )


def is_job(key: Key) -> bool:
    return key.group == "batch" and key.kind == "Job"


def job_ref(key: Key) -> str:
    return f"{key.namespace}/{key.name}"


def renamed_run(item: Item, parent: Parent, wanted: str) -> tuple[JobRecord | None, str]:
    """The record of this run under another hashed name of the same ``krmfn.dev/job-base-name``."""
    base = item.annotations.get(JOB_BASE_NAME)
    if not isinstance(base, str) or not base:
        return None, ""
    prefix = f"{item.key.namespace}/{trim_for_suffix(base, JOB_NAME_MAX - 9)}-"
    for ref, record in sorted(parent.jobs.items()):
        suffix = ref.removeprefix(prefix)
        if ref.startswith(prefix) and len(suffix) == 8 and same_run(record, wanted, item.obj):
            return record, ref.partition("/")[2]
    return None, ""


def same_run(record: JobRecord, wanted: str, job: dict[str, Any]) -> bool:
    """Whether ``record`` is of the run ``job`` would start (a record of krmfn 0.1 hashed the whole spec)."""
    return record.spec_hash == (legacy_spec_hash(job) if record.legacy else wanted)


@dataclass(frozen=True)
class Kept:
    """A live Job kept as it ran: its outcome so far and why it is not run again."""

    outcome: Outcome
    why: str


def same_triggers(item: Item, live: dict[str, Any] | None, wanted: str, forced: bool) -> Kept | None:
    """A Job with triggers whose changed spec the API server refused in place, when the live Job of this
    name ran for the same trigger values (its run hash is ``wanted``, its name carries their hash): it is
    that run, and what changed lies outside the triggers, which by the Job's own word does not run it
    again. Completed, it is done; running, it is waited for; failed, the failure stands (``forced``
    re-creates a failed one, as asked). None in every other case, which ``spec_changed`` explains."""
    triggered = item.triggered
    notes = ((live or {}).get("metadata") or {}).get("annotations") or {}
    if triggered is None or live is None or notes.get(SPEC_HASH) != wanted:
        return None
    base = item.annotations.get(JOB_BASE_NAME)
    carried = name_hash(item.key.name, base) if isinstance(base, str) and base else None
    if carried is not None and carried != triggered.name_hash:
        return None  # a trigger changed after hash-job-names named the Job: not the same run
    outcome = outcome_of(live)
    same = f"under this name for the same triggers ({HASH_FROM}: {triggered.text}); the spec changed since"
    if outcome == "completed":
        return Kept(
            "completed",
            f"completed {same} only outside them, which does not run it again: the live Job is kept as it "
            "ran (change a trigger to run it again)",
        )
    if outcome == "failed":
        if forced:
            return None
        return Kept(
            "failed",
            f"failed {same} only outside them, which does not run it again: change a trigger, or annotate "
            f"it {RECREATE_ON_FAILURE}: enabled to retry it",
        )
    return Kept(
        "started",
        f"running {same} only outside them; those changes are not applied (a Job's pod template cannot "
        "change): waited for as it runs",
    )


def spec_changed(item: Item, cause: str) -> str:
    """Why a Job's rendered spec differs from the live Job of the same name in fields a Job cannot
    change (``cause``: the API server's words), and how to fix the layout."""
    why = cause.removeprefix("invalid: ")
    fields = f"the rendered spec differs from the live Job's in fields a Job cannot change ({why})"
    force = f"or annotate the Job {FORCE}: enabled to delete and re-create it"
    base = item.annotations.get(JOB_BASE_NAME)
    spec = item.obj.get("spec")
    if not isinstance(base, str) or not base or not isinstance(spec, dict):
        return f"{fields}; give every change a new Job name with hash-job-names, {force}"
    triggered = item.triggered
    carried = name_hash(item.key.name, base)
    actual = triggered.name_hash if triggered is not None else spec_hash(spec)
    hashed = (
        "the rendered spec" if triggered is None else f"the Job's triggers ({HASH_FROM}: {triggered.text})"
    )
    if carried is not None and carried != actual:
        verb = "hashes" if triggered is None else "hash"
        return (
            f"{fields}: the name's hash {carried} does not match {hashed}, which {verb} to "
            f"{actual}, so something changed the Job after hash-job-names named it (an overlay's image, "
            "label or patch) and the changed Job kept the live one's name. Run hash-job-names after every "
            "transformer that changes the Job (in the overlay that sets the final image, after set-image), "
            f"{force}"
        )
    if triggered is not None:
        return (
            f"{fields}: the live Job under this hashed name ran for other values of {hashed} (its "
            f"{SPEC_HASH} differs), or was applied by another tool; delete it, {force}"
        )
    return (
        f"{fields}: the live Job under this hashed name runs another spec, applied from a render whose "
        "name did not match its spec (a Job changed after hash-job-names, since fixed) or changed on the "
        f"cluster; delete it, {force}"
    )
