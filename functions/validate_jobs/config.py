"""The ValidateJobs functionConfig: a severity override per rule id (see rules.RULES)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from functions.validate_jobs.rules import RULES
from krmfn.config import from_configmap
from krmfn.errors import ConfigError

Level = Literal["error", "warning", "info", "off"]


@dataclass(frozen=True)
class ValidateJobsConfig:
    severity: dict[str, Level] = field(
        default_factory=dict,
        metadata={
            "help": "override the severity of a rule by its id: error, warning, info or off",
            "example": "{backoff-limit-default: off, ttl-unhashed-job: error}",
        },
    )

    def validate(self, path: str) -> None:
        for rule in self.severity:
            if rule not in RULES:
                raise ConfigError(
                    f"unknown rule {rule!r}; rules: {', '.join(RULES)}",
                    f"{path}.severity.{rule}" if path else f"severity.{rule}",
                )

    def level(self, rule: str) -> Level:
        return self.severity.get(rule, RULES[rule].severity)


def read_configmap(data: dict[str, Any]) -> ValidateJobsConfig:
    """The ConfigMap form (``kpt fn eval -- 'severity={ttl-unhashed-job: error}'``)."""
    # Plain str: the fidelity path hands over ruamel string subclasses, which the YAML reading skips.
    return from_configmap(
        ValidateJobsConfig, {k: str(v) if isinstance(v, str) else v for k, v in data.items()}
    )
