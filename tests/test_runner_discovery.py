"""Discovery, one implementation for apply and diff (engine/discovery.py): a kind a CRD of the plan
serves waits for that CRD, any other unknown kind fails up front naming its object, and a cluster-scoped
kind drops the namespace the plan defaulted. The same plan goes through the run and the diff here."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fake_kube import FakeApi

from krmfn.runner.engine.differ import Change, Differ, DiffOptions
from krmfn.runner.engine.discovery import crds_of, resolve
from krmfn.runner.engine.engine import Options, Runner
from krmfn.runner.errors import UnknownKind
from krmfn.runner.plan import build_plan

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.dev"},
    "spec": {"group": "example.dev", "names": {"kind": "Widget", "plural": "widgets"}, "scope": "Namespaced"},
}  # fmt: skip
WIDGET = {"apiVersion": "example.dev/v1", "kind": "Widget", "metadata": {"name": "w"}}
GADGET = {"apiVersion": "example.dev/v1", "kind": "Gadget", "metadata": {"name": "g"}}


def configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}}


def _installed(api: FakeApi) -> None:
    """The inventory a first apply leaves, so the diff has a parent to read."""
    plan = build_plan([configmap("first")], namespace="ns", default_timeout=5)
    result = Runner(api, Options(namespace="ns", applyset="app"), lambda e: None).run(plan)
    assert result.ok, result.error


def _diff(api: FakeApi, docs: list[dict[str, Any]]) -> list[Any]:
    options = DiffOptions(applyset="app", applyset_source="--applyset", namespace="ns")
    return list(Differ(api, options).changes(build_plan(docs, namespace="ns", default_timeout=5)))


def test_the_plans_crds_and_what_waits_for_them() -> None:
    plan = build_plan([CRD, WIDGET, configmap("c"), {"apiVersion": "v1", "kind": "Namespace",
                       "metadata": {"name": "ns"}}], namespace="ns", default_timeout=5)  # fmt: skip
    crds = crds_of(plan)
    assert [(group_kind, item.key.name) for group_kind, item in crds.items()] == [
        (("example.dev", "Widget"), "widgets.example.dev")
    ]
    resources: dict[Any, Any] = {}
    pending = resolve(FakeApi(), plan, crds, resources)
    assert [item.key.name for item in pending] == ["w"]
    assert {key.name: key.namespace for key in resources} == {"widgets.example.dev": "", "c": "ns", "ns": ""}


def test_diff_shows_a_custom_resource_whose_crd_is_not_installed_yet_as_rendered() -> None:
    api = FakeApi()
    _installed(api)
    [widget] = [c for c in _diff(api, [CRD, WIDGET, configmap("first")]) if "Widget" in c.object]
    assert isinstance(widget, Change)
    assert widget.detail == "its CRD widgets.example.dev is not installed yet: shown as rendered"


def test_a_server_dry_run_of_a_custom_resource_whose_crd_is_not_installed_says_so() -> None:
    api = FakeApi()
    options = Options(namespace="ns", applyset="app", dry_run=True)
    plan = build_plan([CRD, WIDGET], namespace="ns", default_timeout=5)
    result = Runner(api, options, lambda e: None).run(plan)
    assert isinstance(result.error, UnknownKind)
    assert "its CRD widgets.example.dev is not installed yet (server dry run)" in str(result.error)


@pytest.mark.parametrize("how", ["apply", "diff"])
def test_a_kind_nothing_serves_fails_up_front_naming_its_object(how: str) -> None:
    api = FakeApi()
    _installed(api)
    docs = [configmap("first"), CRD, WIDGET, GADGET]
    if how == "diff":
        with pytest.raises(UnknownKind, match=re.escape("Gadget.example.dev ns/g")):
            _diff(api, docs)
        return
    plan = build_plan(docs, namespace="ns", default_timeout=5)
    result = Runner(api, Options(namespace="ns", applyset="app"), lambda e: None).run(plan)
    assert isinstance(result.error, UnknownKind)
    assert "Gadget.example.dev ns/g" in str(result.error)
    assert result.applied == []  # nothing was sent: discovery comes first
