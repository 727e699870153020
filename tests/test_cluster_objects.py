"""One reader of rendered streams (krmfn/k8s/cluster_objects.py): every bad document is refused by krmfn
apply's plan and by krmfn export in the same words, and every List shape is unwrapped alike (issue 31:
the stream was read twice, with two sets of checks; export let an invalid name through to the engines)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from krmfn.errors import InputError
from krmfn.export.stream import read_sources
from krmfn.k8s.cluster_objects import flatten, identity_problem
from krmfn.runner.errors import SourceError
from krmfn.runner.plan import build_plan


def cm(**meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


BAD: dict[str, tuple[Any, str]] = {
    "a list": (["a", "b"], "not a Kubernetes object (a list)"),
    "a string": ("text", "not a Kubernetes object (a str)"),
    "no apiVersion": ({"kind": "ConfigMap", "metadata": {"name": "x"}}, "missing apiVersion"),
    "empty kind": ({"apiVersion": "v1", "kind": "", "metadata": {"name": "x"}}, "missing kind"),
    "bad apiVersion": ({**cm(name="x"), "apiVersion": "v1/../x/y"}, "apiVersion 'v1/../x/y' is invalid"),
    "bad kind": ({**cm(name="x"), "kind": "Config Map"}, "kind 'Config Map' is invalid"),
    "no name": (cm(), "ConfigMap without metadata.name"),
    "generateName": (cm(generateName="x-"), "ConfigMap without metadata.name"),
    "path name": (cm(name="../../secrets"), "ConfigMap metadata.name '../../secrets' is invalid"),
    "upper name": (cm(name="Web"), "ConfigMap metadata.name 'Web' is invalid"),
    "namespace not a string": (
        cm(name="x", namespace=["a"]),
        "ConfigMap x: metadata.namespace is not a string",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
@pytest.mark.parametrize("wrapped", ["bare", "in a List", "in a List in a List"])
def test_each_bad_document_is_refused_by_apply_and_export_in_the_same_words(
    tmp_path: Path, case: str, wrapped: str
) -> None:
    doc, problem = BAD[case]
    good = cm(name="fine", namespace="apps")
    for _ in range(wrapped.count("List")):
        doc = {"apiVersion": "v1", "kind": "List", "items": [doc]}
    documents = [good, None, doc]
    assert problem in (identity_problem(next(iter(flatten([doc])))) or "")

    with pytest.raises(SourceError) as applied:
        build_plan(documents, namespace="apps", default_timeout=60)
    source = tmp_path / "in.yaml"
    source.write_text(yaml.safe_dump_all(documents))
    with pytest.raises(InputError) as exported:
        read_sources([str(source)])
    # documents are numbered once the Lists are unwrapped and the empty ones dropped: the bad one is 2nd
    assert str(applied.value).startswith(f"document 2: {problem}"), applied.value
    assert str(exported.value).startswith(f"{source}: document 2: {problem}"), exported.value


def test_lists_unwrap_alike_and_good_objects_pass() -> None:
    docs = [None, {"apiVersion": "v1", "kind": "List", "items": [cm(name="a"), {"kind": "ConfigMapList",
            "apiVersion": "v1", "items": [cm(name="b")]}]}, cm(name="c")]  # fmt: skip
    assert [d["metadata"]["name"] for d in flatten(docs)] == ["a", "b", "c"]
    assert all(identity_problem(d) is None for d in flatten(docs))
