"""The runner behind ``krmfn apply`` and ``krmfn plan``.

    build_plan(objects, ...) -> Plan        group by step, order within a step (pure)
    health(obj) -> Health                   kstatus-like health of one live object (pure)
    Runner(api, options, emit).run(plan)    apply, wait, inventory, prune; reports typed events

The cluster is reached through ``kube.Api`` (``kube.HttpApi`` in production); errors are the
``krmfn.runner.errors`` classes, all subclasses of ``krmfn.errors.RunnerError``.
"""

from krmfn.runner.engine import Options, Result, Runner
from krmfn.runner.plan import Plan, Step, build_plan
from krmfn.runner.status import Health, health

__all__ = ["Health", "Options", "Plan", "Result", "Runner", "Step", "build_plan", "health"]
