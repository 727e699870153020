"""The SetSteps functionConfig: plain data, checked as a whole by ``validate``."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from krmfn import Selector
from krmfn.duration import format_duration, parse_duration
from krmfn.errors import ConfigError

MAX_STEPS = 20  # as in Flux Operator's ResourceSet .spec.steps
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")

Emit = Literal["depends-on", "argocd"]
OrderFrom = Literal["", "helm", "argocd", "kapp"]


@dataclass(frozen=True)
class StepConfig:
    """One step: its name, timeout and the selectors of its resources."""

    name: str = field(metadata={"help": "DNS label, unique among the steps", "example": "pre-deploy"})
    timeout: str = field(
        default="5m",
        metadata={"help": "how long the runner waits for the step (Go duration)", "example": "10m"},
    )
    selectors: list[Selector] = field(
        default_factory=list, metadata={"help": "resources in this step (any selector matches)"}
    )
    on_timeout: str = field(
        default="fail",
        metadata={"help": "what krmfn apply does when the step times out: fail (stop the run) or continue "
                  "(record it, go on, exit 3); written as krmfn.dev/on-timeout", "example": "continue"},
    )  # fmt: skip

    def validate(self, path: str) -> None:
        if len(self.name) > 63 or not _DNS_LABEL.match(self.name):
            raise ConfigError(
                f"step name {self.name!r} is not a DNS-1123 label (lowercase letters, digits and '-', "
                "starting and ending with a letter or digit, at most 63 characters)",
                f"{path}.name",
            )
        timeout_ns(self.timeout, f"{path}.timeout")
        if self.on_timeout not in ("fail", "continue"):
            raise ConfigError(f'onTimeout must be "fail" or "continue", got {self.on_timeout!r}',
                              f"{path}.onTimeout")  # fmt: skip


@dataclass(frozen=True)
class SetStepsConfig:
    """The SetSteps functionConfig."""

    steps: list[StepConfig] = field(metadata={"help": "the ordered steps, at most 20"})
    default_step: str = field(
        default="",
        metadata={
            "help": "step for resources no selector matches; empty: such a resource is an error",
            "example": "deploy",
        },
    )
    wait: bool = field(
        default=True,
        metadata={"help": "health-check the final step too (krmfn.dev/wait on its resources)"},
    )
    app: str = field(
        default="",
        metadata={
            "help": "the app's name, written as krmfn.dev/app on every resource; krmfn apply names its "
            "inventory (the ApplySet that prune works from) after it",
            "example": "shop",
        },
    )
    emit: list[Emit] = field(
        default_factory=list,
        metadata={
            "help": "also write config.kubernetes.io/depends-on (kpt live) and/or "
            "argocd.argoproj.io/sync-wave (Argo CD)",
            "example": "[depends-on, argocd]",
        },
    )
    on_failure: list[StepConfig] = field(
        default_factory=list,
        metadata={
            "help": "steps krmfn apply applies (in order, each waited for) only when a step fails: a "
            "notification Job, a Job that restores the schema; annotated krmfn.dev/on-failure",
        },
    )
    on_delete: list[StepConfig] = field(
        default_factory=list,
        metadata={
            "help": "steps krmfn apply never applies and krmfn delete -f/-k applies (in order, each waited "
            "for) before the teardown: a backup, a drain, a deregistration, as Helm's pre-delete hooks; "
            "annotated krmfn.dev/on-delete",
        },
    )
    unmatched_selectors: Literal["error", "warning"] = field(
        default="error",
        metadata={
            "help": "a selector that matches nothing, when its step is then empty or an object of its "
            "kind sits in a later step: error (the order the config asks for is lost) or warning",
            "example": "warning",
        },
    )
    order_from: OrderFrom = field(
        default="",
        metadata={
            "help": "also read another tool's ordering annotations as steps: helm (helm.sh/hook and "
            "hook-weight), argocd (argocd.argoproj.io/hook and sync-wave) or kapp (change-group and "
            "change-rule); the config's steps hold the release's other objects",
            "example": "helm",
        },
    )
    cluster_scoped_kinds: list[str] = field(
        default_factory=list,
        metadata={
            "help": "extra cluster-scoped kinds for depends-on references, as Kind or group/Kind",
            "example": "[cert-manager.io/ClusterIssuer]",
        },
    )

    def validate(self, path: str) -> None:
        prefix = f"{path}." if path else ""
        if not self.steps:
            raise ConfigError("at least one step is required", f"{prefix}steps")
        if len(self.steps) > MAX_STEPS:
            raise ConfigError(f"{len(self.steps)} steps is over the limit of {MAX_STEPS}", f"{prefix}steps")
        for where, extra in (("onFailure", self.on_failure), ("onDelete", self.on_delete)):
            if len(extra) > MAX_STEPS:
                raise ConfigError(f"{len(extra)} steps is over the limit of {MAX_STEPS}", f"{prefix}{where}")
        seen: dict[str, str] = {}
        kinds = (("steps", self.steps), ("onFailure", self.on_failure), ("onDelete", self.on_delete))
        for where, steps in kinds:
            for index, step in enumerate(steps):
                if step.name in seen:
                    raise ConfigError(
                        f"duplicate step name {step.name!r} (also {seen[step.name]})",
                        f"{prefix}{where}[{index}].name",
                    )
                seen[step.name] = f"{where}[{index}]"
                if where != "steps" and step.on_timeout != "fail":
                    raise ConfigError(
                        f"an {where} step's timeout always fails the run: onTimeout applies to steps only",
                        f"{prefix}{where}[{index}].onTimeout",
                    )
        names = ", ".join(step.name for step in self.steps)
        for where, extra in (("onFailure", self.on_failure), ("onDelete", self.on_delete)):
            if self.default_step and self.default_step in {step.name for step in extra}:
                raise ConfigError(
                    f"{self.default_step!r} is an {where} step, which cannot be the default; steps: {names}",
                    f"{prefix}defaultStep",
                )
        if self.default_step and self.default_step not in seen:
            raise ConfigError(f"unknown step {self.default_step!r}; steps: {names}", f"{prefix}defaultStep")
        if self.app and (len(self.app) > 253 or not _DNS_SUBDOMAIN.match(self.app)):
            raise ConfigError(
                f"app {self.app!r} is not a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', "
                "starting and ending with a letter or digit, at most 253 characters): it names a Secret",
                f"{prefix}app",
            )
        if len(set(self.emit)) != len(self.emit):
            raise ConfigError("each value may appear once", f"{prefix}emit")
        if self.on_delete and "depends-on" in self.emit:
            # kpt live apply has no delete hooks: it would apply a drain or a deregistration at every apply.
            raise ConfigError(
                "onDelete steps cannot be written for kpt live apply (emit: [depends-on]): it has no step "
                "that runs only at deletion and would apply them at every apply; render the package for "
                "kpt live without onDelete",
                f"{prefix}onDelete",
            )
        if self.order_from == "argocd" and "argocd" in self.emit:
            # emit writes the sync waves orderFrom reads: a second render would read its own output.
            raise ConfigError(
                "orderFrom: argocd reads the sync waves that emit: [argocd] writes; use one of them",
                f"{prefix}orderFrom",
            )


def timeout_ns(text: str, where: str) -> int:
    try:
        nanos = parse_duration(text)
    except ValueError as err:
        raise ConfigError(f"{err}; expected a Go duration such as 5m, 1h30m or 90s", where) from None
    if nanos <= 0:
        raise ConfigError(f"timeout must be positive, got {text!r}", where)
    return nanos


def normalized_timeout(text: str) -> str:
    """The Go ``Duration.String()`` form, so equal timeouts are written identically (5m -> 5m0s)."""
    return format_duration(parse_duration(text))
