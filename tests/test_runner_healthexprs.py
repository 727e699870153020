"""CEL health checks (krmfn/runner/health/healthexprs.py) without a cluster: Flux's documented examples judged
as Flux judges them, the evaluation order, run-time failures, and every kind of bad entry refused as one
line, exit 2, before any connection. tests/cluster/test_apply_health_checks.py runs them for real."""

from __future__ import annotations

import resource
from pathlib import Path
from typing import Any

import pytest

from krmfn.runner.commands.cli import main
from krmfn.runner.errors import HealthCheckError
from krmfn.runner.health import healthexprs
from krmfn.runner.health.celworker import Worker
from krmfn.runner.health.healthexprs import MAX_ENTRIES, MAX_EXPRESSION, HealthChecks, load
from krmfn.terminal import safe_line
from krmfn.yaml.io import dump_all_fast

# Flux's Kustomization docs, "Health check expressions": cert-manager's Certificate, as they write it.
CERTIFICATE = {
    "apiVersion": "cert-manager.io/v1",
    "kind": "Certificate",
    "inProgress": "status.conditions.filter(e, e.type == 'Issuing').all(e, e.observedGeneration == "
    "metadata.generation && e.status == 'True')",
    "failed": "status.conditions.filter(e, e.type == 'Ready').all(e, e.observedGeneration == "
    "metadata.generation && e.status == 'False')",
    "current": "status.conditions.filter(e, e.type == 'Ready').all(e, e.observedGeneration == "
    "metadata.generation && e.status == 'True')",
}


def certificate(
    *conditions: tuple[str, str], generation: int = 2, observed: int | None = None
) -> dict[str, Any]:
    status: dict[str, Any] = {
        "conditions": [{"type": t, "status": s, "observedGeneration": generation} for t, s in conditions]
    }
    if observed is not None:
        status["observedGeneration"] = observed
    return {"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
            "metadata": {"name": "c", "generation": generation}, "status": status}  # fmt: skip


def checks(*entries: dict[str, Any]) -> HealthChecks:
    return load(None, [{"apiVersion": "fn.krmfn.dev/v1alpha1", "kind": "HealthChecks",
                        "metadata": {"name": "h", "annotations": {"krmfn.dev/health-checks": "true"}},
                        "healthCheckExprs": list(entries)}])  # fmt: skip


def test_flux_certificate_example_is_judged_as_flux_judges_it() -> None:
    judge = checks(CERTIFICATE).judge
    assert judge(certificate(("Issuing", "True"), ("Ready", "False"))).state == "in-progress"  # first
    assert judge(certificate(("Issuing", "False"), ("Ready", "False"))).state == "failed"
    assert judge(certificate(("Issuing", "False"), ("Ready", "True"))).state == "current"
    # As in Flux: .all() over no Issuing condition is true, so the example says in progress.
    assert judge(certificate(("Ready", "True"))).state == "in-progress"
    # Flux's order is inProgress, failed, current; none true: in progress.
    both = checks({**CERTIFICATE, "failed": "true", "current": "true"}).judge(
        certificate(("Issuing", "False"), ("Ready", "True"))
    )
    assert both.state == "failed" and both.message == "failed: `true`"
    none = checks({"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "current": "false"})
    assert none.judge(certificate()).state == "in-progress"
    # status.observedGeneration behind metadata.generation: in progress before any expression.
    assert judge(certificate(("Ready", "True"), observed=1)).message == (
        "waiting for the controller to observe the new generation"
    )


@pytest.mark.parametrize(
    ("expression", "status", "state"),
    [
        ("has(status.attribute) && status.attribute.ready", {"x": 1}, "in-progress"),  # Flux's has() FAQ
        ("status.?conditions.orValue([]).exists(c, c.type == 'Ready')", {"x": 1}, "in-progress"),
        ("status.phase.lowerAscii() == 'ready'", {"phase": "Ready"}, "current"),  # strings extension
        ("status.ready >= 1.0", {"ready": 3}, "current"),  # int against double, as in Flux
        ("base64.decode(status.b) == b'hi'", {"b": "aGk="}, "current"),  # encoders extension
        ("size(data) == 1 && data.k == 'v'", {"x": 1}, "current"),  # any top-level field is a variable
    ],
)
def test_flux_environment_features(expression: str, status: dict[str, Any], state: str) -> None:
    obj = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {},
        "data": {"k": "v"},
        "status": status,
    }
    found = checks({"apiVersion": "example.com/v1", "kind": "Widget", "current": expression}).judge(obj)
    assert found.state == state, found.message


def test_other_kinds_and_versions() -> None:
    judge = checks({"apiVersion": "example.com/v1", "kind": "Widget", "current": "true"}).judge
    assert judge({"apiVersion": "example.com/v2", "kind": "Widget", "status": {}}) is not None  # any version
    assert judge({"apiVersion": "other.com/v1", "kind": "Widget"}) is None
    assert judge({"apiVersion": "v1", "kind": "ConfigMap"}) is None
    assert not HealthChecks() and not load(None, [{"apiVersion": "v1", "kind": "ConfigMap"}])


@pytest.mark.parametrize(
    ("status", "expression", "why"),
    [
        ({"other": 1}, "status.ready == true", 'Key not found in map : "ready"'),
        ({"phase": "x"}, "status.phase", "returned str, not a bool"),
        ({"n": 1}, "status.n / 0 == 1", "divide by zero"),
        ({"big": 2**70}, "status.big == 1", "out of range"),
        ({"n": 1}, "nothere == 1", 'No value with name "nothere"'),
    ],
)
def test_an_expression_failing_at_run_time_fails_the_object(
    status: dict[str, Any], expression: str, why: str
) -> None:
    obj = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "status": status}
    found = checks({"apiVersion": "example.com/v1", "kind": "Widget", "current": expression}).judge(obj)
    assert found.state == "failed"
    assert found.message.startswith(
        f"health check current `{expression}` (HealthChecks h (document 1), entry 1"
    )
    assert why in found.message and "\n" not in found.message


