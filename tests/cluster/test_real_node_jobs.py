"""`krmfn apply` on the real node (node.py): containers run under a kubelet, so the exit codes, the logs,
the restarts in place and the readiness probes the runner reads are real. Each test's namespace sends its
pods to the real node; kwok's node keeps every other test's simulated pods."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
from lightkube import Client
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import Event, Pod

from krmfn.runner.commands.cli import main
from krmfn.yaml.io import dump_all_fast

from .node import RealNode
from .objects import created, present, status_of
from .runner_fixtures import Apply, Doc, deployment, job, runs
from .runner_fixtures import apply as apply  # noqa: PLC0414 (re-exported fixture)

COUNTED = tuple(f"migration step {i:02d} of 30" for i in range(1, 31))
COUNTING = 'for i in $(seq -w 1 30); do echo "migration step $i of 30"; done; exit 3'
HOSTILE = (
    "\x1b[2J\x1b[Hscreen cleared",  # erase the screen, cursor home
    "::add-mask::secret-value",  # a GitHub workflow command
    "##vso[task.setvariable variable=x]1",  # an Azure DevOps one
    "ok\rFORGED krmfn line",  # a carriage return that would overwrite the line
    "bidi \u202eevil\u202c text",
    "fatal: migration 0042 failed",
)


@pytest.fixture
def namespace(real_namespace: str) -> str:
    return real_namespace


@pytest.fixture
def app(real_node: RealNode) -> str:
    return real_node.image("app")


def _failed_status(events: list[Doc]) -> Doc:
    failed = [e for e in events if e["type"] == "status" and e["state"] == "failed"]
    assert len(failed) == 1, events
    return failed[0]


def _pods(client: Client, namespace: str, job_name: str) -> list[Pod]:
    return list(client.list(Pod, namespace=namespace, labels={"batch.kubernetes.io/job-name": job_name}))


def test_a_failed_jobs_exit_code_and_last_20_log_lines_reach_the_error(
    apply: Apply, kube_client: Client, namespace: str, app: str
) -> None:
    out = apply([runs(job("migrate", 0), app, COUNTING)], "--wait")
    assert out.code == 1
    [pod] = _pods(kube_client, namespace, "migrate")
    [state] = present(present(pod.status, "pod status").containerStatuses, "container statuses")
    terminated = present(present(state.state, "state").terminated, "terminated state")
    assert (terminated.exitCode, terminated.reason) == (3, "Error")  # the kubelet's, not a stage's
    tail = COUNTED[-20:]
    assert "container main: Error (exit code 3) | last 20 log lines: " + " / ".join(tail) in out.error
    assert COUNTED[-21] not in out.error
    status = _failed_status(out.events)
    [log] = status["logs"]
    assert (log["pod"], log["container"], log["previous"]) == (present(pod.metadata, "").name, "main", False)
    assert log["lines"] == list(tail)
    assert out.error.endswith(f"Job.batch {namespace}/migrate failed: {status['message']}")


def test_log_lines_sets_how_many_and_0_turns_them_off(apply: Apply, app: str) -> None:
    three = apply([runs(job("migrate", 0), app, COUNTING)], "--wait", "--log-lines", "3")
    assert three.code == 1
    assert "last 3 log lines: " + " / ".join(COUNTED[-3:]) in three.error
    off = apply([runs(job("again", 0), app, COUNTING)], "--wait", "--log-lines", "0", "--applyset", "off")
    assert off.code == 1
    assert "Error (exit code 3)" in off.error
    assert "log lines" not in off.error and "migration step" not in off.error
    assert "logs" not in _failed_status(off.events)


def test_an_empty_log_adds_nothing(apply: Apply, app: str) -> None:
    out = apply([runs(job("migrate", 0), app, "exit 7", container="quiet")], "--wait")
    assert out.code == 1
    assert "container quiet: Error (exit code 7)" in out.error
    assert "log lines" not in out.error
    assert "logs" not in _failed_status(out.events)


def test_hostile_log_lines_are_escaped_on_a_terminal_and_exact_in_json(
    apply: Apply, kubeconfig: Path, namespace: str, tmp_path: Path, app: str
) -> None:
    # The container itself writes the bytes: no file stands in for a log.
    script = "printf '%s\\n' \"$@\"; exit 3"

    def hostile(name: str) -> Doc:
        doc = runs(job(name, 0), app, script)
        doc["spec"]["template"]["spec"]["containers"][0]["command"] += ["sh", *HOSTILE]
        return doc

    as_json = apply([hostile("migrate")], "--wait")
    assert as_json.code == 1
    assert _failed_status(as_json.events)["logs"][0]["lines"] == list(HOSTILE)

    path = tmp_path / "hostile.yaml"
    path.write_text(dump_all_fast([hostile("migrate-text")]))
    out, err = io.StringIO(), io.StringIO()
    argv = ["apply", "-f", str(path), "-n", namespace, "--kubeconfig", str(kubeconfig), "-o", "text",
            "--applyset", "text", "--wait"]  # fmt: skip
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert main(argv) == 1
    text = out.getvalue()
    for raw in ("\x1b", "\r", "\u202e", "::add-mask", "##vso"):
        assert raw not in text + err.getvalue(), raw
    lines = [line for line in text.splitlines() if "fatal: migration 0042 failed" in line]
    assert len(lines) == 2, text
    for line in lines:
        assert "\\x1b[2J\\x1b[Hscreen cleared / :\\x3aadd-mask:\\x3asecret-value / #\\x23vso" in line
        assert "ok\\rFORGED krmfn line / bidi \\u202eevil\\u202c text" in line


def restarting_in_place(doc: Doc, image: str, script: str) -> Doc:
    """A Job (``restartPolicy: OnFailure``) running ``script`` with an emptyDir at /runs: kept across the
    container's restarts in place, so the script can tell its runs apart."""
    doc = runs(doc, image, script)
    spec = doc["spec"]["template"]["spec"]
    spec["volumes"] = [{"name": "runs", "emptyDir": {}}]
    spec["containers"][0]["volumeMounts"] = [{"name": "runs", "mountPath": "/runs"}]
    return doc


