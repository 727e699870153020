"""The HashJobNames functionConfig: which Jobs and CronJobs to name after their spec."""

from __future__ import annotations

from dataclasses import dataclass, field

from krmfn import Selector


@dataclass(frozen=True)
class HashJobNamesConfig:
    """The HashJobNames functionConfig."""

    selectors: list[Selector] = field(
        default_factory=list, metadata={"help": "which Jobs and CronJobs (default: all)"}
    )
    exclude: list[Selector] = field(
        default_factory=list, metadata={"help": "Jobs and CronJobs to leave alone"}
    )
