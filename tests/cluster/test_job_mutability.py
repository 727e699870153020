"""krmfn/k8s/jobspec.py's table, field by field, against the API server: every field it calls mutable is
accepted on a live Job by a server-side apply, every field it calls immutable is refused (422). The
runner relies on the table for the run hash: a wrong entry would skip a changed run or re-run a Job."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from krmfn.k8s.jobspec import IMMUTABLE_SPEC_FIELDS, MUTABLE_SPEC_FIELDS
from krmfn.runner.cluster.api import ApiStatusError, Resource
from krmfn.runner.cluster.kube import HttpApi, load_config

JOBS = Resource("batch", "v1", "Job", "jobs", True)
# An Indexed Job that sets every field, so that each one can be changed to another valid value. Suspended:
# nothing runs, yet the Job exists and the API server applies its update rules.
BASE: dict[str, Any] = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "table"},
    "spec": {
        "suspend": True,
        "completionMode": "Indexed",
        "completions": 4,
        "parallelism": 2,
        "backoffLimit": 3,
        "backoffLimitPerIndex": 1,
        "maxFailedIndexes": 1,
        "activeDeadlineSeconds": 600,
        "ttlSecondsAfterFinished": 600,
        "podReplacementPolicy": "Failed",
        "successPolicy": {"rules": [{"succeededCount": 4}]},
        "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "app:1"}]}},
    },
}
CHANGES: dict[str, Any] = {
    "activeDeadlineSeconds": 300,
    "backoffLimit": 4,
    "maxFailedIndexes": 2,
    "parallelism": 3,
    "podReplacementPolicy": "TerminatingOrFailed",
    "suspend": False,
    "ttlSecondsAfterFinished": 60,
    "backoffLimitPerIndex": 2,
    "completionMode": "NonIndexed",
    "completions": 5,
    "managedBy": "example.com/other-controller",
    "podFailurePolicy": {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]},
    "selector": {"matchLabels": {"app": "other"}},
    "successPolicy": {"rules": [{"succeededCount": 3}]},
    "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "app:2"}]}},
}


@pytest.fixture
def live_job(kubeconfig: Path, namespace: str) -> Iterator[tuple[HttpApi, dict[str, Any]]]:
    api = HttpApi(load_config(str(kubeconfig), None))
    base = copy.deepcopy(BASE)
    base["metadata"]["namespace"] = namespace
    api.apply(JOBS, base, field_manager="krmfn", force=False, dry_run=False)
    yield api, base
    api.close()


def test_the_table_lists_every_field_once() -> None:
    assert not set(MUTABLE_SPEC_FIELDS) & set(IMMUTABLE_SPEC_FIELDS)
    assert set(CHANGES) == set(MUTABLE_SPEC_FIELDS) | set(IMMUTABLE_SPEC_FIELDS)


@pytest.mark.parametrize("field", MUTABLE_SPEC_FIELDS)
def test_mutable_fields_change_in_place(live_job: tuple[HttpApi, dict[str, Any]], field: str) -> None:
    api, base = live_job
    changed = copy.deepcopy(base)
    changed["spec"][field] = CHANGES[field]
    applied, created = api.apply(JOBS, changed, field_manager="krmfn", force=False, dry_run=True)
    assert not created
    assert json.dumps(applied["spec"][field]) == json.dumps(CHANGES[field])


@pytest.mark.parametrize("field", IMMUTABLE_SPEC_FIELDS)
def test_immutable_fields_are_refused(live_job: tuple[HttpApi, dict[str, Any]], field: str) -> None:
    api, base = live_job
    changed = copy.deepcopy(base)
    changed["spec"][field] = CHANGES[field]
    with pytest.raises(ApiStatusError) as refused:
        api.apply(JOBS, changed, field_manager="krmfn", force=True, dry_run=True)
    assert refused.value.code == 422
    assert f"spec.{field}" in refused.value.message
