"""`krmfn apply` with CEL health checks (Flux's healthCheckExprs), on the real control plane: a CRD whose
objects' status the test drives (Ready after a delay, a failed state, a custom field with no conditions
at all), expressions from --health-checks and from an object in the stream, a run-time failure naming the
object and the expression, and a compile error refused before anything is applied."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from lightkube import ApiError, Client
from lightkube.generic_resource import create_namespaced_resource
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.types import PatchType

from krmfn.yaml.io import dump_all_fast

from .cluster import wait_until
from .runner_fixtures import Apply, Doc
from .runner_fixtures import apply as apply  # noqa: PLC0414 (re-exported fixture)

GROUP = "health.test.krmfn.dev"
Widget = create_namespaced_resource(GROUP, "v1", "Widget", "widgets")
CRD: Doc = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"widgets.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
        "versions": [{
            "name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
        }],
    },
}  # fmt: skip
READY = "status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')"
FAILED = "status.?phase.orValue('') == 'Failed'"
IN_PROGRESS = "status.?phase.orValue('') == 'Provisioning'"
# A Flux user's entry, as Flux's docs write one: copied unchanged.
ENTRY = {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "inProgress": IN_PROGRESS, "failed": FAILED,
         "current": READY}  # fmt: skip


@pytest.fixture(scope="module")
def widgets(kube_client: Client) -> None:
    """The Widget CRD, created once (cluster-scoped, so shared by this module's tests)."""
    try:
        kube_client.get(CustomResourceDefinition, CRD["metadata"]["name"])
    except ApiError:
        kube_client.create(cast(CustomResourceDefinition, CustomResourceDefinition.from_dict(CRD)))

    def established() -> bool:
        crd = kube_client.get(CustomResourceDefinition, CRD["metadata"]["name"])
        conditions = (crd.status.conditions if crd.status else None) or []
        return any(c.type == "Established" and c.status == "True" for c in conditions)

    wait_until("the Widget CRD established", established, 30)
    wait_until("Widgets served", lambda: _served(kube_client), 30)


def _served(client: Client) -> bool:
    try:
        list(client.list(Widget, namespace="default"))
    except Exception:  # a plain-text 404 until discovery serves the kind
        return False
    return True


def widget(name: str, **spec: Any) -> Doc:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": name,
            "annotations": {"krmfn.dev/step-timeout": "20s"}}, "spec": spec}  # fmt: skip


def checks_file(tmp_path: Path, *entries: Doc) -> str:
    path = tmp_path / "health-checks.yaml"
    path.write_text(dump_all_fast([list(entries)]))
    return str(path)


@pytest.fixture
def controller(kube_client: Client, namespace: str) -> Iterator[Callable[[str, float, Doc], None]]:
    """``controller(name, delay, status)``: writes ``status`` on the Widget ``name`` ``delay`` seconds
    after it appears, as its controller would."""
    stop = threading.Event()
    threads: list[threading.Thread] = []

    def drive(name: str, delay: float, status: Doc) -> None:
        def run() -> None:
            while not stop.wait(0.05):
                try:
                    kube_client.get(Widget, name, namespace=namespace)
                except ApiError:
                    continue
                time.sleep(delay)
                kube_client.patch(Widget.Status, name, {"status": status}, namespace=namespace,
                                  patch_type=PatchType.MERGE)  # fmt: skip
                return

        threads.append(threading.Thread(target=run, daemon=True))
        threads[-1].start()

    yield drive
    stop.set()
    for thread in threads:
        thread.join(10)


def statuses(out: Any, name: str) -> list[tuple[str, str]]:
    return [(e["state"], e["message"]) for e in out.of("status") if e["object"].endswith(f"/{name}")]


@pytest.mark.usefixtures("widgets")
def test_ready_after_a_delay_is_waited_for(
    apply: Apply, controller: Callable[[str, float, Doc], None], tmp_path: Path
) -> None:
    controller("w", 1.5, {"phase": "Ready", "conditions": [{"type": "Ready", "status": "True"}]})
    out = apply([widget("w")], "--wait", "--health-checks", checks_file(tmp_path, ENTRY))
    assert out.code == 0, out.error
    seen = statuses(out, "w")
    assert seen[0] == ("in-progress", "waiting for its controller to write a status")
    assert seen[-1] == ("current", f"current: `{READY}`")


