"""The API server's own validation of batch/v1 Job and CronJob fields (pkg/apis/batch/validation), as
findings of the rule ``api-invalid``: what ``kubectl apply`` would be refused for, found at render time.

The field paths and wordings are the API server's. What is covered: every field of JobSpec and
CronJobSpec (counts, limits, completion modes, per-index back-off, podFailurePolicy, successPolicy,
podReplacementPolicy, managedBy, selectors, concurrencyPolicy, history limits, startingDeadlineSeconds)
and of the pod template the containers (present, named with unique DNS-1123 labels). Names, schedules,
time zones and restartPolicy have their own rules (rules.py). tests/cluster/test_validate_jobs_api.py
proves the verdicts equal the API server's, by a server-side dry run of generated invalid objects.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from krmfn.k8snames import is_label, is_subdomain
from krmfn.numbers import whole
from krmfn.podtemplates import TEMPLATE_CONTAINER_LISTS
from krmfn.records import FrozenRecord

RULE = "api-invalid"
MAX_PARALLELISM_INDEXED = 100_000
MAX_FAILED_INDEXES = 100_000
COMPLETIONS_SOFT_LIMIT = 100_000
PARALLELISM_HIGH_COMPLETIONS = 10_000
MAX_FAILED_INDEXES_HIGH_COMPLETIONS = 10_000
MAX_POLICY_RULES = 20
MAX_EXIT_CODES = 255
MAX_POD_CONDITIONS = 20
MAX_MANAGED_BY = 63
_INDEX_MAX = 2**63 - 1  # strconv.Atoi's int; a completion index above any completions is "too large"
MAX_SUCCEEDED_INDEXES = 64 * 1024
MAX_SUCCESS_RULES = 20
ACTIONS = ("Count", "FailIndex", "FailJob", "Ignore")
OPERATORS = ("In", "NotIn")
CONDITION_STATUSES = ("False", "True", "Unknown")
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
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_PATH = re.compile(r"^[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$")


class Problem(FrozenRecord):
    """A field the API server would refuse, in its words."""

    __slots__ = _fields = ("field", "message", "value")

    def __init__(self, field: str, message: str, value: Any = None) -> None:
        self.field = field
        self.message = message
        self.value = value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _quoted(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value)


def _supported(path: str, value: Any, allowed: tuple[str, ...]) -> Problem:
    listed = ", ".join(f'"{a}"' for a in allowed)
    return Problem(path, f"Unsupported value: {_quoted(value)}: supported values: {listed}", value)


def _nonnegative(spec: dict[str, Any], path: str, names: tuple[str, ...]) -> Iterator[Problem]:
    for name in names:
        value = spec.get(name)
        if value is None:
            continue
        if not _is_int(value):
            yield Problem(f"{path}.{name}", f"Invalid value: {_quoted(value)}: must be an integer", value)
        elif value < 0:
            yield _at_least_zero(f"{path}.{name}", value)


def _int(spec: dict[str, Any], name: str) -> int | None:
    value = spec.get(name)
    return value if _is_int(value) else None


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
        yield _supported(f"{path}.completionMode", mode, COMPLETION_MODES)
    if mode == "Indexed":
        yield from _indexed(spec, path, defaulted)
    if mode in (None, "NonIndexed"):
        for name in ("backoffLimitPerIndex", "maxFailedIndexes"):
            if spec.get(name) is not None:
                yield Problem(
                    f"{path}.{name}",
                    f"Invalid value: {_quoted(spec[name])}: requires indexed completion mode",
                    spec[name],
                )
    policy = spec.get("podFailurePolicy")
    if policy is not None:
        yield from _pod_failure_policy(spec, policy, f"{path}.podFailurePolicy")
    success = spec.get("successPolicy")
    if success is not None:
        if mode != "Indexed":
            yield Problem(f"{path}.successPolicy", "Invalid value: requires indexed completion mode")
        else:
            yield from _success_policy(success, completions, f"{path}.successPolicy")
    replacement = spec.get("podReplacementPolicy")
    if replacement is not None:
        allowed = ("Failed",) if policy is not None else REPLACEMENT_POLICIES
        if replacement not in allowed:
            yield _supported(f"{path}.podReplacementPolicy", replacement, allowed)
    if not isinstance(spec.get("suspend"), (bool, type(None))):
        yield Problem(f"{path}.suspend", f"Invalid value: {_quoted(spec['suspend'])}: must be a boolean")
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


def _at_most(path: str, value: int, limit: str) -> Problem:
    """The API server's words for a number above its bound (``limit``: the bound, and when it holds)."""
    return Problem(path, f"Invalid value: {value}: must be less than or equal to {limit}", value)


