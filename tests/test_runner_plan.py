"""Plan building: steps from krmfn.dev/step-index, kind order inside a step, defaults and input errors."""

from __future__ import annotations

from typing import Any

import pytest

from krmfn.k8s.scopes import BUILTIN_CLUSTER_SCOPED
from krmfn.runner.errors import SourceError
from krmfn.runner.plan import build_plan, kind_rank


def obj(kind: str, name: str, api_version: str = "v1", **annotations: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if annotations:
        meta["annotations"] = {k.replace("_", "-").replace("--", "/"): v for k, v in annotations.items()}
    return {"apiVersion": api_version, "kind": kind, "metadata": meta}


def stepped(kind: str, name: str, index: int, api_version: str = "v1", **extra: str) -> dict[str, Any]:
    o = obj(kind, name, api_version)
    o["metadata"]["annotations"] = {"krmfn.dev/step-index": str(index), **extra}
    return o


def names(plan: Any) -> list[list[str]]:
    return [[f"{it.kind}/{it.key.name}" for it in step.items] for step in plan.steps]


def test_items_group_by_step_index_in_numeric_order() -> None:
    plan = build_plan(
        [stepped("ConfigMap", "c", 10), stepped("ConfigMap", "b", 2), stepped("ConfigMap", "a", 0)],
        namespace="ns",
        default_timeout=60,
    )
    assert names(plan) == [["ConfigMap/a"], ["ConfigMap/b"], ["ConfigMap/c"]]
    assert [s.step_index for s in plan.steps] == [0, 2, 10]
    assert [s.index for s in plan.steps] == [0, 1, 2]


def test_unannotated_items_form_one_step_that_runs_first() -> None:
    plan = build_plan(
        [stepped("ConfigMap", "late", 0), obj("ConfigMap", "loose")], namespace="ns", default_timeout=1
    )
    assert names(plan) == [["ConfigMap/loose"], ["ConfigMap/late"]]
    assert plan.steps[0].name == "default"
    assert plan.steps[1].name == "step-0"


def test_within_a_step_kinds_follow_dependency_order_jobs_last() -> None:
    docs = [
        obj("Job", "migrate", "batch/v1"),
        obj("Deployment", "web", "apps/v1"),
        obj("Widget", "w", "example.com/v1"),
        obj("Service", "web"),
        obj("ConfigMap", "cfg"),
        obj("Secret", "s"),
        obj("RoleBinding", "rb", "rbac.authorization.k8s.io/v1"),
        obj("ServiceAccount", "sa"),
        obj("CustomResourceDefinition", "widgets.example.com", "apiextensions.k8s.io/v1"),
        obj("Namespace", "ns"),
    ]
    plan = build_plan(docs, namespace="ns", default_timeout=1)
    assert [it.kind for it in plan.steps[0].items] == [
        "Namespace",
        "CustomResourceDefinition",
        "ServiceAccount",
        "RoleBinding",
        "ConfigMap",
        "Secret",
        "Service",
        "Deployment",
        "Widget",
        "Job",
    ]


def test_same_kind_orders_by_namespace_then_name() -> None:
    a = obj("ConfigMap", "b")
    a["metadata"]["namespace"] = "z"
    b = obj("ConfigMap", "c")
    c = obj("ConfigMap", "a")
    plan = build_plan([a, b, c], namespace="m", default_timeout=1)
    assert [str(it.key) for it in plan.steps[0].items] == ["ConfigMap m/a", "ConfigMap m/c", "ConfigMap z/b"]


def test_namespace_defaults_only_for_namespaced_kinds() -> None:
    crd = obj("CustomResourceDefinition", "tenants.example.com", "apiextensions.k8s.io/v1")
    crd["spec"] = {"group": "example.com", "scope": "Cluster", "names": {"kind": "Tenant"}}
    docs = [
        obj("ConfigMap", "c"),
        obj("Namespace", "n"),
        obj("ClusterRole", "r", "rbac.authorization.k8s.io/v1"),
        obj("Tenant", "t", "example.com/v1"),
        crd,
    ]
    keys = {str(it.key) for it in build_plan(docs, namespace="apps", default_timeout=1).items}
    assert keys == {
        "ConfigMap apps/c",
        "Namespace n",
        "ClusterRole.rbac.authorization.k8s.io r",
        "Tenant.example.com t",
        "CustomResourceDefinition.apiextensions.k8s.io tenants.example.com",
    }


@pytest.mark.parametrize(("group", "kind"), sorted(BUILTIN_CLUSTER_SCOPED))
def test_every_builtin_cluster_scoped_kind_gets_no_namespace(group: str, kind: str) -> None:
    """The plan and set-steps/export share krmfn/k8s/scopes.py: the plan's own shorter list (21 kinds, by
    kind alone) gave an IPAddress or a DeviceClass the default namespace."""
    api_version = f"{group}/v1" if group else "v1"
    plan = build_plan([obj(kind, "x", api_version)], namespace="apps", default_timeout=1)
    assert [it.key.namespace for it in plan.items] == [""]


def test_a_custom_kind_named_like_a_builtin_is_namespaced_by_its_group() -> None:
    keys = {str(it.key) for it in build_plan([obj("ClusterRole", "r", "example.com/v1")], namespace="apps",
                                              default_timeout=1).items}  # fmt: skip
    assert keys == {"ClusterRole.example.com apps/r"}


def test_step_name_and_timeout_come_from_annotations() -> None:
    docs = [stepped("ConfigMap", "a", 0, **{"krmfn.dev/step": "pre", "krmfn.dev/step-timeout": "1m30s"})]
    step = build_plan(docs, namespace="n", default_timeout=300).steps[0]
    assert (step.name, step.timeout, step.timeout_text) == ("pre", 90.0, "1m30s")


def test_default_timeout_applies_without_annotation() -> None:
    assert build_plan([obj("ConfigMap", "a")], namespace="n", default_timeout=42).steps[0].timeout == 42


@pytest.mark.parametrize(
    ("annotation", "flag", "expected"),
    [
        pytest.param(None, None, False, id="final-step-without-wait-annotation-does-not-wait"),
        pytest.param("true", None, True, id="final-step-with-wait-true-waits"),
        pytest.param("false", None, False, id="final-step-with-wait-false-does-not-wait"),
        pytest.param("false", True, True, id="wait-flag-overrides-annotation"),
        pytest.param("true", False, False, id="no-wait-flag-overrides-annotation"),
    ],
)
def test_only_the_final_step_wait_is_configurable(
    annotation: str | None, flag: bool | None, expected: bool
) -> None:
    extra = {"krmfn.dev/wait": annotation} if annotation else {}
    docs = [stepped("ConfigMap", "a", 0), stepped("ConfigMap", "b", 1, **extra)]
    plan = build_plan(docs, namespace="n", default_timeout=1, wait=flag)
    assert plan.steps[0].wait is True
    assert plan.steps[1].wait is expected


def test_lists_are_flattened_and_empty_documents_and_local_config_skipped() -> None:
    local = obj("ConfigMap", "fn-config")
    local["metadata"]["annotations"] = {"config.kubernetes.io/local-config": "true"}
    docs = [
        None,
        {"apiVersion": "v1", "kind": "List", "items": [obj("ConfigMap", "a"), obj("Secret", "b")]},
        local,
    ]
    assert names(build_plan(docs, namespace="n", default_timeout=1)) == [["ConfigMap/a", "Secret/b"]]


def test_nothing_to_apply_is_an_empty_plan() -> None:
    assert build_plan([], namespace="n", default_timeout=1).steps == []


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        pytest.param(["a", "list"], "document 1: not a Kubernetes object", id="not-a-mapping"),
        pytest.param(
            {"kind": "ConfigMap", "metadata": {"name": "a"}},
            "document 1: missing apiVersion",
            id="missing-api-version",
        ),
        pytest.param(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "a-"}},
            "without metadata.name",
            id="generate-name-cannot-be-applied",
        ),
        pytest.param(
            stepped("ConfigMap", "a", 0)
            | {"metadata": {"name": "a", "annotations": {"krmfn.dev/step-index": "first"}}},
            "ConfigMap n/a: annotation krmfn.dev/step-index must be a whole number",
            id="step-index-not-a-whole-number",
        ),
        pytest.param(
            stepped("ConfigMap", "a", 0, **{"krmfn.dev/step-timeout": "5 minutes"}),
            "ConfigMap n/a: annotation krmfn.dev/step-timeout: time: unknown unit",
            id="bad-step-timeout",
        ),
        pytest.param(
            stepped("ConfigMap", "a", 0, **{"krmfn.dev/step-timeout": "0s"}),
            "must be positive",
            id="zero-step-timeout",
        ),
    ],
)
def test_bad_input_is_a_source_error_naming_the_document(doc: Any, message: str) -> None:
    with pytest.raises(SourceError, match=message.replace("(", r"\(")):
        build_plan([doc], namespace="n", default_timeout=1)