def test_an_on_failure_job_restarted_in_place_reports_its_exit_code_and_restarts(
    apply: Apply, kube_client: Client, namespace: str, app: str
) -> None:
    # The container counts its runs in an emptyDir (kept across restarts in place) and exits 3 each time.
    script = (
        "n=$(( $(cat /runs/n 2>/dev/null || echo 0) + 1 )); echo $n > /runs/n; "
        'echo "run $n: applying 0042"; echo "run $n: lock timeout after 30s"; exit 3'
    )
    doc = restarting_in_place(job("crashing", 0, restart_policy="OnFailure", backoff_limit=1), app, script)
    out = apply([doc], "--wait")
    assert out.code == 1
    assert "Error (exit code 3)" in out.error, out.error
    assert "restarted" in out.error, out.error
    # When the Job fails, its controller deletes the pod and the kubelet removes the containers; a log read
    # after that gets the kubelet's 200 answer "unable to retrieve container logs for containerd://<id>",
    # which is no log (logtext.py): the lines shown, if any, are the ones the container wrote.
    assert "unable to retrieve" not in out.error, out.error
    for log in _failed_status(out.events).get("logs") or []:
        assert all(line.startswith("run ") for line in log["lines"]), log


def test_follow_shows_each_line_of_a_job_once_in_order_across_a_restart_in_place(
    apply: Apply, namespace: str, app: str
) -> None:
    # The first run writes three lines and exits 1; restarted in place (OnFailure, the emptyDir kept), the
    # second writes one more and succeeds: its stream is another, and no line may be lost or repeated.
    script = (
        'if [ -f /runs/once ]; then echo "second run"; exit 0; fi; touch /runs/once; '
        'for i in 1 2 3; do echo "first run $i"; sleep 0.3; done; exit 1'
    )
    doc = restarting_in_place(job("migrate", 0, restart_policy="OnFailure", backoff_limit=2), app, script)
    out = apply([doc], "--wait", "--follow")
    assert out.code == 0, out.error
    logs = [e for e in out.events if e["type"] == "log"]
    assert [e["line"] for e in logs] == ["first run 1", "first run 2", "first run 3", "second run"], logs
    assert {(e["object"], e["container"], e["stepName"]) for e in logs} == {
        (f"Job.batch {namespace}/migrate", "main", "step0")}  # fmt: skip
    done = next(i for i, e in enumerate(out.events) if e["type"] == "step-done")
    assert all(out.events.index(e) < done for e in logs)  # shown while the step waited, not after


