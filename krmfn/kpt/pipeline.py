"""Run several krmfn functions in-process over one parsed ResourceList, the way kpt runs a pipeline.

Each step sees the items the previous step left, reports into its own results (so every function still
adds exactly one summary), and the pipeline stops after the first step that reported an error, as
``kpt fn render`` does. ``krmfn render`` and the combined ``krmfn-render`` function both use it, so a
chain costs one parse and one serialization instead of one per function.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from krmfn.errors import DEBUG_ENV, KrmfnError, PipelineError
from krmfn.sdk.function import Function
from krmfn.sdk.resourcelist import ResourceList
from krmfn.sdk.results import Result, Results

# The combined function is not in the registry (it is not one of the chain's links), but a Kptfile
# may name it like any other krmfn function.
COMBINED = {"render": "krmfn.functions.render"}


@dataclass(frozen=True)
class PipelineEntry:
    """One function of a pipeline with its config."""

    name: str
    """Registry name (``set-image``) or ``render`` for the combined function."""
    config: Any = None
    """The raw functionConfig: the typed object, a ConfigMap, or None for defaults."""
    config_field: str = "functionConfig"
    """How result field paths name this step's config (the combined function nests configs)."""


@dataclass
class StepOutcome:
    """The results one pipeline entry reported."""

    step: PipelineEntry
    results: list[Result]

    @property
    def failed(self) -> bool:
        return any(r.severity == "error" for r in self.results)


@dataclass
class Outcome:
    """The outcome of each pipeline entry that ran."""

    steps: list[StepOutcome] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return any(s.failed for s in self.steps)

    @property
    def results(self) -> list[Result]:
        return [r for s in self.steps for r in s.results]


def load_function(name: str) -> Function[Any]:
    from krmfn.registry import CANONICAL_ORDER, load

    if name in COMBINED:
        found: Function[Any] = importlib.import_module(COMBINED[name]).FUNCTION
        return found
    try:
        return load(name)
    except KeyError:
        known = ", ".join([*CANONICAL_ORDER, *COMBINED])
        raise PipelineError(f"unknown krmfn function {name!r}; known: {known}") from None


def run(rl: ResourceList, steps: Sequence[PipelineEntry]) -> Outcome:
    """Run ``steps`` in order over ``rl``; afterwards ``rl.results`` holds every step's results."""
    outcome = Outcome()
    functions = [load_function(step.name) for step in steps]  # an unknown name fails before any edit
    for step, function in zip(steps, functions, strict=True):
        rl.results = Results()
        rl.function_config = step.config
        _run_one(function, rl, step.config)
        if step.config_field != "functionConfig":
            _renest(rl.results, step.config_field, step.config)
        outcome.steps.append(StepOutcome(step, list(rl.results)))
        if outcome.steps[-1].failed:
            break
    rl.results = Results(outcome.results)
    return outcome


def _run_one(function: Function[Any], rl: ResourceList, config: Any) -> None:
    try:
        function.run(rl, config)
    except KrmfnError as err:
        rl.results.error(str(err))
    except Exception as err:  # a bug in one step must still give a readable result, as in a subprocess
        if os.environ.get(DEBUG_ENV):
            raise
        rl.results.error(
            f"internal error in {function.name}: {type(err).__name__}: {err} "
            f"(set {DEBUG_ENV}=1 for a traceback)"
        )


def _renest(results: Results, prefix: str, config: Any) -> None:
    for result in results:
        if result.field.partition(".")[0].partition("[")[0] == "functionConfig":
            result.field = prefix + result.field.removeprefix("functionConfig")
        if result.obj is config:  # the step's config is a part of the enclosing one, which names it
            result.obj = None
