"""What makes two Jobs the same run: the fields of a Job's spec the API server lets change in place.

The API server (pkg/apis/batch/validation, ``ValidateJobSpecUpdate``) refuses changes to ``selector``,
``template``, ``completions`` (except an Indexed Job's, in tandem with ``parallelism``),
``completionMode``, ``podFailurePolicy``, ``backoffLimitPerIndex``, ``managedBy`` and
``successPolicy``. Every other field of the spec may change on a live Job: those below. A change of
them alone is the same run, applied in place; anything else is a new Job (a new name from hash-job-names,
or a delete and re-create under ``krmfn.dev/force``).

The table is checked field by field against a real API server by
tests/cluster/test_job_mutability.py: each field listed is changed on a live, completed Job with a
server-side apply (accepted), and each immutable field is changed the same way (refused with "field is
immutable"). A field missing from the table is only conservative: the runner still asks the API server,
which applies the change in place when it may.
"""

from __future__ import annotations

from typing import Any

from krmfn.k8s.annotations import JOB_BASE_NAME

MUTABLE_SPEC_FIELDS = (
    "activeDeadlineSeconds",
    "backoffLimit",
    "maxFailedIndexes",
    "parallelism",
    "podReplacementPolicy",
    "suspend",
    "ttlSecondsAfterFinished",
)
IMMUTABLE_SPEC_FIELDS = (
    "backoffLimitPerIndex",
    "completionMode",
    "completions",
    "managedBy",
    "podFailurePolicy",
    "selector",
    "successPolicy",
    "template",
)


def run_identity(spec: Any) -> Any:
    """``spec`` without the fields that may change on a live Job: equal identities, same run."""
    if not isinstance(spec, dict):
        return spec
    return {k: v for k, v in spec.items() if k not in MUTABLE_SPEC_FIELDS}


def canonical_json(value: Any) -> str:
    import json  # imported here: set-steps uses this module without hashing (start-up time)

    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(value: Any, length: int) -> str:
    import hashlib

    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()[:length]


def ttl_warning(obj: Any, engine: str) -> str:
    """Why a Job with ``ttlSecondsAfterFinished`` is run again under ``engine`` (empty: it sets no TTL).
    ``krmfn apply`` remembers every Job it ran in its inventory, so a Job its TTL deleted stays deleted;
    Flux (ResourceSet), Argo CD and kpt live apply see a missing object and create it again."""
    if (
        not isinstance(obj, dict)
        or obj.get("kind") != "Job"
        or not str(obj.get("apiVersion", "")).startswith("batch/")
    ):
        return ""
    spec = obj.get("spec")
    if not isinstance(spec, dict) or spec.get("ttlSecondsAfterFinished") is None:
        return ""
    notes = (obj.get("metadata") or {}).get("annotations") or {}
    named = "a hash-named Job" if JOB_BASE_NAME in notes else "a Job"
    # Seen on the test control plane (tests/cluster/test_side_by_side_kpt_flux.py): with a TTL shorter
    # than the operator's health check takes, the step fails and every retry runs the Job once more.
    flux = (
        "; if the TTL deletes it before the Flux Operator's health check sees it complete, the step fails "
        "(NotFound, at the step's timeout) and every retry runs it again"
        if "Flux Operator" in engine
        else ""
    )
    return (
        f"ttlSecondsAfterFinished on {named}: once the TTL controller deletes it, {engine} re-creates "
        f"the missing Job, which runs again (only krmfn apply keeps a record of the Jobs it ran){flux}; "
        "remove the TTL when deploying with this engine"
    )
