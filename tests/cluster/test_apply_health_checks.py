"""`krmfn apply` with CEL health checks (Flux's healthCheckExprs), on the real control plane: a CRD whose
objects' status the test drives (Ready after a delay, a failed state, a custom field with no conditions
at all), expressions from --health-checks and from an object in the stream, a run-time failure naming the
object and the expression, and a compile error refused before anything is applied."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from lightkube import ApiError, Client
from lightkube.generic_resource import create_namespaced_resource

from krmfn.yaml.io import dump_all_fast

from .crds import controller as controller_of
from .crds import install, open_crd
from .patience import STEP_TIMEOUT
from .runner_fixtures import Apply, Doc
from .runner_fixtures import apply as apply  # noqa: PLC0414 (re-exported fixture)

GROUP = "health.test.krmfn.dev"
Widget = create_namespaced_resource(GROUP, "v1", "Widget", "widgets")
CRD = open_crd(GROUP, "Widget", "widgets")
READY = "status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')"
FAILED = "status.?phase.orValue('') == 'Failed'"
IN_PROGRESS = "status.?phase.orValue('') == 'Provisioning'"
# A Flux user's entry, as Flux's docs write one: copied unchanged.
ENTRY = {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "inProgress": IN_PROGRESS, "failed": FAILED,
         "current": READY}  # fmt: skip


@pytest.fixture(scope="module")
def widgets(kube_client: Client) -> None:
    """The Widget CRD, created once (cluster-scoped, so shared by this module's tests)."""
    install(kube_client, CRD, Widget)


def widget(name: str, **spec: Any) -> Doc:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": name,
            "annotations": {"krmfn.dev/step-timeout": STEP_TIMEOUT}}, "spec": spec}  # fmt: skip


def checks_file(tmp_path: Path, *entries: Doc) -> str:
    path = tmp_path / "health-checks.yaml"
    path.write_text(dump_all_fast([list(entries)]))
    return str(path)


@pytest.fixture
def controller(kube_client: Client, namespace: str) -> Iterator[Callable[[str, float, Doc], None]]:
    """``controller(name, delay, status)``: writes ``status`` on the Widget ``name`` ``delay`` seconds
    after it appears, as its controller would."""
    with controller_of(kube_client, namespace, Widget) as drive:
        yield drive


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
