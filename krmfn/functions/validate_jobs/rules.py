"""The rules of validate-jobs: each one an id, a default severity, and a check yielding findings.

Checks read a Job or CronJob and never change it. A finding is (rule id, message, field path, value).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

from krmfn.duration import SECOND, parse_duration
from krmfn.functions.validate_jobs import api
from krmfn.functions.validate_jobs.cron import ScheduleError, check_schedule
from krmfn.functions.validate_jobs.timezones import zone_problem
from krmfn.k8s.annotations import FORCE, FORCES, HASH_NAME, JOB_BASE_NAME, STEP, STEP_TIMEOUT, enabled
from krmfn.k8s.annotations import ON_DELETE as _ON_DELETE
from krmfn.k8s.annotations import ON_FAILURE as _ON_FAILURE
from krmfn.k8s.annotations import RECREATES_ON_FAILURE as RECREATE
from krmfn.k8s.annotations import STEP_INDEX as _STEP_INDEX
from krmfn.k8s.jobhash import name_hash, spec_hash
from krmfn.k8s.jobtriggers import FIELD as HASH_FROM_FIELD
from krmfn.k8s.jobtriggers import HASH_FROM, TriggerError, of_job
from krmfn.k8s.kobj import Obj, annotations_of, get_path, ref_of
from krmfn.k8s.kustomize_names import Names, as_built
from krmfn.k8s.names import indexed_completions, name_findings
from krmfn.records import FrozenRecord
from krmfn.terminal import cut


class Rule(FrozenRecord):
    """A rule's default severity and summary."""

    __slots__ = _fields = ("severity", "summary")

    def __init__(self, severity: Literal["error", "warning"], summary: str) -> None:
        self.severity = severity
        self.summary = summary


RULES: dict[str, Rule] = {
    "restart-policy": Rule("error", "pod template restartPolicy is not Never or OnFailure"),
    "name-invalid": Rule("error", "metadata.name is not a DNS-1123 subdomain"),
    "name-too-long": Rule("error", "Job name over 63 characters, CronJob name over 52"),
    "api-invalid": Rule("error", "a Job or CronJob field the API server refuses (its own validation)"),
    "schedule-invalid": Rule("error", "CronJob schedule is not a valid cron expression or descriptor"),
    "schedule-time-zone-prefix": Rule("error", "CronJob schedule uses TZ= or CRON_TZ="),
    "time-zone-invalid": Rule("error", "CronJob timeZone is not an IANA time zone name"),
    "backoff-limit-default": Rule("warning", "no explicit backoffLimit (the default 6 fails slowly)"),
    "ttl-unhashed-job": Rule("warning", "ttlSecondsAfterFinished on a Job whose name is not hashed"),
    "recreate-without-idempotent": Rule(
        "warning", "recreate-on-failure without the krmfn.dev/idempotent acknowledgement"
    ),
    "deadline-over-step-timeout": Rule("warning", "activeDeadlineSeconds longer than the step's timeout"),
    "backoff-over-step-timeout": Rule(
        "warning", "the Job controller's back-off before the last retry is longer than the step's timeout"
    ),
    "concurrency-policy-default": Rule("warning", "CronJob without an explicit concurrencyPolicy"),
    "helm-hook-same-step": Rule(
        "warning", "a Helm hook Job in one step with the release's workloads (set-steps orderFrom: helm)"
    ),
    "name-hash-mismatch": Rule(
        "error", "a hashed Job name whose hash is not its spec's (the Job changed after hash-job-names)"
    ),
    "hash-from-invalid": Rule("error", "a krmfn.dev/hash-from trigger that cannot be read or names nothing"),
    "hash-from-unhashed": Rule("warning", "krmfn.dev/hash-from on a Job whose name is not hashed"),
}

IDEMPOTENT = "krmfn.dev/idempotent"
_RESTART_VALUES = '"OnFailure", "Never"'
DEFAULT_BACKOFF_LIMIT = 6
POD_FAILURE_BACKOFF = 10
"""Seconds the Job controller waits before re-creating a pod after the first failure; it doubles with
each failure (pkg/controller/job: DefaultJobPodFailureBackOff), up to MAX_POD_FAILURE_BACKOFF."""
MAX_POD_FAILURE_BACKOFF = 600


class Finding(FrozenRecord):
    """One rule broken by one object, at one field."""

    __slots__ = _fields = ("rule", "message", "field", "value")

    def __init__(self, rule: str, message: str, field: str, value: Any = None) -> None:
        self.rule = rule
        self.message = message
        self.field = field
        self.value = value