def _at_least_zero(path: str, value: int) -> Problem:
    return Problem(path, f"Invalid value: {value}: must be greater than or equal to 0", value)


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
        yield _at_most(
            f"{path}.parallelism", parallelism, f"{MAX_PARALLELISM_INDEXED} when completion mode is Indexed"
        )
    if completions is not None and max_failed is not None and max_failed > completions:
        yield _at_most(f"{path}.maxFailedIndexes", max_failed, "completions")
    if max_failed is not None and max_failed > MAX_FAILED_INDEXES:
        yield _at_most(f"{path}.maxFailedIndexes", max_failed, str(MAX_FAILED_INDEXES))
    if completions is not None and completions > COMPLETIONS_SOFT_LIMIT and per_index is not None:
        if spec.get("maxFailedIndexes") is None:
            yield Problem(
                f"{path}.maxFailedIndexes",
                f"Required value: must be specified when completions is above {COMPLETIONS_SOFT_LIMIT}",
            )
        if parallelism is not None and parallelism > PARALLELISM_HIGH_COMPLETIONS:
            yield _at_most(
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
            f'Invalid value: {_quoted(value)}: must be a domain-prefixed path (such as "acme.io/foo")',
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


def _container_names(spec: dict[str, Any]) -> set[str]:
    pod = ((spec.get("template") or {}).get("spec")) or {}
    names = set()
    for group in TEMPLATE_CONTAINER_LISTS:
        for container in pod.get(group) or []:
            if isinstance(container, dict) and isinstance(container.get("name"), str):
                names.add(container["name"])
    return names


def _pod_failure_policy(spec: dict[str, Any], policy: Any, path: str) -> Iterator[Problem]:
    rules = policy.get("rules") if isinstance(policy, dict) else None
    if not isinstance(rules, list):
        yield Problem(f"{path}.rules", "Required value")
        return
    if len(rules) > MAX_POLICY_RULES:
        yield Problem(f"{path}.rules", f"Too many: {len(rules)}: must have at most {MAX_POLICY_RULES} items")
    containers = _container_names(spec)
    for i, rule in enumerate(rules):
        where = f"{path}.rules[{i}]"
        if not isinstance(rule, dict):
            yield Problem(where, "Invalid value: must be a mapping")
            continue
        action = rule.get("action")
        if not action:
            yield Problem(f"{where}.action", f"Required value: valid values: {list(ACTIONS)}")
        elif action == "FailIndex":
            if spec.get("backoffLimitPerIndex") is None:
                yield Problem(
                    f"{where}.action",
                    'Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set',
                    action,
                )
        elif action not in ACTIONS:
            yield _supported(f"{where}.action", action, ACTIONS)
        codes, conditions = rule.get("onExitCodes"), rule.get("onPodConditions")
        if codes is not None:
            yield from _exit_codes(codes, containers, f"{where}.onExitCodes")
        if conditions:
            yield from _pod_conditions(conditions, f"{where}.onPodConditions")
        if codes is not None and conditions:
            yield Problem(
                where, "Invalid value: specifying both OnExitCodes and OnPodConditions is not supported"
            )
        if codes is None and not conditions:
            yield Problem(
                where, "Invalid value: specifying one of OnExitCodes and OnPodConditions is required"
            )


def _exit_codes(codes: Any, containers: set[str], path: str) -> Iterator[Problem]:
    if not isinstance(codes, dict):
        yield Problem(path, "Invalid value: must be a mapping")
        return
    operator = codes.get("operator")
    if not operator:
        yield Problem(f"{path}.operator", f"Required value: valid values: {list(OPERATORS)}")
    elif operator not in OPERATORS:
        yield _supported(f"{path}.operator", operator, OPERATORS)
    name = codes.get("containerName")
    if name is not None and name not in containers:
        yield Problem(
            f"{path}.containerName",
            f"Invalid value: {_quoted(name)}: must be one of the container or "
            "initContainer names in the pod template",
            name,
        )
    values = codes.get("values")
    if not isinstance(values, list) or not values:
        yield Problem(f"{path}.values", "Invalid value: at least one value is required")
        return
    if len(values) > MAX_EXIT_CODES:
        yield Problem(f"{path}.values", f"Too many: {len(values)}: must have at most {MAX_EXIT_CODES} items")
    seen: set[Any] = set()
    for j, value in enumerate(values):
        if not _is_int(value):
            yield Problem(
                f"{path}.values[{j}]", f"Invalid value: {_quoted(value)}: must be an integer", value
            )
            continue
        if operator == "In" and value == 0:
            yield Problem(f"{path}.values[{j}]", "Invalid value: 0: must not be 0 for the In operator", value)
        if value in seen:
            yield Problem(f"{path}.values[{j}]", f"Duplicate value: {value}", value)
        seen.add(value)
    ints = [v for v in values if _is_int(v)]
    if ints != sorted(ints):
        yield Problem(f"{path}.values", "Invalid value: must be ordered", values)


def _pod_conditions(conditions: Any, path: str) -> Iterator[Problem]:
    if not isinstance(conditions, list):
        yield Problem(path, "Invalid value: must be a list")
        return
    if len(conditions) > MAX_POD_CONDITIONS:
        yield Problem(path, f"Too many: {len(conditions)}: must have at most {MAX_POD_CONDITIONS} items")
    for j, pattern in enumerate(conditions):
        where = f"{path}[{j}]"
        if not isinstance(pattern, dict):
            yield Problem(where, "Invalid value: must be a mapping")
            continue
        kind = pattern.get("type")
        if not isinstance(kind, str) or not _qualified_name(kind):
            yield Problem(f"{where}.type", f"Invalid value: {_quoted(kind)}: must be a qualified name", kind)
        status = pattern.get("status")
        if status and status not in CONDITION_STATUSES:  # no status: defaulted to True
            yield _supported(f"{where}.status", status, CONDITION_STATUSES)


def _qualified_name(value: str) -> bool:
    prefix, slash, name = value.rpartition("/")
    if slash and (not prefix or not is_subdomain(prefix)):
        return False
    return 0 < len(name) <= 63 and bool(_QUALIFIED_NAME.match(name))


def _success_policy(policy: Any, completions: int | None, path: str) -> Iterator[Problem]:
    rules = policy.get("rules") if isinstance(policy, dict) else None
    if not isinstance(rules, list) or not rules:
        yield Problem(
            f"{path}.rules",
            "Required value: at least one rules must be specified when the successPolicy is specified",
        )
        return
    if len(rules) > MAX_SUCCESS_RULES:
        yield Problem(f"{path}.rules", f"Too many: {len(rules)}: must have at most {MAX_SUCCESS_RULES} items")
    for i, rule in enumerate(rules):
        where = f"{path}.rules[{i}]"
        if not isinstance(rule, dict):
            yield Problem(where, "Invalid value: must be a mapping")
            continue
        count, indexes = rule.get("succeededCount"), rule.get("succeededIndexes")
        if count is None and indexes is None:
            yield Problem(
                where, "Required value: at least one of succeededCount or succeededIndexes must be specified"
            )
        total = 0
        if indexes is not None:
            if not isinstance(indexes, str):
                yield Problem(f"{where}.succeededIndexes", "Invalid value: must be a string", indexes)
            else:
                if len(indexes) > MAX_SUCCEEDED_INDEXES:
                    yield Problem(
                        f"{where}.succeededIndexes",
                        f"Too long: may not be more than {MAX_SUCCEEDED_INDEXES} bytes",
                    )
                total, error = indexes_count(indexes, completions or 0)
                if error:
                    yield Problem(
                        f"{where}.succeededIndexes",
                        f"Invalid value: {_quoted(indexes)}: error parsing succeededIndexes: {error}",
                        indexes,
                    )
        if count is not None:
            if not _is_int(count):
                yield Problem(
                    f"{where}.succeededCount", f"Invalid value: {_quoted(count)}: must be an integer"
                )
                continue
            if count < 0:
                yield _at_least_zero(f"{where}.succeededCount", count)
            if completions is not None and count > completions:
                yield _at_most(
                    f"{where}.succeededCount", count, f"{completions} (the number of specified completions)"
                )
            if indexes is not None and count > total:
                yield _at_most(
                    f"{where}.succeededCount",
                    count,
                    f"{total} (the number of indexes in the specified succeededIndexes field)",
                )


def indexes_count(text: str, completions: int) -> tuple[int, str]:
    """(number of indexes, error) of an index list such as ``1,3-5``: intervals ascending, apart, within
    ``completions``, as the API server parses ``succeededIndexes``."""
    total, previous = 0, -1
    if not text:
        return 0, ""
    for part in text.split(","):
        low_text, dash, high_text = part.partition("-")
        low = whole(low_text, _INDEX_MAX)
        high = whole(high_text, _INDEX_MAX) if dash else low
        if low is None or high is None:
            return total, f'cannot convert string to integer for index: "{part}"'
        if high < low:
            return total, f"non-increasing order, previous: {low}, current: {high}"
        if high >= completions:
            return total, f"too large: {high}"
        if low <= previous:
            return total, f"overlapping or non-increasing order, previous: {previous}, current: {low}"
        total += high - low + 1
        previous = high
    return total, ""


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
                    f"Invalid value: {_quoted(name)}: a lowercase RFC 1123 label must "
                    "consist of lower case alphanumeric characters or '-'",
                    name,
                )
            elif name in seen:
                yield Problem(f"{where}.name", f"Duplicate value: {_quoted(name)}", name)
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
        yield _supported("spec.concurrencyPolicy", policy, CONCURRENCY_POLICIES)
    if not isinstance(spec.get("suspend"), (bool, type(None))):
        yield Problem("spec.suspend", f"Invalid value: {_quoted(spec['suspend'])}: must be a boolean")
    template = spec.get("jobTemplate")
    job = template.get("spec") if isinstance(template, dict) else None
    yield from job_spec_problems(job, "spec.jobTemplate.spec", template_of_cronjob=True)
