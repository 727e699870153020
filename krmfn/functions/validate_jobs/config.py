"""The ValidateJobs functionConfig: a severity override per rule id (see rules.RULES)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from krmfn.errors import ConfigError
from krmfn.functions.validate_jobs.rules import RULES

Level = Literal["error", "warning", "info", "off"]


@dataclass(frozen=True)
class ValidateJobsConfig:
    """The ValidateJobs functionConfig."""

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
