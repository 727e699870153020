"""A Job's podFailurePolicy and successPolicy as the API server validates them (pkg/apis/batch/validation):
rules, actions, exit codes, pod conditions, succeeded indexes and counts; api.py calls them for a JobSpec."""

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
from krmfn.k8s.names import is_subdomain
from krmfn.k8s.podtemplates import TEMPLATE_CONTAINER_LISTS
from krmfn.numbers import whole

MAX_POLICY_RULES = 20
MAX_EXIT_CODES = 255
MAX_POD_CONDITIONS = 20
_INDEX_MAX = 2**63 - 1  # strconv.Atoi's int; a completion index above any completions is "too large"
MAX_SUCCEEDED_INDEXES = 64 * 1024
MAX_SUCCESS_RULES = 20
ACTIONS = ("Count", "FailIndex", "FailJob", "Ignore")
OPERATORS = ("In", "NotIn")
CONDITION_STATUSES = ("False", "True", "Unknown")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


def _container_names(spec: dict[str, Any]) -> set[str]:
    pod = ((spec.get("template") or {}).get("spec")) or {}
    names = set()
    for group in TEMPLATE_CONTAINER_LISTS:
        for container in pod.get(group) or []:
            if isinstance(container, dict) and isinstance(container.get("name"), str):
                names.add(container["name"])
    return names


def pod_failure_policy(spec: dict[str, Any], policy: Any, path: str) -> Iterator[Problem]:
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
            yield supported(f"{where}.action", action, ACTIONS)
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
        yield supported(f"{path}.operator", operator, OPERATORS)
    name = codes.get("containerName")
    if name is not None and name not in containers:
        yield Problem(
            f"{path}.containerName",
            f"Invalid value: {quoted(name)}: must be one of the container or "
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
        if not is_int(value):
            yield Problem(f"{path}.values[{j}]", f"Invalid value: {quoted(value)}: must be an integer", value)
            continue
        if operator == "In" and value == 0:
            yield Problem(f"{path}.values[{j}]", "Invalid value: 0: must not be 0 for the In operator", value)
        if value in seen:
            yield Problem(f"{path}.values[{j}]", f"Duplicate value: {value}", value)
        seen.add(value)
    ints = [v for v in values if is_int(v)]
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
            yield Problem(f"{where}.type", f"Invalid value: {quoted(kind)}: must be a qualified name", kind)
        status = pattern.get("status")
        if status and status not in CONDITION_STATUSES:  # no status: defaulted to True
            yield supported(f"{where}.status", status, CONDITION_STATUSES)


def _qualified_name(value: str) -> bool:
    prefix, slash, name = value.rpartition("/")
    if slash and (not prefix or not is_subdomain(prefix)):
        return False
    return 0 < len(name) <= 63 and bool(_QUALIFIED_NAME.match(name))


def success_policy(policy: Any, completions: int | None, path: str) -> Iterator[Problem]:
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
                        f"Invalid value: {quoted(indexes)}: error parsing succeededIndexes: {error}",
                        indexes,
                    )
        if count is not None:
            if not is_int(count):
                yield Problem(
                    f"{where}.succeededCount", f"Invalid value: {quoted(count)}: must be an integer"
                )
                continue
            if count < 0:
                yield at_least_zero(f"{where}.succeededCount", count)
            if completions is not None and count > completions:
                yield at_most(
                    f"{where}.succeededCount", count, f"{completions} (the number of specified completions)"
                )
            if indexes is not None and count > total:
                yield at_most(
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
