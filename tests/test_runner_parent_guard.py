"""Issue 15, item 6: the ApplySet parent cannot be destroyed from the stream.

The attack: a rendered Secret named like the parent is applied onto it, takes the members' label, and
the next run prunes the inventory (its orphans are then never pruned, TTL-deleted Jobs run again).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest
from fake_kube import FakeApi
from hypothesis import given, settings
from hypothesis import strategies as st

from krmfn.runner.cluster.api import Api
from krmfn.runner.commands.cli import main
from krmfn.runner.engine.engine import Options, Runner
from krmfn.runner.errors import SourceError
from krmfn.runner.events import Event, Prune
from krmfn.runner.inventory.applyset import ID_LABEL, PART_OF, Parent, applyset_id
from krmfn.runner.plan import build_plan
from krmfn.runner.reserved import INVENTORY, JOB_RECORDS, LEGACY_COMPLETED_JOBS, LOCK
from krmfn.yaml.io import dump_all_fast

Doc = dict[str, Any]


def configmap(
    name: str, labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None
) -> Doc:
    meta: Doc = {"name": name}
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}}


def no_connection(args: argparse.Namespace) -> Api:
    raise AssertionError("an input error must be reported before the kubeconfig is even read")


def write(tmp_path: Path, docs: list[Doc]) -> str:
    path = tmp_path / "in.yaml"
    path.write_text(dump_all_fast(docs))
    return str(path)


@pytest.mark.parametrize(
    ("flags", "parent"),
    [
        pytest.param(["--no-prune"], "Secret apps/krmfn", id="default parent name (--no-prune)"),
        pytest.param(["--applyset", "inventory"], "Secret apps/inventory", id="--applyset"),
    ],
)
def test_a_plan_holding_the_parent_is_an_input_error(
    tmp_path: Path, flags: list[str], parent: str, capsys: pytest.CaptureFixture[str]
) -> None:
    name = parent.rpartition("/")[2]
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "stringData": {"a": "b"}}
    path = write(tmp_path, [configmap("app"), secret])
    assert main(["apply", "-f", path, "-n", "apps", *flags], no_connection) == 2
    err = capsys.readouterr().err
    assert err == (
        f"krmfn apply: {parent} is the ApplySet parent (the inventory of this apply) and may not be in "
        "the manifests; rename that Secret, or choose another parent name with --applyset\n"
    )
    # A Secret of that name in another namespace, or a ConfigMap of that name, is not the parent.
    other = {**secret, "metadata": {"name": name, "namespace": "other"}}
    assert main(["apply", "--dry-run=client", "-f", write(tmp_path, [configmap(name), other]), "-n", "apps",
                 *flags]) == 0  # fmt: skip


def test_an_invalid_applyset_name_is_an_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, [configmap("app")])
    assert main(["apply", "-f", path, "-n", "apps", "--applyset", "../prod"], no_connection) == 2
    assert "--applyset '../prod' is not a valid Secret name" in capsys.readouterr().err


RESERVED = [
    ("labels", PART_OF),
    ("labels", ID_LABEL),
    ("labels", "applyset.kubernetes.io/anything"),
    ("annotations", "applyset.kubernetes.io/tooling"),
    ("annotations", "applyset.kubernetes.io/contains-group-kinds"),
    ("annotations", "applyset.kubernetes.io/additional-namespaces"),
    ("annotations", JOB_RECORDS),
    ("annotations", LEGACY_COMPLETED_JOBS),
    ("annotations", LOCK),
    *(("annotations", key) for key in sorted(INVENTORY)),  # every annotation of krmfn's record (runs too)
]


@pytest.mark.parametrize(("field", "key"), RESERVED)
def test_rendered_objects_may_not_carry_inventory_labels_or_annotations(field: str, key: str) -> None:
    doc = configmap("app", **{field: {key: "x"}})  # type: ignore[arg-type]
    with pytest.raises(SourceError) as caught:
        build_plan([doc], namespace="apps", default_timeout=30)
    assert str(caught.value) == (
        f"document 1: ConfigMap app: metadata.{field} has {key!r}, which only krmfn apply writes (the "
        "ApplySet inventory); remove it from the manifests"
    )


@settings(max_examples=200, deadline=None)
@given(suffix=st.text(min_size=0, max_size=20), field=st.sampled_from(["labels", "annotations"]))
def test_any_applyset_key_is_refused(suffix: str, field: str) -> None:
    doc = configmap("app", **{field: {f"applyset.kubernetes.io/{suffix}": "x"}})  # type: ignore[arg-type]
    with pytest.raises(SourceError, match="only krmfn apply writes"):
        build_plan([doc], namespace="apps", default_timeout=30)


def test_other_labels_and_annotations_pass() -> None:
    doc = configmap("app", {"app.kubernetes.io/part-of": "shop"}, {"krmfn.dev/prune": "disabled"})
    assert len(build_plan([doc], namespace="apps", default_timeout=30).items) == 1


def run(api: FakeApi, docs: list[Doc]) -> list[Event]:
    events: list[Event] = []
    plan = build_plan(docs, namespace="apps", default_timeout=30)
    result = Runner(api, Options(namespace="apps"), events.append).run(plan)
    assert result.error is None, result.error
    return events


def test_a_parent_labelled_as_a_member_is_never_pruned() -> None:
    """What an older krmfn left behind after the attack: the parent carries its own set's member label.
    The prune keeps it (and any other set's parent), and the record stays."""
    api = FakeApi("apps")
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}
    run(api, [configmap("a"), secret])  # the parent lists Secrets: a prune looks at them
    set_id = applyset_id("krmfn", "apps")
    live = api.object("v1", "Secret", "apps", "krmfn")
    assert live is not None
    live["metadata"]["labels"][PART_OF] = set_id
    api.remove("v1", "Secret", "apps", "krmfn")
    api.seed(live)
    other = Parent("other", "apps", "0.1.0").render()
    other["metadata"]["labels"][PART_OF] = set_id
    api.seed(other)
    events = run(api, [configmap("a")])
    pruned = sorted((e.object, e.action, e.detail) for e in events if isinstance(e, Prune))
    assert pruned == [
        ("Secret apps/krmfn", "kept", "an ApplySet parent is never pruned"),
        ("Secret apps/other", "kept", "an ApplySet parent is never pruned"),
        ("Secret apps/s", "deleted", ""),
    ]
    assert api.object("v1", "Secret", "apps", "krmfn") is not None
    assert api.object("v1", "Secret", "apps", "other") is not None


def test_the_parent_is_looked_for_in_the_kubeconfigs_namespace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without -n the parent lives in the kubeconfig's namespace: a Secret `krmfn` in `default` is not
    it, and the same Secret in that namespace is."""
    config = tmp_path / "kubeconfig"
    config.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u, namespace: apps}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
    )
    for namespace, code in [("apps", 2), ("default", 1)]:
        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "krmfn", "namespace": namespace}}
        argv = [
            "apply",
            "-f",
            write(tmp_path, [secret]),
            "--kubeconfig",
            str(config),
            "--retry-timeout",
            "1s",
            "--applyset",
            "krmfn",
        ]
        assert main(argv) == code  # 1: the run starts and finds no API server at port 1
        err = capsys.readouterr().err
        assert ("is the ApplySet parent" in err) is (code == 2)
