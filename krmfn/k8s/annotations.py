"""The krmfn.dev annotations that a function writes and another wing reads, spelled once.

It imports nothing of krmfn, so a function's start pays nothing for it (tests/test_startup_imports.py);
tests/test_annotation_names.py keeps every ``krmfn.dev/`` name that more than one module reads here.
"""

from __future__ import annotations

from collections.abc import Mapping

STEP = "krmfn.dev/step"
STEP_INDEX = "krmfn.dev/step-index"
STEP_TIMEOUT = "krmfn.dev/step-timeout"
WAIT = "krmfn.dev/wait"
ON_FAILURE = "krmfn.dev/on-failure"
ON_DELETE = "krmfn.dev/on-delete"
ON_TIMEOUT = "krmfn.dev/on-timeout"
"""``continue``: a step that times out is reported and recorded, and the run goes on (``fail``: the
default, the run stops). Not in step_grouping.STEP_ANNOTATIONS: the exports do not translate it
(docs/runner.md)."""
STEP_PIN = "krmfn.dev/step-pin"
APP = "krmfn.dev/app"
JOB_BASE_NAME = "krmfn.dev/job-base-name"
HASH_NAME = "krmfn.dev/hash-name"
FORCE = "krmfn.dev/force"
RECREATE_ON_FAILURE = "krmfn.dev/recreate-on-failure"
# set-steps, the runner and the exports take the Flux Operator's names for the same two annotations
FLUX_FORCE = "fluxcd.controlplane.io/force"
FLUX_RECREATE_ON_FAILURE = "fluxcd.controlplane.io/recreateOnFailure"
FORCES = (FORCE, FLUX_FORCE)
RECREATES_ON_FAILURE = (RECREATE_ON_FAILURE, FLUX_RECREATE_ON_FAILURE)


def enabled(notes: Mapping[str, object], names: tuple[str, ...]) -> bool:
    """A switch is on: ``enabled`` (in any case) under either of its names, as ``krmfn apply`` reads it,
    so the functions and the exports decide as the runner will."""
    return any(str(notes.get(name, "")).lower() == "enabled" for name in names)


def switch_value(value: object) -> str | None:
    """A switch's value as the Flux Operator's exact reader wants it (``enabled``, ``disabled``), from any
    case, as ``krmfn apply`` takes it; None for anything else (set-steps and the exports refuse it).
    The operator compares ``recreateOnFailure`` with ``enabled`` exactly, so the exports write this."""
    text = str(value).lower()
    return text if text in ("enabled", "disabled") else None