@pytest.mark.usefixtures("widgets")
def test_a_failed_state_fails_the_step_naming_the_object_and_the_expression(
    apply: Apply, controller: Callable[[str, float, Doc], None], namespace: str, tmp_path: Path
) -> None:
    controller("w", 0.5, {"phase": "Provisioning"})
    controller("w", 2.0, {"phase": "Failed"})
    out = apply([widget("w")], "--wait", "--health-checks", checks_file(tmp_path, ENTRY))
    assert out.code == 1
    assert ("in-progress", f"inProgress: `{IN_PROGRESS}`") in statuses(out, "w")
    assert out.error.endswith(f"Widget.{GROUP} {namespace}/w failed: failed: `{FAILED}`"), out.error


@pytest.mark.usefixtures("widgets")
def test_a_custom_field_without_conditions(
    apply: Apply, controller: Callable[[str, float, Doc], None], tmp_path: Path
) -> None:
    entry = {"apiVersion": f"{GROUP}/v1", "kind": "Widget",
             "current": "status.?readyReplicas.orValue(0) >= spec.replicas"}  # fmt: skip
    controller("w", 0.3, {"readyReplicas": 1})
    controller("w", 1.5, {"readyReplicas": 3})
    out = apply([widget("w", replicas=3)], "--wait", "--health-checks", checks_file(tmp_path, entry))
    assert out.code == 0, out.error
    seen = statuses(out, "w")
    assert ("in-progress", "no health check expression is true yet") in seen
    assert seen[-1][0] == "current"
    # Without the expression, the built-in rule for custom resources takes it as healthy at once.
    plain = apply([widget("plain", replicas=3)], "--wait", "--applyset", "plain")
    assert plain.code == 0 and statuses(plain, "plain") == [("current", "exists")]


@pytest.mark.usefixtures("widgets")
def test_an_expression_failing_at_run_time_fails_the_object(
    apply: Apply, controller: Callable[[str, float, Doc], None], namespace: str, tmp_path: Path
) -> None:
    entry = {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "current": "status.ready == true"}
    controller("w", 0.3, {"other": 1})
    path = checks_file(tmp_path, entry)
    out = apply([widget("w")], "--wait", "--health-checks", path)
    assert out.code == 1
    assert out.error.endswith(
        f"Widget.{GROUP} {namespace}/w failed: health check current `status.ready == true` "
        f'(--health-checks {path}, entry 1 (Widget.{GROUP})) failed: Key not found in map : "ready"'
    ), out.error


@pytest.mark.usefixtures("widgets")
def test_health_checks_in_the_stream_are_read_and_never_applied(
    apply: Apply, controller: Callable[[str, float, Doc], None]
) -> None:
    holder = {"apiVersion": "fn.krmfn.dev/v1alpha1", "kind": "HealthChecks",
              "metadata": {"name": "health", "annotations": {"krmfn.dev/health-checks": "true"}},
              "healthCheckExprs": [ENTRY]}  # fmt: skip
    controller("w", 1.0, {"conditions": [{"type": "Ready", "status": "True"}]})
    out = apply([holder, widget("w")], "--wait")
    assert out.code == 0, out.error
    assert statuses(out, "w")[-1] == ("current", f"current: `{READY}`")
    assert [e["object"].split()[0] for e in out.of("apply")] == [f"Widget.{GROUP}"]


@pytest.mark.usefixtures("widgets")
def test_an_expression_that_does_not_compile_is_refused_before_anything_is_applied(
    apply: Apply, kube_client: Client, namespace: str, tmp_path: Path
) -> None:
    entry = {**ENTRY, "failed": "status.phase == 'Failed' &&"}
    out = apply([widget("w")], "--wait", "--health-checks", checks_file(tmp_path, entry))
    assert out.code == 2
    assert out.events == []
    [line] = out.stderr.splitlines()
    assert f"entry 1 (Widget.{GROUP}): failed `status.phase == 'Failed' &&` does not compile: " in line
    with pytest.raises(ApiError):
        kube_client.get(Widget, "w", namespace=namespace)