def test_no_status_yet_is_waited_for() -> None:
    entry = {"apiVersion": "example.com/v1", "kind": "Widget", "current": "status.ready == true"}
    for obj in ({"apiVersion": "example.com/v1", "kind": "Widget"}, {"apiVersion": "example.com/v1",
                "kind": "Widget", "status": {}}):  # fmt: skip
        assert checks(entry).judge(obj).message == "waiting for its controller to write a status"


GOOD = {"apiVersion": "example.com/v1", "kind": "Widget", "current": "true"}
BAD_ENTRIES: list[tuple[Any, str]] = [
    ("just text", "no health checks: expected a list of"),
    ({"healthCheckExprs": {"a": 1}}, "healthCheckExprs must be a list of entries, not dict"),
    ([["x"]], "entry 1: expected a mapping with apiVersion, kind and current, not list"),
    ([{**GOOD, "name": "w"}], "entry 1: unknown field 'name'"),
    ([{**GOOD, "current": 1}], "entry 1: current must be a string, not int"),
    ([{"kind": "Widget", "current": "true"}], "entry 1: apiVersion and kind are required"),
    ([{**GOOD, "apiVersion": "a/b/v1"}], "entry 1: not an apiVersion and kind: 'a/b/v1'"),
    ([{**GOOD, "kind": "Wid get"}], "not an apiVersion and kind"),
    ([{**GOOD, "current": " "}], "entry 1 (Widget.example.com): current is required"),
    (
        [{"apiVersion": "batch/v1", "kind": "Job", "current": "true"}],
        "entry 1 (Job.batch): the runner's Job rules",
    ),
    ([{**GOOD, "failed": "x" * (MAX_EXPRESSION + 1)}], f"failed is {MAX_EXPRESSION + 1} characters long"),
    (
        [GOOD, {**GOOD, "current": "status.x &&"}],
        "entry 2 (Widget.example.com): current `status.x &&` does not "
        "compile: ERROR: <input>:1:12: Syntax error",
    ),
    ([{**GOOD, "inProgress": "status.x == 'a"}], "inProgress `status.x == 'a` does not compile"),
    ([GOOD, GOOD], "entry 2 (Widget.example.com): a second health check for Widget.example.com (the first: "),
    ([GOOD] * (MAX_ENTRIES + 1), f"{MAX_ENTRIES + 1} health checks, more than {MAX_ENTRIES} (one per kind)"),
]


