"""`krmfn apply` and a failed Job's logs, end to end: kwok serves the test pods' container logs from files
(cluster.write_container_logs), the API server's pods/log reaches them, and the runner puts the last
``--log-lines`` lines of the failed containers in the error and in the failed ``status`` event, escaped
on a terminal and exact in JSON."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from krmfn.runner.cli import main
from krmfn.yaml.io import dump_all_fast

from .cluster import COUNTED_LOG, HOSTILE_CONTAINER, HOSTILE_LOG, PREVIOUS_LOG, QUIET_CONTAINER
from .runner_fixtures import Apply, Doc, job
from .runner_fixtures import apply as apply  # noqa: PLC0414 (re-exported fixture)


def _failed_status(events: list[Doc]) -> Doc:
    failed = [e for e in events if e["type"] == "status" and e["state"] == "failed"]
    assert len(failed) == 1, events
    return failed[0]


def _named(doc: Doc, container: str) -> Doc:
    doc["spec"]["template"]["spec"]["containers"][0]["name"] = container
    return doc


def test_a_failed_job_reports_the_last_20_log_lines_by_default(apply: Apply, namespace: str) -> None:
    out = apply([job("migrate", 0, fail=True)], "--wait")
    assert out.code == 1
    tail = COUNTED_LOG[-20:]
    assert "container main: Error (exit code 3) | last 20 log lines: " + " / ".join(tail) in out.error
    assert COUNTED_LOG[-21] not in out.error
    status = _failed_status(out.events)
    assert status["object"] == f"Job.batch {namespace}/migrate"
    [log] = status["logs"]
    assert log["container"] == "main" and log["previous"] is False
    assert log["pod"].startswith("migrate-")
    assert log["lines"] == list(tail)
    assert out.error.endswith(f"Job.batch {namespace}/migrate failed: {status['message']}")
    # Only the failure carries logs: the Job's earlier status events do not.
    assert all("logs" not in e for e in out.of("status") if e["state"] != "failed")


def test_log_lines_sets_how_many_and_0_turns_them_off(apply: Apply) -> None:
    three = apply([job("migrate", 0, fail=True)], "--wait", "--log-lines", "3")
    assert three.code == 1
    assert "last 3 log lines: " + " / ".join(COUNTED_LOG[-3:]) in three.error
    assert _failed_status(three.events)["logs"][0]["lines"] == list(COUNTED_LOG[-3:])

    off = apply([job("again", 0, fail=True)], "--wait", "--log-lines", "0", "--applyset", "off")
    assert off.code == 1
    assert "Error (exit code 3)" in off.error
    assert "log lines" not in off.error and "migration step" not in off.error
    assert "logs" not in _failed_status(off.events)


def test_an_empty_log_adds_nothing(apply: Apply) -> None:
    out = apply([_named(job("migrate", 0, fail=True), QUIET_CONTAINER)], "--wait")
    assert out.code == 1
    assert f"container {QUIET_CONTAINER}: Error (exit code 3)" in out.error
    assert "log lines" not in out.error
    assert "logs" not in _failed_status(out.events)


def test_a_container_restarted_in_place_reports_its_previous_run(apply: Apply) -> None:
    out = apply([job("migrate", 0, fail=True, restart_policy="OnFailure", backoff_limit=1)], "--wait")
    assert out.code == 1
    assert "last 2 log lines before the restart: " + " / ".join(PREVIOUS_LOG) in out.error, out.error
    [log] = _failed_status(out.events)["logs"]
    assert log["previous"] is True and log["lines"] == list(PREVIOUS_LOG)


def test_hostile_log_lines_are_escaped_on_a_terminal_and_exact_in_json(
    apply: Apply, kubeconfig: Path, namespace: str, tmp_path: Path
) -> None:
    doc = _named(job("migrate", 0, fail=True), HOSTILE_CONTAINER)
    as_json = apply([doc], "--wait")
    assert as_json.code == 1
    assert _failed_status(as_json.events)["logs"][0]["lines"] == list(HOSTILE_LOG)

    path = tmp_path / "hostile.yaml"
    path.write_text(dump_all_fast([_named(job("migrate-text", 0, fail=True), HOSTILE_CONTAINER)]))
    out, err = io.StringIO(), io.StringIO()
    argv = ["apply", "-f", str(path), "-n", namespace, "--kubeconfig", str(kubeconfig), "-o", "text",
            "--applyset", "text", "--wait"]  # fmt: skip
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert main(argv) == 1
    text = out.getvalue()
    for raw in ("\x1b", "\r", "\u202e", "::add-mask", "##vso"):
        assert raw not in text + err.getvalue(), raw
    # The failed status line and the summary line each carry the lines, escaped, on one line.
    lines = [line for line in text.splitlines() if "fatal: migration 0042 failed" in line]
    assert len(lines) == 2, text
    for line in lines:
        assert "\\x1b[2J\\x1b[Hscreen cleared / :\\x3aadd-mask:\\x3asecret-value / #\\x23vso" in line
        assert "ok\\rFORGED krmfn line / bidi \\u202eevil\\u202c text" in line