def check(obj: Obj, names: Names | None = None, deployed: Names | None = None) -> Iterator[Finding]:
    """``names``: the ResourceList's objects, so a Job's name hash is checked over its spec as the
    build will write it (the names kustomize will rewrite, rewritten), as hash-job-names computed it;
    ``deployed``: those that are not local config, where a Job's triggers are found (default: ``names``)."""
    kind = str(obj.get("kind"))
    job_spec = "spec" if kind == "Job" else "spec.jobTemplate.spec"
    yield from _name(obj, kind)
    yield from _restart_policy(obj, job_spec)
    problems = (
        api.job_spec_problems(obj.get("spec"), "spec")
        if kind == "Job"
        else api.cronjob_spec_problems(obj.get("spec"))
    )
    for problem in problems:
        yield Finding(api.RULE, problem.message, problem.field, problem.value)
    if (
        get_path(obj, f"{job_spec}.backoffLimit") is None
        and get_path(obj, f"{job_spec}.backoffLimitPerIndex") is None
    ):
        yield Finding(
            "backoff-limit-default",
            "no backoffLimit: the default of 6 retries with exponential back-off can take minutes to "
            "declare a broken run failed; set it explicitly (0 to 2 for a migration)",
            f"{job_spec}.backoffLimit",
        )
    yield from _recreate(obj)
    if kind == "Job":
        yield from _name_hash(obj, names or Names([obj]), deployed or names or Names([obj]))
        yield from _hash_from_unhashed(obj)
        yield from _ttl(obj)
        yield from _deadline(obj)
        yield from _backoff(obj)
    else:
        yield from _cron(obj)


def _name(obj: Obj, kind: str) -> Iterator[Finding]:
    """The API server's rule for the name (krmfn/k8s/names.py, shared with hash-job-names)."""
    name = get_path(obj, "metadata.name")
    if not isinstance(name, str) or not name:
        return  # generateName: the API server picks the name
    indexed = indexed_completions(obj.get("spec")) if kind == "Job" else None
    for too_long, message in name_findings(kind, name, indexed):
        yield Finding("name-too-long" if too_long else "name-invalid", f'Invalid value: "{name}": {message}',
                      "metadata.name", name)  # fmt: skip


def _restart_policy(obj: Obj, job_spec: str) -> Iterator[Finding]:
    path = f"{job_spec}.template.spec.restartPolicy"
    policy = get_path(obj, path)
    if policy in (None, "", "Always"):
        yield Finding("restart-policy", f"Required value: valid values: {_RESTART_VALUES}", path, policy)
    elif policy not in ("OnFailure", "Never"):
        yield Finding(
            "restart-policy",
            f'Unsupported value: "{policy}": supported values: {_RESTART_VALUES}',
            path,
            policy,
        )
    elif policy == "OnFailure" and get_path(obj, f"{job_spec}.podFailurePolicy") is not None:
        yield Finding(
            "restart-policy",
            'Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified',
            path,
            policy,
        )


def _recreate(obj: Obj) -> Iterator[Finding]:
    notes = annotations_of(obj)
    on = [name for name in RECREATE if enabled(notes, (name,))]
    if on and str(notes.get(IDEMPOTENT, "")).lower() != "true":
        yield Finding(
            "recreate-without-idempotent",
            "recreate-on-failure re-runs a failed Job on every apply until it succeeds, repeating "
            "whatever it did before failing; if it is safe to repeat, acknowledge with the annotation "
            f'{IDEMPOTENT}: "true"',
            f"metadata.annotations.{on[0]}",
        )


def _name_hash(obj: Obj, names: Names, deployed: Names) -> Iterator[Finding]:
    try:
        triggered = of_job(obj, deployed)  # the triggers' hash when the Job names some (jobtriggers.py)
    except TriggerError as err:
        yield Finding("hash-from-invalid", str(err), HASH_FROM_FIELD, annotations_of(obj).get(HASH_FROM))
        return
    name, base, spec = get_path(obj, "metadata.name"), annotations_of(obj).get(JOB_BASE_NAME), obj.get("spec")
    if not isinstance(name, str) or not isinstance(base, str) or not base or not isinstance(spec, dict):
        return
    carried = name_hash(name, base)
    if carried is None:
        return  # renamed by hand since: hash-job-names takes the new name as the base next time
    if triggered is not None:
        if carried != triggered.name_hash:
            yield Finding(
                "name-hash-mismatch",
                f"the name's hash {carried} does not match the Job's triggers ({HASH_FROM}: "
                f"{triggered.text}), which hash to {triggered.name_hash}: something changed a trigger after "
                "hash-job-names named the Job (an overlay's image, a patch, the ConfigMap), so the changed "
                "trigger does not run the Job again; run hash-job-names after every transformer that "
                "changes the Job or what it uses",
                "metadata.name",
                name,
            )
        return
    actual = spec_hash(as_built(obj, names)["spec"])
    if carried != actual:
        yield Finding(
            "name-hash-mismatch",
            f"the name's hash {carried} does not match the spec, which hashes to {actual}: something "
            "changed the Job after hash-job-names named it (an overlay's image, label or patch), so a "
            "changed Job keeps an old name and the apply fails on the immutable spec, or an unchanged "
            "name hides a change; run hash-job-names after every transformer that changes the Job (in "
            "the overlay, after set-image and set-config-checksum)",
            "metadata.name",
            name,
        )


