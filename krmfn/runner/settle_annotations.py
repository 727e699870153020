"""The settle rule's annotations (``krmfn.dev/settle``, ``krmfn.dev/max-restarts``) on a Deployment,
StatefulSet or DaemonSet: read here, on the ground floor, so that the plan refuses a bad value before
anything is applied, and health/settle.py judges with the values the plan accepted."""

from __future__ import annotations

from typing import Any

from krmfn.duration import SECOND, parse_duration
from krmfn.numbers import whole
from krmfn.terminal import cut


def _shown(text: object) -> str:
    """An annotation's value as one line of at most 64 characters, for the error that quotes it."""
    return cut(" ".join(str(text).split()), 64)


KINDS = frozenset({("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "DaemonSet")})
"""The workloads the rule applies to (workloads.py lists their pods)."""
SETTLE = "krmfn.dev/settle"
MAX_RESTARTS = "krmfn.dev/max-restarts"
DEFAULT_WINDOW = 5.0
"""Seconds. Longer than it takes a kubelet to report a container that exited (its PLEG relists every
second) and restart it, with room for a loaded node; shorter than the first back-off (10 s)."""


class BadAnnotation(ValueError):
    """An annotation value that cannot be used; ``str()`` names the annotation and the value."""


def window_of(annotations: dict[str, Any]) -> float:
    """``krmfn.dev/settle`` in seconds (absent: ``DEFAULT_WINDOW``)."""
    text = annotations.get(SETTLE)
    if text is None:
        return DEFAULT_WINDOW
    try:
        return parse_duration(str(text)) / SECOND
    except ValueError as err:
        raise BadAnnotation(f"{SETTLE}: {_shown(text)!r} is not a duration ({err})") from None


def budget_of(annotations: dict[str, Any]) -> int | None:
    """``krmfn.dev/max-restarts`` (absent: None, no budget: the first crash loop fails)."""
    text = annotations.get(MAX_RESTARTS)
    if text is None:
        return None
    found = whole(str(text), 1_000_000)
    if found is None or found < 0:
        raise BadAnnotation(f"{MAX_RESTARTS}: {_shown(text)!r} is not a whole number from 0 to 1000000")
    return found
