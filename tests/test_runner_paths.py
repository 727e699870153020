"""Names never leave their lane: every name and namespace is checked at plan time with Kubernetes' rules,
every path segment is percent-encoded, and a delete only reaches the object whose name was checked.

The attack (issue 15): a Job whose namespace is ``team/../prod`` (or whose name climbs out of its
namespace) made the runner address ``prod``, since an HTTP client collapses ``..`` in a path.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit

import pytest
from fake_http import MockTransport, json_answer
from hypothesis import given, settings
from hypothesis import strategies as st
from lightkube.config.kubeconfig import KubeConfig
from lightkube.config.models import Cluster, User

from krmfn.k8s.names import name_problem, namespace_problem, path_segment_problem
from krmfn.net.wire import Request, Response
from krmfn.runner.cluster.api import Api, Resource, UnsafePath, segment
from krmfn.runner.cluster.kube import HttpApi, field_value
from krmfn.runner.commands.cli import main
from krmfn.runner.errors import InventoryError, ObjectError, SourceError
from krmfn.runner.inventory.applyset import Parent
from krmfn.runner.inventory.prune import uid_of
from krmfn.runner.plan import Key, build_plan
from krmfn.yaml.io import dump_all_fast

JOBS = Resource("batch", "v1", "Job", "jobs", True)
CLUSTER_ROLES = Resource("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False)
FORCE = {"krmfn.dev/force": "enabled", "krmfn.dev/recreate-on-failure": "enabled"}


def job(name: str, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "annotations": dict(FORCE)}
    if namespace is not None:
        meta["namespace"] = namespace
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": {"template": {}}}


def no_connection(args: argparse.Namespace) -> Api:
    raise AssertionError("an input error must be reported before the kubeconfig is even read")


# --- the plan refuses what Kubernetes refuses ---------------------------------------------------------


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        pytest.param(
            job("migrate", "team/../prod"),
            "metadata.namespace 'team/../prod' is invalid",
            id="namespace climbs into another",
        ),
        pytest.param(
            job("x/../../../prod/jobs/migrate", "team"),
            "may not contain '/'",
            id="name climbs out of its namespace",
        ),
        pytest.param(job("..", "team"), "may not be '..'", id="name is .."),
        pytest.param(job("migrate", ".."), "metadata.namespace '..' is invalid", id="namespace is .."),
        pytest.param(job("a%2F..%2Fb", "team"), "may not contain '%'", id="pre-encoded name"),
        pytest.param(job("Migrate", "team"), "lowercase RFC 1123 subdomain", id="Job name not a subdomain"),
        pytest.param(job("migrate", "Team"), "lowercase RFC 1123 label", id="namespace not a label"),
        pytest.param(job("migrate", "a" * 64), "no more than 63 characters", id="namespace too long"),
        pytest.param(job("migrate?watch=true", "team"), "lowercase RFC 1123 subdomain", id="query"),
        pytest.param(job("migrate\n", "team"), "lowercase RFC 1123 subdomain", id="name ends in a newline"),
        pytest.param(job("migrate", "team\n"), "lowercase RFC 1123 label", id="namespace ends in a newline"),
        pytest.param(job("m" * 64, "team"), "no more than 63 characters", id="Job name over 63"),
        pytest.param(
            {**job("m", "team"), "apiVersion": "batch/../../api/v1"},
            "apiVersion",
            id="apiVersion climbs out of its group",
        ),
        pytest.param(
            {**job("m", "team"), "kind": "Job,Secret"},
            "kind 'Job,Secret' is invalid",
            id="kind with a separator",
        ),
    ],
)
def test_hostile_names_are_input_errors_before_any_connection(
    tmp_path: Path, doc: dict[str, Any], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(dump_all_fast([doc]))
    for command in ("plan", "apply"):
        assert main([command, "-f", str(path), "-n", "team"], no_connection) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"krmfn {command}: document 1: ")
        assert message in err
        assert len(err.splitlines()) == 1


@pytest.mark.parametrize("namespace", ["team/../prod", "..", "a b", "UPPER"])
def test_namespace_flag_is_checked_like_a_manifest_namespace(
    tmp_path: Path, namespace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(dump_all_fast([job("migrate")]))
    assert main(["apply", "-f", str(path), "-n", namespace], no_connection) == 2
    assert "is invalid" in capsys.readouterr().err


def test_kinds_keep_their_own_name_rules() -> None:
    """RBAC names may hold colons and capitals (system:controller:x), a Service is a DNS-1035 label."""
    assert name_problem("rbac.authorization.k8s.io", "ClusterRole", "system:controller:Job") is None
    assert name_problem("", "Service", "1web") is not None
    assert name_problem("", "ConfigMap", "1web") is None
    assert name_problem("example.com", "Widget", "Any_Name:ok") is None  # its API server decides the rest
    for group, kind in [("rbac.authorization.k8s.io", "Role"), ("example.com", "Widget")]:
        assert name_problem(group, kind, "a/b") == "may not contain '/'"
        assert name_problem(group, kind, ".") == "may not be '.'"


# --- generated: any name the plan accepts stays one segment of its path -----------------------------------

HOSTILE = st.text(
    alphabet=st.sampled_from(list("./%?#\\:;=,@ aZ09-_~\x00\n\x1b\u202e\u0130")) | st.characters(),
    min_size=0,
    max_size=12,
)
BASE = "https://api.example:6443/"


def _sent_path(path: str) -> str:
    """The path as an HTTP client or a proxy may send it, after RFC 3986's normalisation (dot segments
    removed, percent-encoding kept)."""
    return urlsplit(urljoin(BASE, path)).path


def _decoded(path: str) -> str:
    """The path as a server reads it: normalised, then percent-decoded."""
    return unquote(urlsplit(urljoin(BASE, path)).path)


@settings(max_examples=400, deadline=None)
@given(name=HOSTILE, namespace=HOSTILE, kind=st.sampled_from(["job", "clusterrole", "widget"]))
def test_any_name_is_refused_or_stays_one_segment(name: str, namespace: str, kind: str) -> None:
    docs = {
        "job": job(name, namespace),
        "clusterrole": {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
        },
        "widget": {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": name, "namespace": namespace},
        },
    }
    try:
        plan = build_plan([docs[kind]], namespace="team", default_timeout=30)
    except SourceError:
        return
    key = plan.items[0].key
    assert path_segment_problem(key.name) is None
    assert key.namespace == "" or namespace_problem(key.namespace) is None
    res = {"job": JOBS, "clusterrole": CLUSTER_ROLES}.get(
        kind, Resource("example.com", "v1", "Widget", "widgets", True)
    )
    sent = _sent_path(res.path(key.namespace, key.name))
    assert sent == res.path(key.namespace, key.name)  # nothing for the client to collapse
    parts = sent.split("/")
    assert _decoded(sent).split("/")[-1] == key.name
    expected_head = res.path(key.namespace).split("/")
    assert parts[: len(expected_head)] == expected_head and len(parts) == len(expected_head) + 1


@settings(max_examples=300, deadline=None)
@given(value=st.text(min_size=1, max_size=16))
def test_every_segment_is_encoded_or_refused(value: str) -> None:
    if value in (".", "..") or "must be UTF-8" in str(path_segment_problem(value)):
        with pytest.raises(UnsafePath):
            segment(value)
        return
    encoded = segment(value)
    assert "/" not in encoded and "?" not in encoded and "#" not in encoded
    assert _decoded(f"/a/{encoded}/b") == f"/a/{value}/b"


def test_path_segments_are_percent_encoded() -> None:
    hostile = "x/../../../prod/jobs/victim"
    assert JOBS.path("team", hostile) == (
        "/apis/batch/v1/namespaces/team/jobs/x%2F..%2F..%2F..%2Fprod%2Fjobs%2Fvictim"
    )
    assert JOBS.path("team/../prod", "m") == "/apis/batch/v1/namespaces/team%2F..%2Fprod/jobs/m"
    assert Resource("a/../b", "v1", "K", "ks", False).path() == "/apis/a%2F..%2Fb/v1/ks"
    with pytest.raises(UnsafePath):
        JOBS.path("..", "m")


def test_watch_field_selector_cannot_gain_terms() -> None:
    assert field_value("a,metadata.namespace=prod") == "a\\,metadata.namespace\\=prod"
    assert field_value("back\\slash") == "back\\\\slash"


# --- the request that leaves the process (HttpApi, below the plan's checks) ---------------------------------


class Recorder:
    def __init__(self) -> None:
        self.paths: list[str] = []

    def __call__(self, request: Request) -> Response:
        self.paths.append(request.target)
        return json_answer(404, {"kind": "Status", "reason": "NotFound", "message": "not found"})


def test_http_requests_keep_a_hostile_name_inside_its_segment() -> None:
    config = KubeConfig.from_one(cluster=Cluster(server="https://127.0.0.1:1"), user=User(token="t")).get()
    assert config is not None
    recorder = Recorder()
    api = HttpApi(config, retry_budget=0, transport=MockTransport(recorder))
    assert api.delete(JOBS, "x/../../../prod/jobs/victim", "team", uid="u", propagation="Foreground") is False
    assert api.get(JOBS, "victim", "team/../prod") is None
    assert api.logs("p/../../victim", "team", "main", 5) is None
    assert recorder.paths == [
        "/apis/batch/v1/namespaces/team/jobs/x%2F..%2F..%2F..%2Fprod%2Fjobs%2Fvictim",
        "/apis/batch/v1/namespaces/team%2F..%2Fprod/jobs/victim",
        "/api/v1/namespaces/team/pods/p%2F..%2F..%2Fvictim/log?container=main&tailLines=5&limitBytes=65536",
    ]
    with pytest.raises(ValueError, match="UID"):
        api.delete(JOBS, "victim", "team", uid="", propagation="Foreground")


# --- a delete reaches only the object whose name and namespace were checked --------------------------------


def test_delete_uid_comes_only_from_the_object_that_was_asked_for() -> None:
    key = Key("batch", "Job", "team", "migrate")
    mine = {"metadata": {"name": "migrate", "namespace": "team", "uid": "u-1"}}
    assert uid_of(key, mine) == "u-1"
    other = {"metadata": {"name": "migrate", "namespace": "prod", "uid": "u-2"}}
    with pytest.raises(ObjectError, match="answered with another object"):
        uid_of(key, other)
    with pytest.raises(ObjectError, match="no uid"):
        uid_of(key, {"metadata": {"name": "migrate", "namespace": "team"}})


@pytest.mark.parametrize(
    ("annotation", "value"),
    [
        ("applyset.kubernetes.io/additional-namespaces", "other,team/../prod"),
        ("applyset.kubernetes.io/contains-group-kinds", "Job.batch/../../api"),
        ("applyset.kubernetes.io/contains-group-kinds", "Job%2F.batch"),
    ],
)
def test_parent_lists_from_the_cluster_are_checked_before_a_prune_uses_them(
    annotation: str, value: str
) -> None:
    live = Parent("krmfn", "apps", "0.1.0").render()
    live["metadata"]["annotations"][annotation] = value
    with pytest.raises(InventoryError, match="the parent was edited"):
        Parent.from_live("krmfn", "apps", "0.1.0", live)
