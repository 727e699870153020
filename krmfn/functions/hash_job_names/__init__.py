"""hash-job-names: name each Job after its spec, so a changed Job is a new Job and an unchanged one is not.

A Job's pod template is immutable; ``<base>-<hash8>`` turns "the spec changed" into "a new Job", which
``kubectl apply`` creates instead of failing on. See README.md.
"""

from __future__ import annotations

from typing import NoReturn

from krmfn import Function
from krmfn.functions.hash_job_names.config import HashJobNamesConfig
from krmfn.functions.hash_job_names.transform import hash_job_names

FUNCTION = Function(
    name="hash-job-names",
    kind="HashJobNames",
    config=HashJobNamesConfig,
    transform=hash_job_names,
    summary="rename each Job to <base>-<hash of its spec or its hash-from triggers>; check CronJob names",
    example="""
apiVersion: fn.krmfn.dev/v1alpha1
kind: HashJobNames
metadata:
  name: hash-jobs
  annotations:
    config.kubernetes.io/local-config: "true"
exclude:
- name: one-off-backfill
triggers:
- selectors: [{name: db-migration}]
  hashFrom: [image:migrate, configmap/db-schema]
""",
)


def main() -> NoReturn:
    """The console script ``krmfn-<name>``."""
    FUNCTION.console()
