"""`kustomize build | krmfn-<name> --fn-config FILE | kubectl apply -f -` against the real control plane."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

from e2e import ROOT, as_pipe, derive_source, env, tool

PACKAGE = ROOT / "examples" / "staged-deploy"


def pipeline(
    source: Path, commands: list[list[str]], kubeconfig: Path, sink: str = ""
) -> subprocess.CompletedProcess[str]:
    """kustomize build | each function | ``sink`` (default: ``kubectl apply --server-side -f -``)."""
    stages = [f"{shlex.quote(tool('kustomize'))} build .", *map(shlex.join, commands)]
    stages.append(
        sink or f"{shlex.quote(tool('kubectl'))} --kubeconfig {kubeconfig} apply --server-side -f -"
    )
    return subprocess.run(
        ["bash", "-o", "pipefail", "-c", " | ".join(stages)],
        cwd=source,
        env=env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_staged_deploy_pipe_applies_hashed_jobs_and_reapplies_cleanly(
    kubeconfig: Path, namespace: str, tmp_path: Path
) -> None:
    source = derive_source(PACKAGE, tmp_path / "repo")
    commands = as_pipe(source, namespace=namespace)
    first = pipeline(source, commands, kubeconfig)
    assert first.returncode == 0, first.stderr
    applied = set(re.findall(r"^(\S+) serverside-applied$", first.stdout, re.MULTILINE))
    jobs = sorted(name for name in applied if name.startswith("job.batch/"))
    assert [re.sub(r"-[0-9a-f]{8}$", "-<hash>", name) for name in jobs] == [
        "job.batch/cache-warmup-<hash>",
        "job.batch/db-migration-<hash>",
    ], first.stdout
    assert any(name.startswith("deployment.apps/") for name in applied)
    again = pipeline(source, commands, kubeconfig)
    assert again.returncode == 0, again.stderr
    assert set(re.findall(r"^(\S+) serverside-applied$", again.stdout, re.MULTILINE)) == applied


def test_a_validation_error_in_the_pipe_applies_nothing(
    kubeconfig: Path, namespace: str, tmp_path: Path
) -> None:
    source = derive_source(PACKAGE, tmp_path / "repo")
    commands = as_pipe(source, namespace=namespace)
    migration = source / "db-migration.yaml"
    migration.write_text(migration.read_text().replace("restartPolicy: Never", "restartPolicy: Always"))
    done = pipeline(source, commands, kubeconfig)
    assert done.returncode != 0
    assert "krmfn-validate-jobs: error:" in done.stderr
    assert "restartPolicy" in done.stderr
    assert "serverside-applied" not in done.stdout
    listed = subprocess.run(
        [
            tool("kubectl"),
            "--kubeconfig",
            str(kubeconfig),
            "get",
            "all,configmaps",
            "-n",
            namespace,
            "-o",
            "name",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "job.batch/" not in listed.stdout
    assert "deployment.apps/" not in listed.stdout


def test_the_staged_deploy_pipe_into_krmfn_apply_runs_the_steps_in_order(
    kubeconfig: Path, namespace: str, tmp_path: Path
) -> None:
    source = derive_source(PACKAGE, tmp_path / "repo")
    commands = as_pipe(source, namespace=namespace)
    apply = f"krmfn apply -f - -n {namespace} --applyset staged-deploy --kubeconfig {kubeconfig} -o json"
    done = pipeline(source, commands, kubeconfig, apply)
    assert done.returncode == 0, done.stdout + done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    steps = [(e["stepName"], e["result"]) for e in events if e["type"] == "step-done"]
    assert steps == [("pre-deploy", "healthy"), ("deploy", "healthy"), ("post-deploy", "healthy")], steps
    assert events[-1]["type"] == "result" and events[-1]["ok"] is True