def _hash_from_unhashed(obj: Obj) -> Iterator[Finding]:
    """Triggers say when a Job runs again only through its name (or ``krmfn.dev/force``, which re-creates
    it under the same name): without either a changed trigger keeps the live Job's name, and the apply
    fails on its immutable spec."""
    notes = annotations_of(obj)
    if HASH_FROM not in notes or JOB_BASE_NAME in notes or enabled(notes, FORCES):
        return
    if notes.get(HASH_NAME) == "disabled":
        why = f"{HASH_NAME}: disabled"
    else:
        why = "no krmfn.dev/job-base-name: hash-job-names did not name it"
    yield Finding(
        "hash-from-unhashed",
        f"{HASH_FROM} on a Job whose name is not hashed ({why}): a changed trigger keeps the live Job's "
        f"name, and krmfn apply fails on its immutable spec; run hash-job-names, or annotate {FORCE}: "
        "enabled to re-create the Job when a trigger changes",
        HASH_FROM_FIELD,
        notes.get(HASH_FROM),
    )


def _ttl(obj: Obj) -> Iterator[Finding]:
    ttl = get_path(obj, "spec.ttlSecondsAfterFinished")
    if ttl is not None and JOB_BASE_NAME not in annotations_of(obj):
        yield Finding(
            "ttl-unhashed-job",
            "ttlSecondsAfterFinished on a Job whose name is not hashed: after the TTL controller deletes "
            "it, the next apply (or Flux reconciliation) creates it again and it runs again; run "
            "hash-job-names or remove the TTL",
            "spec.ttlSecondsAfterFinished",
            ttl,
        )


def _deadline(obj: Obj) -> Iterator[Finding]:
    deadline = get_path(obj, "spec.activeDeadlineSeconds")
    timeout = annotations_of(obj).get(STEP_TIMEOUT)
    if not isinstance(deadline, int) or isinstance(deadline, bool) or timeout is None:
        return
    try:
        nanos = parse_duration(str(timeout))
    except ValueError as err:
        yield Finding(
            "deadline-over-step-timeout",
            f"cannot compare with the step timeout: annotation {STEP_TIMEOUT}: {err}",
            f"metadata.annotations.{STEP_TIMEOUT}",
            str(timeout),
        )
        return
    if deadline * SECOND > nanos:
        yield Finding(
            "deadline-over-step-timeout",
            f"activeDeadlineSeconds {deadline} is longer than the step timeout {timeout}: the step times "
            "out while the Job may still be running; lower the deadline or raise the step timeout",
            "spec.activeDeadlineSeconds",
            deadline,
        )


def _cron(obj: Obj) -> Iterator[Finding]:
    schedule = get_path(obj, "spec.schedule")
    if not isinstance(schedule, str) or not schedule:
        yield Finding("schedule-invalid", "Required value", "spec.schedule", schedule)
    else:
        try:
            check_schedule(schedule)
        except ScheduleError as err:
            yield Finding(
                "schedule-invalid", f'Invalid value: "{schedule}": {err}', "spec.schedule", schedule
            )
        if "TZ" in schedule:
            yield Finding(
                "schedule-time-zone-prefix",
                f'Invalid value: "{schedule}": cannot use TZ or CRON_TZ in schedule, '
                "use timeZone field instead",
                "spec.schedule",
                schedule,
            )
    zone = get_path(obj, "spec.timeZone")
    if zone is not None:
        problem = zone_problem(str(zone))
        if problem:
            yield Finding("time-zone-invalid", f'Invalid value: "{zone}": {problem}', "spec.timeZone", zone)
    if get_path(obj, "spec.concurrencyPolicy") is None:
        yield Finding(
            "concurrency-policy-default",
            "no concurrencyPolicy: the default Allow starts a new run while the previous one is still "
            "going; set Forbid or Replace unless overlapping runs are safe",
            "spec.concurrencyPolicy",
        )


