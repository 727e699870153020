"""The depends-on annotations set-steps emits, read back with cli-utils' own syntax rules.

``parse_cli_utils`` is written from cli-utils' pkg/object/dependson (ParseDependencySet and
ParseObjMetadata), independently of set-steps' formatter, so the two can only agree if the format is right.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from krmfn.functions.set_steps import FUNCTION
from krmfn.k8s.dependson import ObjRef, format_set
from krmfn.yaml.io import _load_fast, dump_fast


@dataclass(frozen=True)
class CliUtilsRef:
    group: str
    kind: str
    namespace: str
    name: str


def parse_cli_utils(annotation: str) -> list[CliUtilsRef]:
    refs = []
    for part in annotation.split(","):  # annotationSeparator
        fields = part.strip().split("/")  # TrimSpace, then fieldSeparator
        if len(fields) == 3:
            group, kind, name = fields
            namespace = ""
        elif len(fields) == 5:
            assert fields[1] == "namespaces", f'missing "namespaces" field: {part!r}'
            group, _, namespace, kind, name = fields
        else:
            raise AssertionError(f"too many fields (expected 3 or 5): {part!r}")
        assert kind, f"kind is empty: {part!r}"  # CreateObjMetadata
        assert name, f"name is empty: {part!r}"
        refs.append(CliUtilsRef(group, kind, namespace, name))
    return refs


def _obj(api_version: str, kind: str, name: str, namespace: str = "", **notes: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    if notes:
        meta["annotations"] = dict(notes)
    return {"apiVersion": api_version, "kind": kind, "metadata": meta}


ITEMS = [
    _obj("v1", "Namespace", "apps"),
    _obj("rbac.authorization.k8s.io/v1", "ClusterRole", "migrator"),
    _obj("batch/v1", "Job", "db-migration-1f2e3d4c", "apps", **{"krmfn.dev/job-base-name": "db-migration"}),
    _obj("v1", "ServiceAccount", "migrator", "apps"),
    _obj("apps/v1", "Deployment", "app", "apps"),
    _obj("v1", "ConfigMap", "app-settings", "apps"),
    _obj("v1", "Service", "app", "apps"),
    _obj("batch/v1", "Job", "cache-warmup", "apps"),
]
CONFIG = {
    "apiVersion": "fn.krmfn.dev/v1alpha1",
    "kind": "SetSteps",
    "metadata": {"name": "staged"},
    "defaultStep": "deploy",
    "emit": ["depends-on"],
    "steps": [
        {"name": "cluster", "selectors": [{"kind": "Namespace"}, {"kind": "ClusterRole"}]},
        {
            "name": "pre-deploy",
            "selectors": [{"kind": "Job", "name": "db-migration"}, {"kind": "ServiceAccount"}],
        },
        {"name": "deploy", "timeout": "10m"},
        {"name": "post-deploy", "selectors": [{"kind": "Job", "name": "cache-warmup"}]},
    ],
}


def _render() -> list[dict[str, Any]]:
    text = dump_fast(
        {
            "apiVersion": "config.kubernetes.io/v1",
            "kind": "ResourceList",
            "items": ITEMS,
            "functionConfig": CONFIG,
        }
    )
    outcome = FUNCTION.outcome(text, "fast")
    assert outcome.code == 0, outcome.text
    items: list[dict[str, Any]] = _load_fast(outcome.text)["items"]
    return items


def _identity(obj: dict[str, Any]) -> CliUtilsRef:
    group = obj["apiVersion"].rpartition("/")[0]
    return CliUtilsRef(group, obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"])


def test_each_step_depends_on_every_resource_of_the_previous_step() -> None:
    items = _render()
    by_step: dict[int, set[CliUtilsRef]] = {}
    for obj in items:
        by_step.setdefault(int(obj["metadata"]["annotations"]["krmfn.dev/step-index"]), set()).add(
            _identity(obj)
        )
    assert sorted(by_step) == [0, 1, 2, 3]
    for obj in items:
        notes = obj["metadata"]["annotations"]
        index = int(notes["krmfn.dev/step-index"])
        if index == 0:
            assert "config.kubernetes.io/depends-on" not in notes
            continue
        refs = parse_cli_utils(notes["config.kubernetes.io/depends-on"])
        assert len(refs) == len(set(refs)), "duplicate references"
        assert set(refs) == by_step[index - 1], f"{_identity(obj)} depends on the wrong objects"


def test_cluster_scoped_references_have_three_fields_and_core_group_is_empty() -> None:
    items = {o["metadata"]["name"] + "/" + o["kind"]: o for o in _render()}
    job_notes = items["db-migration-1f2e3d4c/Job"]["metadata"]["annotations"]
    assert job_notes["config.kubernetes.io/depends-on"] == (
        "/Namespace/apps,rbac.authorization.k8s.io/ClusterRole/migrator"
    )
    warmup = parse_cli_utils(
        items["cache-warmup/Job"]["metadata"]["annotations"]["config.kubernetes.io/depends-on"]
    )
    assert CliUtilsRef("", "ConfigMap", "apps", "app-settings") in warmup
    assert CliUtilsRef("apps", "Deployment", "apps", "app") in warmup


def test_second_run_leaves_depends_on_unchanged() -> None:
    first = _render()
    text = dump_fast(
        {
            "apiVersion": "config.kubernetes.io/v1",
            "kind": "ResourceList",
            "items": first,
            "functionConfig": CONFIG,
        }
    )
    again = _load_fast(FUNCTION.outcome(text, "fidelity").text)["items"]
    assert again == first


_segment = st.from_regex(r"[a-z0-9]([-a-z0-9.]{0,20}[a-z0-9])?", fullmatch=True)
_kind = st.from_regex(r"[A-Z][A-Za-z0-9]{0,20}", fullmatch=True)


@given(
    st.lists(
        st.builds(
            ObjRef,
            group=st.one_of(st.just(""), _segment),
            kind=_kind,
            name=_segment,
            namespace=st.one_of(st.just(""), _segment),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_formatted_references_parse_back_with_cli_utils_rules(refs: list[ObjRef]) -> None:
    parsed = parse_cli_utils(format_set(refs))
    assert parsed == [CliUtilsRef(r.group, r.kind, r.namespace, r.name) for r in refs]
