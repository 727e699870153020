"""`krmfn apply` on the real control plane: the staged-deploy sequence, failures, timeouts, re-runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from lightkube import Client
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import Pod

from krmfn.yaml.io import dump_all_fast

from .objects import created, exists, meta, name_of, present, status_of
from .runner_fixtures import Apply, deployment, final_wait, job
from .runner_fixtures import apply as apply  # noqa: PLC0414 (re-exported fixture)


def staged(tag: str = "1", *, fail: bool = False) -> list[dict[str, object]]:
    return [
        job("db-migration", 0, image=f"app:{tag}", fail=fail),
        deployment("web", 1, image=f"app:{tag}"),
        final_wait(job("cache-warmup", 2, image=f"app:{tag}")),
    ]


def test_staged_deploy_runs_migration_then_rollout_then_warmup(
    apply: Apply, kube_client: Client, namespace: str
) -> None:
    out = apply(staged())
    assert out.code == 0, out.error
    assert out.step_results() == [("step0", "healthy"), ("step1", "healthy"), ("step2", "healthy")]
    # Each step's first apply comes only after the previous step was reported healthy.
    kinds = [
        (e["type"], e.get("object", e.get("stepName")))
        for e in out.events
        if e["type"] in ("apply", "step-done")
    ]
    assert kinds == [
        ("apply", f"Job.batch {namespace}/db-migration"),
        ("step-done", "step0"),
        ("apply", f"Deployment.apps {namespace}/web"),
        ("step-done", "step1"),
        ("apply", f"Job.batch {namespace}/cache-warmup"),
        ("step-done", "step2"),
    ]
    migration = kube_client.get(Job, "db-migration", namespace=namespace)
    web = kube_client.get(Deployment, "web", namespace=namespace)
    warmup = kube_client.get(Job, "cache-warmup", namespace=namespace)
    assert status_of(migration).succeeded == 1
    assert status_of(web).availableReplicas == 2
    assert status_of(warmup).succeeded == 1
    migrated = present(status_of(migration).completionTime, "completionTime of Job db-migration")
    assert migrated <= created(web)
    assert created(web) <= created(warmup)


def test_failing_migration_stops_the_sequence(apply: Apply, kube_client: Client, namespace: str) -> None:
    out = apply(staged(fail=True))
    assert out.code == 1
    assert out.step_results() == [("step0", "failed")]
    assert f"Job.batch {namespace}/db-migration failed: BackoffLimitExceeded" in out.error
    assert "container main: Error (exit code 3)" in out.error
    assert not exists(kube_client, Deployment, "web", namespace)
    assert not exists(kube_client, Job, "cache-warmup", namespace)
    assert out.result["ok"] is False
    assert (out.result["failedStep"], out.result["failedStepName"]) == (0, "step0")


def test_step_timeout_fails_the_step_and_names_what_was_pending(
    apply: Apply, kube_client: Client, namespace: str
) -> None:
    slow = job("slow-migration", 0, slow="1h", timeout="2s")  # timeout under test
    out = apply([slow, deployment("web", 1)])
    assert out.code == 1  # the message below says the 2 s budget ended it, not the 1 h Job
    assert out.step_results() == [("step0", "timeout")]
    assert (
        f"step step0: not healthy after 2s: Job.batch {namespace}/slow-migration: waits for Complete; now "
        "running: 1 active" in out.error
    )
    assert not exists(kube_client, Deployment, "web", namespace)


def test_unchanged_reapply_creates_nothing_new(apply: Apply, kube_client: Client, namespace: str) -> None:
    assert apply(staged()).code == 0
    before = {
        name: meta(kube_client.get(Job, name, namespace=namespace)).uid
        for name in ("db-migration", "cache-warmup")
    }
    pods_before = sorted(name_of(p) for p in kube_client.list(Pod, namespace=namespace))
    out = apply(staged())
    assert out.code == 0, out.error
    assert out.actions()[f"Job.batch {namespace}/db-migration"] == "unchanged"
    assert out.actions()[f"Job.batch {namespace}/cache-warmup"] == "unchanged"
    after = {name: meta(kube_client.get(Job, name, namespace=namespace)).uid for name in before}
    assert after == before
    assert sorted(name_of(p) for p in kube_client.list(Pod, namespace=namespace)) == pods_before
    # The first run held the unchanged Deployment for its settle window; by the API server's clock its pods
    # have been ready that long, so this run does not wait the window again (settle.py, rule 4).
    web = [s for s in out.of("status") if s["object"] == f"Deployment.apps {namespace}/web"]
    assert [(s["state"], s["message"].rpartition(", ")[2]) for s in web] == [
        ("current", "unchanged and held for 5s already")], web  # fmt: skip


def test_interrupted_run_stops_cleanly_and_a_rerun_finishes_without_rerunning_jobs(
    kubeconfig: Path, kube_client: Client, namespace: str, tmp_path: Path
) -> None:
    docs = [job("db-migration", 0, slow="3s"), deployment("web", 1), final_wait(job("warmup", 2))]
    manifest = tmp_path / "staged.yaml"
    manifest.write_text(dump_all_fast(docs))
    argv = [str(Path(sys.executable).parent / "krmfn"), "apply", "-f", str(manifest), "-n", namespace,
            "--kubeconfig", str(kubeconfig), "-o", "json", "--applyset", "krmfn"]  # fmt: skip
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ)
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if json.loads(line)["type"] == "wait":
            break  # the migration runs and the runner waits for it
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=20)
    assert proc.returncode == 130
    events = [json.loads(line) for line in rest.splitlines()]
    error = next(e for e in events if e["type"] == "error")["message"]
    assert error == "interrupted by SIGINT during step step0; nothing was pruned; run again to continue"
    assert not exists(kube_client, Deployment, "web", namespace)
    uid = meta(kube_client.get(Job, "db-migration", namespace=namespace)).uid

    rerun = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert meta(kube_client.get(Job, "db-migration", namespace=namespace)).uid == uid
    assert status_of(kube_client.get(Job, "db-migration", namespace=namespace)).succeeded == 1
    assert exists(kube_client, Deployment, "web", namespace)
    assert status_of(kube_client.get(Job, "warmup", namespace=namespace)).succeeded == 1


def test_sigterm_exits_143(kubeconfig: Path, namespace: str, tmp_path: Path) -> None:
    manifest = tmp_path / "slow.yaml"
    manifest.write_text(dump_all_fast([job("slow", 0, slow="1h"), job("after", 1)]))
    argv = [str(Path(sys.executable).parent / "krmfn"), "apply", "-f", str(manifest), "-n", namespace,
            "--kubeconfig", str(kubeconfig), "--applyset", "krmfn"]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        if "waiting for" in line:
            break
    proc.send_signal(signal.SIGTERM)
    rest, _ = proc.communicate(timeout=20)
    assert proc.returncode == 143
    assert rest.endswith(
        "\ninterrupted by SIGTERM during step step0; nothing was pruned; run again to continue\n"
    )
    assert "Traceback" not in rest