@pytest.mark.parametrize(("content", "message"), BAD_ENTRIES)
def test_every_bad_entry_is_one_line_and_exit_2_before_connecting(
    content: Any, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    checks_file = tmp_path / "checks.yaml"
    checks_file.write_text(dump_all_fast([content]))
    manifest = tmp_path / "m.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    for command in ("plan", "apply"):
        # No kubeconfig: the error comes before any attempt to read one.
        extra = ["--applyset", "a", "--kubeconfig", "/nonexistent"] if command == "apply" else []
        code = main([command, "-f", str(manifest), "--health-checks", str(checks_file), *extra])
        err = capsys.readouterr().err
        assert code == 2, err
        [line] = err.splitlines()
        assert line.startswith(f"krmfn {command}: --health-checks {checks_file}"), line
        assert message in line, line


def test_hostile_text_in_an_entry_is_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    checks_file = tmp_path / "checks.yaml"
    checks_file.write_text(dump_all_fast([[{**GOOD, "current": "status.x == '\x1b[2J::set-output'\n&&"}]]))
    manifest = tmp_path / "m.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    assert main(["plan", "-f", str(manifest), "--health-checks", str(checks_file)]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "::" not in err and len(err.splitlines()) == 1
    assert "\\x1b[2J:\\x3aset-output" in err


def test_stream_objects_and_the_file_combine_and_conflict(tmp_path: Path) -> None:
    holder = {"apiVersion": "fn.krmfn.dev/v1alpha1", "kind": "HealthChecks",
              "metadata": {"name": "h", "annotations": {"krmfn.dev/health-checks": "true"}},
              "healthCheckExprs": [GOOD]}  # fmt: skip
    flux = tmp_path / "kustomization.yaml"  # a Flux Kustomization: its spec.healthCheckExprs
    flux.write_text(
        dump_all_fast(
            [
                {
                    "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
                    "kind": "Kustomization",
                    "metadata": {"name": "app"},
                    "spec": {"healthCheckExprs": [CERTIFICATE]},
                }
            ]
        )
    )
    both = load(str(flux), [holder])
    assert sorted(both.by_kind) == [("cert-manager.io", "Certificate"), ("example.com", "Widget")]
    with pytest.raises(HealthCheckError, match=r"a second health check for Widget\.example\.com"):
        load(str(flux), [holder, {**holder, "metadata": {**holder["metadata"], "name": "again"}}])
    applied = {**holder, "apiVersion": "v1", "kind": "ConfigMap"}
    with pytest.raises(HealthCheckError) as refused:
        load(None, [applied])
    assert str(refused.value).startswith(
        'ConfigMap h (document 1): annotated krmfn.dev/health-checks: "true" but would be applied to the '
        "cluster"
    )
    local = {**applied, "metadata": {"name": "h", "annotations": {"krmfn.dev/health-checks": "true",
             "config.kubernetes.io/local-config": "true"}}}  # fmt: skip
    assert load(None, [local])
    two_docs = tmp_path / "two.yaml"
    two_docs.write_text(dump_all_fast([[GOOD], [GOOD]]))
    with pytest.raises(HealthCheckError, match="expected one YAML document, found 2"):
        load(str(two_docs), [])


# --- cost: an expression cannot take the runner's memory or time (celworker.py) ---------------------------
# cel-cpp stops an evaluation after 10,000 iterations but does not bound its memory: each
# .replace('', 'xxxxxxxxxx') makes a string eleven times longer, so this 200-character expression asks for
# 195 MB (and three more calls for 260 GB). It is evaluated in the worker process, under its limits.
BOMB = "'xxxxxxxxxx'" + ".replace('', 'xxxxxxxxxx')" * 7 + ".size() > 0"
WIDGET = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "status": {"x": 1}}


def _with_worker(monkeypatch: pytest.MonkeyPatch, worker: Worker) -> None:
    monkeypatch.setattr(healthexprs, "_worker", lambda: worker, raising=False)


def test_an_expression_that_needs_too_much_memory_fails_its_object_not_the_runner(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    worker = Worker(memory=200 << 20)
    _with_worker(monkeypatch, worker)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        found = checks({**GOOD, "current": BOMB}).judge(WIDGET)
        assert found.state == "failed" and "MemoryError" in found.message
        assert checks(GOOD).judge(WIDGET).state == "current"  # the worker goes on
    finally:
        worker.close()
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100 << 10  # KiB: not in this process


def test_an_expression_that_takes_too_long_fails_its_object_and_the_next_gets_a_new_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    worker = Worker(seconds=0.2)
    _with_worker(monkeypatch, worker)
    try:
        found = checks({**GOOD, "current": BOMB}).judge(WIDGET)
        assert found.state == "failed" and "took longer than 0.2s (stopped)" in found.message
        assert checks(GOOD).judge(WIDGET).state == "current"
        worker._child.kill()  # type: ignore[union-attr]  # as the kernel would
        died = checks(GOOD).judge(WIDGET)
        assert died.state == "failed" and "its process died" in died.message
        assert checks(GOOD).judge(WIDGET).state == "current"
    finally:
        worker.close()


def test_an_error_quoting_a_cluster_value_is_one_bounded_line() -> None:
    for value in ("\x1b[2J\r\n::error::forged\u202e" * 2000, "\ud800", "x" * 100_000):
        obj = {**WIDGET, "status": {"x": value}}
        found = checks({**GOOD, "current": "status[status.x] == 1"}).judge(obj)
        assert found.state == "failed" and len(found.message) < 600, len(found.message)
        line = safe_line(found.message)
        assert "::" not in line and line.isprintable()