def test_an_indexed_job_names_its_one_failing_index_and_its_exit_code(
    apply: Apply, kube_client: Client, namespace: str, app: str
) -> None:
    script = 'echo "shard $JOB_COMPLETION_INDEX"; [ "$JOB_COMPLETION_INDEX" != 1 ] || exit 4'
    indexed = runs(job("shards", 0, completionMode="Indexed", completions=3, parallelism=3,
                       backoffLimitPerIndex=0), app, script)  # fmt: skip
    del indexed["spec"]["backoffLimit"]
    out = apply([indexed], "--wait")
    assert out.code == 1
    assert "failed indexes: 1" in out.error, out.error
    assert "(index 1" in out.error and "exit code 4" in out.error, out.error
    assert "shard 1" in out.error
    live = status_of(kube_client.get(Job, "shards", namespace=namespace))
    assert (live.succeeded, live.failed, live.failedIndexes) == (2, 1, "1")


def test_a_job_then_a_deployment_with_an_exec_readiness_probe_apply_in_order(
    apply: Apply, kube_client: Client, namespace: str, app: str
) -> None:
    web = runs(deployment("web", 1), app, "trap 'exit 0' TERM; sleep infinity & wait")
    # Ready from the third probe on: the Deployment is Available only once the kubelet's probes say so.
    probe = 'n=$(cat /tmp/probes 2>/dev/null || echo 0); echo $((n + 1)) > /tmp/probes; [ "$n" -ge 2 ]'
    web["spec"]["template"]["spec"]["containers"][0]["readinessProbe"] = {
        "exec": {"command": ["sh", "-c", probe]}, "periodSeconds": 1, "failureThreshold": 1}  # fmt: skip
    out = apply([runs(job("migrate", 0), app, "echo migrated"), web], "--wait")
    assert out.code == 0, out.error
    assert out.step_results() == [("step0", "healthy"), ("step1", "healthy")]
    migration = kube_client.get(Job, "migrate", namespace=namespace)
    assert present(status_of(migration).completionTime, "completionTime") <= created(
        kube_client.get(Deployment, "web", namespace=namespace)
    )
    assert status_of(kube_client.get(Deployment, "web", namespace=namespace)).availableReplicas == 2
    pods = list(kube_client.list(Pod, namespace=namespace, labels={"app": "web"}))
    assert len(pods) == 2
    probed = {
        present(e.involvedObject.name, "event object")
        for e in kube_client.list(Event, namespace=namespace)
        if e.reason == "Unhealthy" and "Readiness probe failed" in (e.message or "")
    }
    assert probed == {present(p.metadata, "").name for p in pods}  # each pod failed its probe first


def test_failures_ignored_by_the_pod_failure_policy_are_shown_while_waiting(
    apply: Apply, namespace: str, app: str
) -> None:
    ignore = {"rules": [{"action": "Ignore", "onExitCodes": {"operator": "In", "values": [3]}}]}
    held = job("ignored", 0, timeout="8s", podFailurePolicy=ignore)  # timeout under test
    out = apply([runs(held, app, "exit 3")], "--wait")
    assert out.code == 1
    statuses = [e["message"] for e in out.of("status") if e["object"] == f"Job.batch {namespace}/ignored"]
    assert any("Error (exit code 3) (ignored by the podFailurePolicy" in m for m in statuses), statuses
    assert "ignored by the podFailurePolicy" in out.error  # the timeout says why it never finished
