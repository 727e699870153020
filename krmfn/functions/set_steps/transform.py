"""The transform: assign every resource to a step (assign.py), check the order (ordering.py), and write
the runner's annotations, plus depends-on and sync waves for the other engines (annotate.py)."""

from __future__ import annotations

from krmfn import ResourceList
from krmfn.functions.set_steps import ordering, runner_annotations, tools
from krmfn.functions.set_steps.annotate import (
    plan_depends_on,
    write_on_delete_steps,
    write_on_failure_steps,
    write_steps,
)
from krmfn.functions.set_steps.assign import assign
from krmfn.functions.set_steps.config import SetStepsConfig
from krmfn.k8s import dependson
from krmfn.k8s.annotations import APP
from krmfn.k8s.jobspec import ttl_warning
from krmfn.k8s.kobj import is_local_config, set_annotation
from krmfn.k8s.scopes import Scopes

"""The app's name, which ``krmfn apply`` names its inventory after (docs/runner.md)."""


def set_steps(rl: ResourceList, config: SetStepsConfig) -> None:
    for obj in rl.items:
        if not is_local_config(obj):
            runner_annotations.check(obj, rl.results)
    layout = tools.Layout(config)
    if config.order_from:
        layout = tools.layout(rl.items, config, rl.results)
        config = layout.config
    left_out = {id(obj) for obj in layout.left_out}
    items = [obj for obj in rl.items if id(obj) not in left_out]
    assigned = assign(items, config, rl.results, layout.placed)
    first_delete = len(config.steps) + len(config.on_failure)
    groups, failing = assigned[: len(config.steps)], assigned[len(config.steps) : first_delete]
    deleting = assigned[first_delete:]
    scopes = Scopes(items, config.cluster_scoped_kinds)
    ordering.unmatched_selectors(items, assigned, config, rl.results)
    ordering.check(groups, config, scopes, rl.results)
    depends_on = []
    if "depends-on" in config.emit:
        depends_on = plan_depends_on(groups, scopes, rl.results)
    if rl.results.has_errors:
        # All or nothing: a half-annotated package would deploy in a partly wrong order.
        rl.results.info("annotated no resource: fix the errors above")
        return
    if left_out:
        rl.items[:] = items
    write_steps(groups, config)
    write_on_failure_steps(failing, config)
    write_on_delete_steps(deleting, config)
    if config.app:
        for group in assigned:
            for obj in group:
                set_annotation(obj, APP, config.app)
    for obj, value in depends_on:
        set_annotation(obj, dependson.ANNOTATION, value)
    found_of = {"steps": groups, "onFailure": failing, "onDelete": deleting}
    for where, steps in ordering.config_kinds(config):
        for index, (step, group) in enumerate(zip(steps, found_of[where], strict=True)):
            if not group:
                rl.results.warning(
                    f"step {step.name!r} has no resources", field=f"functionConfig.{where}[{index}]"
                )
    _warn_unprotected_ttl(rl, config)
    count = sum(len(group) for group in assigned)
    extra = f" and {len(config.on_failure)} onFailure step(s)" if config.on_failure else ""
    extra += f" and {len(config.on_delete)} onDelete step(s)" if config.on_delete else ""
    rl.results.info(f"assigned {count} resource(s) to {len(config.steps)} step(s){extra}")


ENGINES = {"depends-on": "kpt live apply", "argocd": "Argo CD"}


def _warn_unprotected_ttl(rl: ResourceList, config: SetStepsConfig) -> None:
    """The steps are written for kpt live apply or Argo CD too: neither has krmfn apply's record of the
    Jobs it ran, so a Job deleted by its TTL is created and run again there."""
    engines = [ENGINES[e] for e in config.emit if e in ENGINES]
    if not engines:
        return
    for obj in rl.items:
        warning = ttl_warning(obj, " or ".join(engines))
        if warning and not is_local_config(obj):
            rl.results.warning(warning, obj, field="spec.ttlSecondsAfterFinished")