def backoff_seconds(retries: int) -> int:
    """The least time the Job controller waits between the first failure and the last retry: 10s, 20s,
    40s, ... (capped at 10 minutes) before each of ``retries`` re-created pods."""
    return sum(min(POD_FAILURE_BACKOFF * 2**i, MAX_POD_FAILURE_BACKOFF) for i in range(retries))


def _backoff(obj: Obj) -> Iterator[Finding]:
    """A step that times out before the Job's last retry could even start reports a timeout where the Job
    would have reported its real failure (or success). ``activeDeadlineSeconds`` bounds the Job, so it
    is the other rule's business (deadline-over-step-timeout)."""
    timeout = annotations_of(obj).get(STEP_TIMEOUT)
    found = obj.get("spec")
    spec: dict[str, Any] = found if isinstance(found, dict) else {}
    if timeout is None or spec.get("activeDeadlineSeconds") is not None:
        return
    limit = spec.get("backoffLimit", DEFAULT_BACKOFF_LIMIT if spec.get("backoffLimitPerIndex") is None else 0)
    per_index = spec.get("backoffLimitPerIndex")
    retries = per_index if isinstance(per_index, int) and spec.get("backoffLimit") is None else limit
    if not isinstance(retries, int) or isinstance(retries, bool) or retries <= 0:
        return
    try:
        nanos = parse_duration(str(timeout))
    except ValueError:
        return  # deadline-over-step-timeout reports an unreadable timeout
    waited = backoff_seconds(retries)
    if waited * SECOND > nanos:
        field = (
            "spec.backoffLimit"
            if "backoffLimit" in spec or per_index is None
            else "spec.backoffLimitPerIndex"
        )
        yield Finding(
            "backoff-over-step-timeout",
            f"with {retries} retries the Job controller waits at least {waited}s between pod failures "
            f"(10s, doubling, at most 10m each) before the last retry starts, longer than the step timeout "
            f"{timeout}: the step times out before the Job can fail or succeed; lower the retries, raise the "
            "step timeout, or bound the Job with activeDeadlineSeconds",
            field,
            retries,
        )


HELM_HOOK = "helm.sh/hook"
_HELM_ORDERED = {"pre-install", "pre-upgrade", "post-install", "post-upgrade"}
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet")


def step_key(obj: Obj) -> tuple[str, str, str]:
    """The step ``krmfn apply`` (or, for an on-delete step, ``krmfn delete``) applies an object in:
    (on-failure mark, on-delete mark, step index), since each kind of step is numbered from 0; an object
    without set-steps' annotations is in the one step of an unordered stream."""
    notes = annotations_of(obj)
    return (str(notes.get(_ON_FAILURE, "")), str(notes.get(_ON_DELETE, "")), str(notes.get(_STEP_INDEX, "")))


def is_helm_hook(obj: Obj) -> bool:
    """An object with a Helm hook event Helm orders around the release's objects at install or upgrade."""
    value = annotations_of(obj).get(HELM_HOOK)
    return isinstance(value, str) and bool(
        {event.strip().lower() for event in value.split(",")} & _HELM_ORDERED
    )


def hook_same_step(obj: Obj, workloads: dict[tuple[str, str, str], Obj]) -> Iterator[Finding]:
    """``workloads``: the first release workload (not a hook) of each step. Helm runs a pre-upgrade hook
    before the rollout and a post-upgrade one after it; krmfn applies one step's objects together, so a
    hook Job that set-steps did not order (no ``orderFrom: helm``) silently runs alongside the rollout."""
    if not is_helm_hook(obj):
        return
    other = workloads.get(step_key(obj))
    if other is None:
        return
    value = str(annotations_of(obj)[HELM_HOOK]).strip()
    step = annotations_of(obj).get(STEP)
    where = f"in step {str(step)!r}" if step is not None else "in the one step of an unordered stream"
    yield Finding(
        "helm-hook-same-step",
        f"a Helm hook ({HELM_HOOK}: {cut(value, 80)}) {where}, with {ref_of(other)}: krmfn applies "
        "them together, so the Job runs alongside the rollout, not before or after it as in Helm; "
        "set orderFrom: helm in set-steps (or select the Job into its own step)",
        f"metadata.annotations.{HELM_HOOK}",
        cut(value, 80),
    )
