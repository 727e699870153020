"""The runner behind ``krmfn apply`` and ``krmfn plan``.

    build_plan(objects, ...) -> Plan        group by step, order within a step (pure)
    health(obj) -> Health                   kstatus-like health of one live object (pure)
    Runner(api, options, emit).run(plan)    apply, wait, inventory, prune; reports typed events

The cluster is reached through ``cluster.api.Api`` (``cluster.kube.HttpApi`` in production); errors are the
``krmfn.runner.errors`` classes, all subclasses of ``krmfn.errors.RunnerError``. docs/runner.md is the
user's guide.

The names below are loaded on first use, so importing one submodule (``krmfn plan`` needs only plan.py)
does not load the engine.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from krmfn.runner.engine.engine import Options, Result, Runner
    from krmfn.runner.health.status import Health, health
    from krmfn.runner.plan import Plan, Step, build_plan

__all__ = ["Health", "Options", "Plan", "Result", "Runner", "Step", "build_plan", "health"]
_HOME = {
    "Options": "engine.engine", "Result": "engine.engine", "Runner": "engine.engine", "Plan": "plan",
    "Step": "plan", "build_plan": "plan", "Health": "health.status", "health": "health.status",
}  # fmt: skip


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"krmfn.runner.{_HOME[name]}"), name)
