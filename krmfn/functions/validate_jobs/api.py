"""The API server's own validation of batch/v1 Job and CronJob fields (pkg/apis/batch/validation), as
findings of the rule ``api-invalid``: what ``kubectl apply`` would be refused for, found at render time.

The field paths and wordings are the API server's. What is covered: every field of JobSpec and
CronJobSpec (counts, limits, completion modes, per-index back-off, podFailurePolicy, successPolicy,
podReplacementPolicy, managedBy, selectors, concurrencyPolicy, history limits, startingDeadlineSeconds)
and of the pod template the containers (present, named with unique DNS-1123 labels). Names, schedules,
time zones and restartPolicy have their own rules (rules.py); podFailurePolicy and successPolicy are
job_policies.py's. tests/cluster/test_validate_jobs_api.py proves the verdicts equal the API server's, by
a server-side dry run of generated invalid objects.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from krmfn.functions.validate_jobs.api_problems import (
    Problem,
    at_least_zero,
    at_most,
    is_int,
    quoted,
    supported,
)
from krmfn.functions.validate_jobs.job_policies import pod_failure_policy, success_policy
from krmfn.k8s.names import is_label, is_subdomain
from krmfn.k8s.podtemplates import TEMPLATE_CONTAINER_LISTS

RULE = "api-invalid"
MAX_PARALLELISM_INDEXED = 100_000
MAX_FAILED_INDEXES = 100_000
COMPLETIONS_SOFT_LIMIT = 100_000
PARALLELISM_HIGH_COMPLETIONS = 10_000
MAX_FAILED_INDEXES_HIGH_COMPLETIONS = 10_000
MAX_MANAGED_BY = 63
REPLACEMENT_POLICIES = ("Failed", "TerminatingOrFailed")
COMPLETION_MODES = ("NonIndexed", "Indexed")
CONCURRENCY_POLICIES = ("Allow", "Forbid", "Replace")
INT32_FIELDS = (
    "parallelism",
    "completions",
    "backoffLimit",
    "backoffLimitPerIndex",
    "maxFailedIndexes",
)
INT64_FIELDS = ("activeDeadlineSeconds", "ttlSecondsAfterFinished")
_PATH = re.compile(r"^[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$")


def _nonnegative(spec: dict[str, Any], path: str, names: tuple[str, ...]) -> Iterator[Problem]:
    for name in names:
        value = spec.get(name)
        if value is None:
            continue
        if not is_int(value):
            yield Problem(f"{path}.{name}", f"Invalid value: {quoted(value)}: must be an integer", value)
        elif value < 0:
            yield at_least_zero(f"{path}.{name}", value)


def _int(spec: dict[str, Any], name: str) -> int | None:
    value = spec.get(name)
    return value if is_int(value) else None


def job_spec_problems(spec: Any, path: str, *, template_of_cronjob: bool = False) -> Iterator[Problem]:
    """Problems of a JobSpec at ``path`` (``spec`` or ``spec.jobTemplate.spec``)."""
    if not isinstance(spec, dict):
        yield Problem(path, "Required value")
        return
    yield from _nonnegative(spec, path, INT32_FIELDS + INT64_FIELDS)
    defaulted = not template_of_cronjob  # a Job is defaulted; a CronJob's template is not
    completions = _completions(spec, defaulted)
    if spec.get("maxFailedIndexes") is not None and spec.get("backoffLimitPerIndex") is None:
        yield Problem(f"{path}.backoffLimitPerIndex", "Required value: when maxFailedIndexes is specified")
    managed = spec.get("managedBy")
    if managed is not None:
        yield from _managed_by(managed, f"{path}.managedBy")
    mode = spec.get("completionMode")
    if mode is not None and mode not in COMPLETION_MODES:
        yield supported(f"{path}.completionMode", mode, COMPLETION_MODES)
    if mode == "Indexed":
        yield from _indexed(spec, path, defaulted)
    if mode in (None, "NonIndexed"):
        for name in ("backoffLimitPerIndex", "maxFailedIndexes"):
            if spec.get(name) is not None:
                yield Problem(
                    f"{path}.{name}",
                    f"Invalid value: {quoted(spec[name])}: requires indexed completion mode",
                    spec[name],
                )
    policy = spec.get("podFailurePolicy")
    if policy is not None:
        yield from pod_failure_policy(spec, policy, f"{path}.podFailurePolicy")
    success = spec.get("successPolicy")
    if success is not None:
        if mode != "Indexed":
            yield Problem(f"{path}.successPolicy", "Invalid value: requires indexed completion mode")
        else:
            yield from success_policy(success, completions, f"{path}.successPolicy")
    replacement = spec.get("podReplacementPolicy")
    if replacement is not None:
        allowed = ("Failed",) if policy is not None else REPLACEMENT_POLICIES
        if replacement not in allowed:
            yield supported(f"{path}.podReplacementPolicy", replacement, allowed)
    if not isinstance(spec.get("suspend"), (bool, type(None))):
        yield Problem(f"{path}.suspend", f"Invalid value: {quoted(spec['suspend'])}: must be a boolean")
    yield from _template(spec.get("template"), f"{path}.template")
    if template_of_cronjob:
        if spec.get("selector") is not None:
            yield Problem(f"{path}.selector", "Invalid value: `selector` will be auto-generated")
        if spec.get("manualSelector") is True:
            yield Problem(
                f"{path}.manualSelector", 'Unsupported value: true: supported values: "nil", "false"'
            )
    else:
        yield from _selector(spec, path)


def _completions(spec: dict[str, Any], defaulted: bool) -> int | None:
    """``completions`` as the API server sees it: a Job's is defaulted to 1 when neither it nor
    ``parallelism`` is given (a CronJob's jobTemplate is validated as written)."""
    if defaulted and spec.get("completions") is None and spec.get("parallelism") is None:
        return 1
    return _int(spec, "completions")


def _indexed(spec: dict[str, Any], path: str, defaulted: bool) -> Iterator[Problem]:
    completions, parallelism = _completions(spec, defaulted), _int(spec, "parallelism")
    per_index, max_failed = _int(spec, "backoffLimitPerIndex"), _int(spec, "maxFailedIndexes")
    if completions is None and spec.get("completions") is None:
        yield Problem(f"{path}.completions", "Required value: when completion mode is Indexed")
    if parallelism is not None and parallelism > MAX_PARALLELISM_INDEXED:
        yield at_most(
            f"{path}.parallelism", parallelism, f"{MAX_PARALLELISM_INDEXED} when completion mode is Indexed"
        )
    if completions is not None and max_failed is not None and max_failed > completions:
        yield at_most(f"{path}.maxFailedIndexes", max_failed, "completions")
    if max_failed is not None and max_failed > MAX_FAILED_INDEXES:
        yield at_most(f"{path}.maxFailedIndexes", max_failed, str(MAX_FAILED_INDEXES))
    if completions is not None and completions > COMPLETIONS_SOFT_LIMIT and per_index is not None:
        if spec.get("maxFailedIndexes") is None:
            yield Problem(
                f"{path}.maxFailedIndexes",
                f"Required value: must be specified when completions is above {COMPLETIONS_SOFT_LIMIT}",
            )
        if parallelism is not None and parallelism > PARALLELISM_HIGH_COMPLETIONS:
            yield at_most(
                f"{path}.parallelism",
                parallelism,
                f"{PARALLELISM_HIGH_COMPLETIONS} when completions are above {COMPLETIONS_SOFT_LIMIT} and "
                "used with backoff limit per index",
            )
        if max_failed is not None and max_failed > MAX_FAILED_INDEXES_HIGH_COMPLETIONS:
            yield Problem(
                f"{path}.maxFailedIndexes",
                f"Invalid value: {max_failed}: must be less than or "
                f"equal to {MAX_FAILED_INDEXES_HIGH_COMPLETIONS} when completions are above "
                f"{COMPLETIONS_SOFT_LIMIT} and used with backoff limit per index",
                max_failed,
            )


def _managed_by(value: Any, path: str) -> Iterator[Problem]:
    text = str(value)
    host, slash, rest = text.partition("/")
    if not isinstance(value, str) or not slash or not is_subdomain(host) or not rest or not _PATH.match(rest):
        yield Problem(
            path,
            f'Invalid value: {quoted(value)}: must be a domain-prefixed path (such as "acme.io/foo")',
            value,
        )
    if len(text) > MAX_MANAGED_BY:
        yield Problem(path, f"Too long: may not be more than {MAX_MANAGED_BY} bytes", value)


def _selector(spec: dict[str, Any], path: str) -> Iterator[Problem]:
    """A Job's selector is generated from its uid unless ``manualSelector``; then it is required and must
    match the template's labels."""
    selector = spec.get("selector")
    manual = spec.get("manualSelector") is True
    if not manual and selector is not None:
        # The API server adds its own controller-uid to it, which then matches no generated label set.
        yield Problem(f"{path}.selector", "Invalid value: `selector` not auto-generated")
    if manual and not selector:
        yield Problem(f"{path}.selector", "Required value")
    if selector is None and not manual:
        return
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    if not _matches(selector, labels):
        yield Problem(
            f"{path}.template.metadata.labels", "Invalid value: `selector` does not match template `labels`"
        )


def _matches(selector: Any, labels: Any) -> bool:
    """Whether ``selector`` selects ``labels``; an empty or missing selector selects nothing."""
    if not isinstance(selector, dict) or not selector or not isinstance(labels, dict):
        return False
    wanted = selector.get("matchLabels") or {}
    if not isinstance(wanted, dict) or any(labels.get(k) != v for k, v in wanted.items()):
        return False
    return _expressions_match(selector, labels)


def _expressions_match(selector: dict[str, Any], labels: dict[str, Any]) -> bool:
    for expr in selector.get("matchExpressions") or []:
        if not isinstance(expr, dict):
            return False
        key, op, values = str(expr.get("key")), expr.get("operator"), expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def _template(template: Any, path: str) -> Iterator[Problem]:
    pod = (template or {}).get("spec") if isinstance(template, dict) else None
    if not isinstance(pod, dict):
        yield Problem(f"{path}.spec.containers", "Required value")
        return
    containers = pod.get("containers")
    if not isinstance(containers, list) or not containers:
        yield Problem(f"{path}.spec.containers", "Required value")
    seen: set[str] = set()
    for group in reversed(TEMPLATE_CONTAINER_LISTS):  # the API server's order: a clash is an init's
        for i, container in enumerate(pod.get(group) or []):
            where = f"{path}.spec.{group}[{i}]"
            name = container.get("name") if isinstance(container, dict) else None
            if not name:
                yield Problem(f"{where}.name", "Required value")
                continue
            if not isinstance(name, str) or not is_label(name):
                yield Problem(
                    f"{where}.name",
                    f"Invalid value: {quoted(name)}: a lowercase RFC 1123 label must "
                    "consist of lower case alphanumeric characters or '-'",
                    name,
                )
            elif name in seen:
                yield Problem(f"{where}.name", f"Duplicate value: {quoted(name)}", name)
            seen.add(str(name))


def cronjob_spec_problems(spec: Any) -> Iterator[Problem]:
    """Problems of a CronJobSpec other than its schedule and time zone (rules.py checks those)."""
    if not isinstance(spec, dict):
        return
    yield from _nonnegative(
        spec, "spec", ("startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit")
    )
    policy = spec.get("concurrencyPolicy")
    if policy is not None and policy != "" and policy not in CONCURRENCY_POLICIES:
        yield supported("spec.concurrencyPolicy", policy, CONCURRENCY_POLICIES)
    if not isinstance(spec.get("suspend"), (bool, type(None))):
        yield Problem("spec.suspend", f"Invalid value: {quoted(spec['suspend'])}: must be a boolean")
    template = spec.get("jobTemplate")
    job = template.get("spec") if isinstance(template, dict) else None
    yield from job_spec_problems(job, "spec.jobTemplate.spec", template_of_cronjob=True)
