"""set-steps' ``steps[].onTimeout`` becomes ``krmfn.dev/on-timeout`` on the step's resources, and the
runner's plan reads it back (krmfn/k8s/step_grouping.py), each combination of config value x step kind."""

from __future__ import annotations

from typing import Any

import pytest

from krmfn.functions.set_steps import FUNCTION
from krmfn.runner.plan import build_plan
from krmfn.yaml.io import _load_fast, dump_fast

ITEMS = [
    {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "warm", "namespace": "apps"}},
    {"apiVersion": "v1", "kind": "ConfigMap",
     "metadata": {"name": "after", "namespace": "apps", "annotations": {"krmfn.dev/on-timeout": "continue"}}},
    {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "notify", "namespace": "apps"}},
]  # fmt: skip


def render(first: dict[str, Any], on_failure: dict[str, Any] | None = None) -> tuple[int, Any]:
    config = {"apiVersion": "fn.krmfn.dev/v1alpha1", "kind": "SetSteps", "metadata": {"name": "s"},
              "steps": [{"name": "warm", "selectors": [{"kind": "Job", "name": "warm"}], **first},
                        {"name": "deploy"}], "defaultStep": "deploy",
              "onFailure": [{"name": "notify", "selectors": [{"kind": "Job", "name": "notify"}],
                             **(on_failure or {})}]}  # fmt: skip
    text = dump_fast({"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": ITEMS,
                      "functionConfig": config})  # fmt: skip
    outcome = FUNCTION.outcome(text, "fast")
    return outcome.code, _load_fast(outcome.text)


@pytest.mark.parametrize("value", [None, "fail", "continue"])
def test_on_timeout_is_written_and_read_back(value: str | None) -> None:
    code, out = render({} if value is None else {"onTimeout": value})
    assert code == 0, out
    notes = {o["metadata"]["name"]: o["metadata"].get("annotations") or {} for o in out["items"]}
    assert notes["warm"].get("krmfn.dev/on-timeout") == ("continue" if value == "continue" else None)
    # A step that does not say continue loses an earlier render's annotation; on-failure steps never carry it.
    assert "krmfn.dev/on-timeout" not in notes["after"] and "krmfn.dev/on-timeout" not in notes["notify"]
    plan = build_plan(out["items"], namespace="apps", default_timeout=60)
    assert [(s.name, s.on_timeout) for s in plan.steps] == [
        ("warm", "continue" if value == "continue" else "fail"), ("deploy", "fail")
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("first", "on_failure"), [({"onTimeout": "skip"}, None), ({}, {"onTimeout": "continue"})]
)
def test_bad_or_misplaced_on_timeout_is_a_config_error(
    first: dict[str, Any], on_failure: dict[str, Any] | None
) -> None:
    code, out = render(first, on_failure)
    assert code != 0
    results = out.get("results") or []
    where = "steps[0].onTimeout" if on_failure is None else "onFailure[0].onTimeout"
    assert any(where in str(r) for r in results), results
