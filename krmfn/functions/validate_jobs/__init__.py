"""validate-jobs: catch Job and CronJob mistakes at render time, before the API server or a deploy does.

A validator: it changes nothing and reports results (see rules.RULES for every rule id).
"""

from __future__ import annotations

from typing import NoReturn

from krmfn import Function
from krmfn.functions.validate_jobs.config import ValidateJobsConfig
from krmfn.functions.validate_jobs.rules import RULES
from krmfn.functions.validate_jobs.transform import validate_jobs

__all__ = ["FUNCTION", "RULES", "ValidateJobsConfig", "main"]


FUNCTION = Function(
    name="validate-jobs",
    kind="ValidateJobs",
    config=ValidateJobsConfig,
    transform=validate_jobs,
    summary="report Job and CronJob mistakes (restartPolicy, names, schedules, retries, TTL, deadlines)",
    example="""
apiVersion: fn.krmfn.dev/v1alpha1
kind: ValidateJobs
metadata: {name: jobs}
severity:
  concurrency-policy-default: info
  ttl-unhashed-job: error
""",
)


def main() -> NoReturn:
    """The console script ``krmfn-<name>``."""
    FUNCTION.console()
