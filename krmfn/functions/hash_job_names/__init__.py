"""hash-job-names: name each Job after its spec, so a changed Job is a new Job and an unchanged one is not.

A Job's pod template is immutable; ``<base>-<hash8>`` turns "the spec changed" into "a new Job", which
``kubectl apply`` creates instead of failing on. See README.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from krmfn import Function, Selector
from krmfn.functions.hash_job_names.rename import hash_job_names


@dataclass(frozen=True)
class HashJobNamesConfig:
    selectors: list[Selector] = field(
        default_factory=list, metadata={"help": "which Jobs and CronJobs (default: all)"}
    )
    exclude: list[Selector] = field(
        default_factory=list, metadata={"help": "Jobs and CronJobs to leave alone"}
    )


FUNCTION = Function(
    name="hash-job-names",
    kind="HashJobNames",
    config=HashJobNamesConfig,
    transform=hash_job_names,
    summary="rename each Job to <base>-<hash of its spec>; check CronJob name lengths",
    example="""
apiVersion: fn.krmfn.dev/v1alpha1
kind: HashJobNames
metadata:
  name: hash-jobs
  annotations:
    config.kubernetes.io/local-config: "true"
exclude:
- name: one-off-backfill
""",
)


def main() -> int:
    return FUNCTION.main()
