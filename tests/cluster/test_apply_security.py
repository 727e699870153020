"""Issue 15, item 1 on the real control plane: a manifest cannot reach another namespace's objects.

A Job whose namespace is ``<team>/../<prod>``, or whose name climbs out of ``<team>``, once made
``krmfn apply`` delete ``<prod>``'s running Job of the same name (an HTTP client collapses ``..``).
Now the plan refuses such names before any connection, and below the plan every path segment is
percent-encoded, so even a request built from such a name stays in its own namespace.
"""

from __future__ import annotations

import contextlib
import io
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from lightkube import ApiError, Client
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import Namespace, ServiceAccount

from krmfn.runner.cluster.api import Resource
from krmfn.runner.cluster.kube import connect
from krmfn.runner.commands.cli import main
from krmfn.yaml.io import dump_all_fast

from .cluster import wait_until
from .objects import exists, meta, pod_spec
from .runner_fixtures import Apply, Doc, job
from .runner_fixtures import apply as apply  # noqa: PLC0414 (re-exported fixture)

FORCE = {"krmfn.dev/force": "enabled", "krmfn.dev/recreate-on-failure": "enabled"}
JOBS = Resource("batch", "v1", "Job", "jobs", True)


@pytest.fixture
def prod(kube_client: Client, kubeconfig: Path, tmp_path: Path) -> Iterator[str]:
    """Another team's namespace, with a running Job ``migrate`` (its pod stays up for an hour) that the
    team applied with krmfn, as in the issue's reproduction."""
    name = f"prod-{secrets.token_hex(3)}"
    kube_client.create(Namespace(metadata=ObjectMeta(name=name)))
    wait_until(f"default SA in {name}", lambda: exists(kube_client, ServiceAccount, "default", name), 30)
    manifest = tmp_path / "prod.yaml"
    manifest.write_text(dump_all_fast([job("migrate", slow="1h", timeout=None)]))
    with contextlib.redirect_stdout(io.StringIO()):
        argv = ["apply", "-f", str(manifest), "-n", name, "--kubeconfig", str(kubeconfig)]
        argv += ["--applyset", "prod-team"]  # the other team's app: its own inventory
        assert main(argv) == 0
    yield name
    kube_client.delete(Namespace, name)


def victim_state(client: Client, prod: str) -> tuple[str | None, object]:
    found = client.get(Job, "migrate", namespace=prod)
    return meta(found).uid, meta(found).deletionTimestamp


def forced(name: str, namespace: str) -> Doc:
    doc = job(name, 0, image="app:2", annotations=FORCE)
    doc["metadata"]["namespace"] = namespace
    return doc


@pytest.mark.parametrize(
    "route",
    [
        pytest.param("namespace", id="namespace team/../prod"),
        pytest.param("name", id="name x/../../../prod/jobs/migrate"),
    ],
)
def test_traversal_no_longer_deletes_another_namespaces_job(
    apply: Apply, kube_client: Client, namespace: str, prod: str, route: str
) -> None:
    before = victim_state(kube_client, prod)
    assert before[1] is None
    if route == "namespace":
        doc = forced("migrate", f"{namespace}/../{prod}")
    else:
        doc = forced(f"x/../../../{prod}/jobs/migrate", namespace)
    out = apply([doc])
    assert victim_state(kube_client, prod) == before  # not deleted, not being deleted
    assert pod_spec(kube_client.get(Job, "migrate", namespace=prod)).containers[0].image == "app:1"
    assert out.code == 2, out
    assert out.events == []  # refused before any connection: no run, no event
    assert "is invalid" in out.stderr and len(out.stderr.splitlines()) == 1


def test_a_hostile_name_below_the_plan_stays_in_its_segment(
    kubeconfig: Path, kube_client: Client, namespace: str, prod: str
) -> None:
    """The edge alone, fed what the plan now refuses, with the victim's real UID: the API server sees
    one encoded segment and finds nothing."""
    uid, _ = victim_state(kube_client, prod)
    assert uid
    api = connect(str(kubeconfig), None, retry_budget=5)
    try:
        climb = f"x/../../../{prod}/jobs/migrate"
        assert api.get(JOBS, "migrate", f"{namespace}/../{prod}") is None
        assert api.get(JOBS, climb, namespace) is None
        for name, ns in [("migrate", f"{namespace}/../{prod}"), (climb, namespace)]:
            try:
                deleted = api.delete(JOBS, name, ns, uid=uid, propagation="Foreground")
            except Exception as err:  # the server may refuse the odd path outright: also fine
                assert "400" in str(err) or "404" in str(err), err
            else:
                assert deleted is False
    finally:
        api.close()
    assert victim_state(kube_client, prod) == (uid, None)
    try:
        kube_client.get(Job, "migrate", namespace=namespace)
    except ApiError as err:
        assert err.status.code == 404
