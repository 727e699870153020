"""render: the whole krmfn chain (or any part of it) in one process and one parse, for kustomize users.

Each function runs when its camelCase key is present in the config (``{}`` for its defaults), in
canonical order, over the same in-memory objects; the first function that reports an error stops the
chain, as a Kptfile pipeline stops. The functions are loaded by name through the registry, never
imported here, so they stay independent of each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, NoReturn

from krmfn import Function, ResourceList
from krmfn.errors import ConfigError
from krmfn.kpt.pipeline import PipelineEntry, load_function, run
from krmfn.registry import CANONICAL_ORDER
from krmfn.sdk.config import API_VERSION, yaml_key

__all__ = ["FUNCTION", "RenderConfig", "main"]


def _help(name: str) -> str:
    return f"config of {name} without apiVersion/kind; {{}} runs it with its defaults"


@dataclass(frozen=True)
class RenderConfig:
    """The Render functionConfig: each present key runs that function."""

    render_inputs: dict[str, Any] | None = field(
        default=None, metadata={"help": _help("render-inputs"), "example": "{inputs: {tag: 6.7.0}}"}
    )
    set_image: dict[str, Any] | None = field(
        default=None,
        metadata={
            "help": _help("set-image"),
            "example": "{images: [{name: ghcr.io/stefanprodan/podinfo, newTag: 6.7.0}]}",
        },
    )
    set_config_checksum: dict[str, Any] | None = field(
        default=None, metadata={"help": _help("set-config-checksum"), "example": "{strict: true}"}
    )
    hash_job_names: dict[str, Any] | None = field(
        default=None, metadata={"help": _help("hash-job-names"), "example": "{}"}
    )
    set_steps: dict[str, Any] | None = field(
        default=None,
        metadata={
            "help": _help("set-steps"),
            "example": "{steps: [{name: pre-deploy, selectors: [{kind: Job}]}, {name: deploy}]}",
        },
    )
    validate_jobs: dict[str, Any] | None = field(
        default=None, metadata={"help": _help("validate-jobs"), "example": "{}"}
    )

    def validate(self, path: str) -> None:
        if all(getattr(self, f.name) is None for f in fields(self)):
            keys = ", ".join(yaml_key(f.name) for f in fields(self))
            raise ConfigError(f"name at least one function to run: {keys} (use {{}} for defaults)", path)


def steps_of(config: RenderConfig) -> list[PipelineEntry]:
    steps = []
    for name in CANONICAL_ORDER:
        attr = name.replace("-", "_")
        body = getattr(config, attr)
        if body is None:
            continue
        function = load_function(name)
        raw = {**body, "apiVersion": API_VERSION, "kind": function.kind}
        raw.setdefault("metadata", {"name": name})
        steps.append(PipelineEntry(name, raw, config_field=f"functionConfig.{yaml_key(attr)}"))
    return steps


def render(rl: ResourceList, config: RenderConfig) -> None:
    steps = steps_of(config)
    outcome = run(rl, steps)
    for done in outcome.steps:
        for result in done.results:
            result.message = f"{done.step.name}: {result.message}"
    ran = [s.step.name for s in outcome.steps]
    if outcome.failed and len(ran) < len(steps):
        skipped = ", ".join(s.name for s in steps[len(ran) :])
        rl.results.info(f"stopped after {ran[-1]} reported errors; did not run {skipped}")
    else:
        rl.results.info(f"ran {len(ran)} function(s): {', '.join(ran)}")


FUNCTION = Function(
    name="render",
    kind="Render",
    config=RenderConfig,
    transform=render,
    summary="run any of the krmfn functions in canonical order in one process",
    example="""
apiVersion: fn.krmfn.dev/v1alpha1
kind: Render
metadata: {name: staged-deploy}
renderInputs: {inputs: {tag: 6.7.0}}
setConfigChecksum: {}
hashJobNames: {}
setSteps:
  steps:
    - {name: pre-deploy, timeout: 5m, selectors: [{kind: Job, name: db-migration}]}
    - {name: deploy, timeout: 10m}
validateJobs: {}
""",
)


def main() -> NoReturn:
    """The console script ``krmfn-<name>``."""
    FUNCTION.console()
