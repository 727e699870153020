"""The HashJobNames functionConfig: which Jobs and CronJobs to name after their spec, and which Jobs to
name after their triggers instead."""

from __future__ import annotations

from dataclasses import dataclass, field

from krmfn import Selector
from krmfn.errors import ConfigError
from krmfn.k8s.jobtriggers import TriggerError, parse_triggers


@dataclass(frozen=True)
class TriggerConfig:
    """The triggers of the Jobs its selectors match, as the ``krmfn.dev/hash-from`` annotation names them."""

    hash_from: list[str] = field(
        metadata={
            "help": "what runs the Job again: spec, image, image:<container>, configmap/<name>, "
            "secret/<name>, field:<path> (written into the Job's krmfn.dev/hash-from annotation)",
            "example": "[image, configmap/db-schema]",
        }
    )
    selectors: list[Selector] = field(
        default_factory=list, metadata={"help": "which Jobs (any selector matches; default: all)"}
    )
    exclude: list[Selector] = field(default_factory=list, metadata={"help": "Jobs this entry leaves alone"})

    @property
    def value(self) -> str:
        """The annotation's value: the one parser reads both."""
        return ",".join(self.hash_from)

    def validate(self, path: str) -> None:
        try:
            parse_triggers(self.value)
        except TriggerError as err:
            raise ConfigError(str(err), f"{path}.hashFrom" if path else "hashFrom") from None


@dataclass(frozen=True)
class HashJobNamesConfig:
    """The HashJobNames functionConfig."""

    selectors: list[Selector] = field(
        default_factory=list, metadata={"help": "which Jobs and CronJobs (default: all)"}
    )
    exclude: list[Selector] = field(
        default_factory=list, metadata={"help": "Jobs and CronJobs to leave alone"}
    )
    triggers: list[TriggerConfig] = field(
        default_factory=list,
        metadata={
            "help": "Jobs named after what should run them again rather than their whole spec; a Job's "
            "own krmfn.dev/hash-from annotation takes precedence"
        },
    )
