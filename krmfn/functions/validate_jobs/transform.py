"""The validator: run every rule (rules.py) over each Job and CronJob; it changes nothing."""

from __future__ import annotations

from krmfn import ResourceList
from krmfn.functions.validate_jobs.config import ValidateJobsConfig
from krmfn.functions.validate_jobs.rules import WORKLOAD_KINDS, check, hook_same_step, is_helm_hook, step_key
from krmfn.k8s.kobj import Obj, is_local_config
from krmfn.k8s.kustomize_names import Names

KINDS = ("Job", "CronJob")


def validate_jobs(rl: ResourceList, config: ValidateJobsConfig) -> None:
    counts = dict.fromkeys(KINDS, 0)
    names = Names(rl.items)
    deployed = Names(obj for obj in rl.items if not is_local_config(obj))
    workloads: dict[tuple[str, str, str], Obj] = {}
    for obj in rl.items:
        if obj.get("kind") in WORKLOAD_KINDS and not is_local_config(obj) and not is_helm_hook(obj):
            workloads.setdefault(step_key(obj), obj)
    for obj in rl.items:
        kind = obj.get("kind")
        if kind not in KINDS or not str(obj.get("apiVersion", "")).startswith("batch/"):
            continue
        if is_local_config(obj):
            continue
        counts[str(kind)] += 1
        findings = [*check(obj, names, deployed), *(hook_same_step(obj, workloads) if kind == "Job" else ())]
        for finding in findings:
            level = config.level(finding.rule)
            if level != "off":
                rl.results.add(
                    finding.message,
                    level,
                    obj,
                    field=finding.field,
                    current_value=finding.value,
                    tags={"rule": finding.rule},
                )
    errors = sum(r.severity == "error" for r in rl.results)
    warnings = sum(r.severity == "warning" for r in rl.results)
    rl.results.info(
        f"checked {counts['Job']} Job(s) and {counts['CronJob']} CronJob(s): "
        f"{errors} error(s), {warnings} warning(s)"
    )
