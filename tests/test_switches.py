"""A per-object switch (``krmfn.dev/force``, ``krmfn.dev/recreate-on-failure``, or the Flux Operator's
name for each) is read alike by every reader: validate-jobs, ``krmfn export argocd`` and ``krmfn apply``.

validate-jobs once looked at krmfn's name only, exactly ``enabled``, and warned that a Job forced under
the Flux Operator's name would fail on its immutable spec (the runner forces it), and did not warn of a
Job recreated on failure without ``krmfn.dev/idempotent`` under ``Enabled`` (the runner recreates it).
One reader now (k8s/annotations.enabled); the matrix is every name of each switch x spellings of its
value. set-steps and ``krmfn export resourceset`` refused ``Enabled``, which the runner takes; they take
any case now, and the export writes the lower case the Flux Operator's exact reader of
``recreateOnFailure`` wants (``!= "enabled"`` in its resourceset_controller.go, v0.58.1).
"""

from __future__ import annotations

from typing import Any

import pytest

from krmfn.errors import InputError
from krmfn.export import argocd, resourceset
from krmfn.functions.set_steps import runner_annotations
from krmfn.functions.validate_jobs.rules import check
from krmfn.k8s.annotations import FORCES, RECREATES_ON_FAILURE, enabled, switch_value
from krmfn.k8s.jobtriggers import HASH_FROM
from krmfn.k8s.step_grouping import group
from krmfn.sdk.results import Results

VALUES = ["enabled", "Enabled", "ENABLED", "disabled", "Disabled", "", "true", "yes", "enabled "]
CASES = [(name, value) for name in (*FORCES, *RECREATES_ON_FAILURE) for value in VALUES]


def _on(value: str) -> bool:
    return value.lower() == "enabled"  # what krmfn apply does with the object (docs/runner.md, "Jobs")


def job(notes: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "migrate", "annotations": {HASH_FROM: "image", **notes}},
        "spec": {
            "backoffLimit": 1,
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "m", "image": "m:1"}]}},
        },
    }


@pytest.mark.parametrize(("name", "value"), CASES)
def test_the_one_reader_is_on_for_enabled_in_any_case_under_either_name(name: str, value: str) -> None:
    assert enabled({name: value}, FORCES + RECREATES_ON_FAILURE) is _on(value)
    assert enabled({name: value}, ()) is False


@pytest.mark.parametrize(("name", "value"), [(n, v) for n, v in CASES if n in FORCES])
def test_validate_jobs_takes_a_forced_unhashed_job_as_the_runner_does(name: str, value: str) -> None:
    rules = {finding.rule for finding in check(job({name: value}))}
    assert ("hash-from-unhashed" in rules) is not _on(value), rules


@pytest.mark.parametrize(("name", "value"), [(n, v) for n, v in CASES if n in RECREATES_ON_FAILURE])
def test_validate_jobs_warns_of_a_recreated_job_without_idempotent_as_the_runner_recreates_it(
    name: str, value: str
) -> None:
    rules = {finding.rule for finding in check(job({name: value}))}
    assert ("recreate-without-idempotent" in rules) is _on(value), rules


@pytest.mark.parametrize(("name", "value"), [(n, v) for n, v in CASES if n in FORCES])
def test_export_argocd_forces_a_synced_object_as_the_runner_does(name: str, value: str) -> None:
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "annotations": {name: value}},
    }
    (out,) = argocd.annotate(group([config]), hooks=False)
    options = str(out["metadata"]["annotations"].get(argocd.SYNC_OPTIONS, ""))
    assert ("Force=true" in options) is _on(value), options


def _valid(value: str) -> bool:
    return value.lower() in ("enabled", "disabled")  # the values krmfn apply gives a meaning


@pytest.mark.parametrize(("name", "value"), CASES)
def test_set_steps_takes_every_value_the_runner_gives_a_meaning_and_refuses_the_rest(
    name: str, value: str
) -> None:
    results = Results()
    runner_annotations.check(job({name: value}), results)
    assert results.has_errors is not _valid(value), [r.message for r in results]


@pytest.mark.parametrize(("name", "value"), CASES)
def test_export_resourceset_writes_the_operators_name_in_lower_case_or_refuses(name: str, value: str) -> None:
    obj = job({name: value})
    if not _valid(value):
        with pytest.raises(InputError, match=f"annotation {name} must be 'enabled' or 'disabled'"):
            resourceset.embed(obj)
        return
    notes = resourceset.embed(obj)["metadata"]["annotations"]
    theirs = (FORCES if name in FORCES else RECREATES_ON_FAILURE)[1]
    assert notes[theirs] == value.lower(), notes
    assert not set(notes) & {FORCES[0], RECREATES_ON_FAILURE[0]}, notes  # krmfn's names are not sent


@pytest.mark.parametrize("names", [FORCES, RECREATES_ON_FAILURE])
@pytest.mark.parametrize(("ours", "theirs"), [("Enabled", "enabled"), ("enabled", "Disabled")])
def test_both_names_agree_in_any_case_or_are_refused(names: tuple[str, str], ours: str, theirs: str) -> None:
    obj = job({names[0]: ours, names[1]: theirs})
    agree = switch_value(ours) == switch_value(theirs)
    results = Results()
    runner_annotations.check(obj, results)
    assert results.has_errors is not agree
    if agree:
        assert resourceset.embed(obj)["metadata"]["annotations"][names[1]] == "enabled"
    else:
        with pytest.raises(InputError, match="disagree; keep one of them"):
            resourceset.embed(obj)