def test_duplicate_objects_are_rejected() -> None:
    with pytest.raises(SourceError, match=r"ConfigMap n/a appears twice in the input \(documents 1 and 2\)"):
        build_plan([obj("ConfigMap", "a"), obj("ConfigMap", "a")], namespace="n", default_timeout=1)


def test_unknown_kinds_rank_between_workloads_and_jobs() -> None:
    assert kind_rank("Deployment") < kind_rank("Widget") < kind_rank("Job")
    assert kind_rank("Widget") < kind_rank("ValidatingWebhookConfiguration") < kind_rank("Job")


def step_shapes(plan: Any) -> list[tuple[int | None, str, list[str]]]:
    return [(s.step_index, s.name, [it.key.name for it in s.items]) for s in plan.steps]


def test_objects_without_an_index_may_name_their_step() -> None:
    docs = [obj("ConfigMap", "a", **{"krmfn.dev/step": "pre"}), stepped("ConfigMap", "b", 0)]
    assert step_shapes(build_plan(docs, namespace="n", default_timeout=1)) == [
        (None, "pre", ["a"]),
        (0, "step-0", ["b"]),
    ]


@pytest.mark.parametrize(
    ("docs", "message"),
    [
        pytest.param(
            [
                obj("ConfigMap", "a", **{"krmfn.dev/step-index": "first"}),
                obj("ConfigMap", "a"),
            ],
            "ConfigMap n/a: annotation krmfn.dev/step-index must be a whole number from 0 to 2147483647, "
            "got 'first'",
            id="bad-index-before-a-later-duplicate",
        ),
        pytest.param(
            [
                obj("ConfigMap", "a"),
                obj("ConfigMap", "a", **{"krmfn.dev/step-index": "first"}),
            ],
            r"ConfigMap n/a appears twice in the input \(documents 1 and 2\)",
            id="duplicate-before-its-own-bad-index",
        ),
        pytest.param(
            [
                obj("Job", "a", "batch/v1", **{"krmfn.dev/step-timeout": "nope"}),
                obj("ConfigMap", "z", **{"krmfn.dev/step-timeout": "nope"}),
            ],
            "^ConfigMap n/z: ",
            id="bad-timeouts-reported-in-apply-order",
        ),
        pytest.param(
            [
                stepped("ConfigMap", "a", 0)
                | {"metadata": {"name": "a", "annotations": {"krmfn.dev/step-timeout": 0}}}
            ],
            "ConfigMap n/a: annotation krmfn.dev/step-timeout must be positive, got '0'$",
            id="yaml-int-timeout",
        ),
    ],
)
def test_the_first_input_error_in_stream_order_is_reported(docs: list[Any], message: str) -> None:
    with pytest.raises(SourceError, match=message):
        build_plan(docs, namespace="n", default_timeout=1)
