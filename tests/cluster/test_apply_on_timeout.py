"""``onTimeout: continue`` (krmfn.dev/on-timeout) on the control plane: a step that times out is recorded
and the run goes on, with its own exit code; without it, the same timeout still stops the run (issue 33)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from krmfn.runner.commands import status_cmd

from .runner_fixtures import Apply, configmap, job
from .runner_fixtures import apply as apply  # noqa: PLC0414 (re-exported fixture)

ON_TIMEOUT = {"krmfn.dev/on-timeout": "continue"}


def test_a_step_that_times_out_with_continue_is_recorded_and_the_run_goes_on(
    apply: Apply, kubeconfig: Path, namespace: str
) -> None:
    stuck = job("warm-cache", 0, slow="1h", timeout="1s", annotations=ON_TIMEOUT)  # timeout under test

    out = apply([stuck, configmap("after", 1, a="1")])

    assert out.code == 3, (out.events, out.stderr)
    assert out.step_results() == [("step0", "timeout"), ("step1", "applied")]  # the final step: no wait
    assert out.actions()[f"ConfigMap {namespace}/after"] == "created"
    assert out.result["ok"] and [t["stepName"] for t in out.result["timedOut"]] == ["step0"]
    assert "not healthy after 1s" in out.result["timedOut"][0]["error"]
    assert not out.of("error")  # a timeout the step allows is not the run's error

    report = io.StringIO()
    with contextlib.redirect_stdout(report):
        code = status_cmd.main(["status", "-n", namespace, "--kubeconfig", str(kubeconfig), "--applyset",
                                "krmfn", "-o", "json"])  # fmt: skip
    data = json.loads(report.getvalue())
    assert code == 1 and data["lastRun"]["result"] == "succeeded" and data["lastRun"]["timedOut"] == ["step0"]
    assert any("went on past the timeout of step(s) step0" in p for p in data["problems"]), data["problems"]


def test_without_continue_the_same_timeout_stops_the_run(apply: Apply, namespace: str) -> None:
    stuck = job("warm-cache", 0, slow="1h", timeout="1s")  # timeout under test
    out = apply([stuck, configmap("after", 1, a="1")])
    assert out.code == 1 and out.step_results() == [("step0", "timeout")]
    assert f"ConfigMap {namespace}/after" not in out.actions()


def test_a_bad_on_timeout_value_is_an_input_error(apply: Apply) -> None:
    out = apply([job("warm-cache", 0, annotations={"krmfn.dev/on-timeout": "ignore"})])
    assert out.code == 2 and out.stderr.count("\n") == 1 and 'must be "fail" or "continue"' in out.stderr
