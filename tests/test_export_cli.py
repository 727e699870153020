"""``krmfn export`` as a command: where it reads from, where it writes, how it fails."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
import yaml

from krmfn.cli import main as krmfn_main
from krmfn.export import main

CONFIGMAP = """apiVersion: v1
kind: ConfigMap
metadata:
  name: {name}
  namespace: apps
  annotations: {{krmfn.dev/step: {step}, krmfn.dev/step-index: '{index}'}}
"""


def _names(text: str) -> list[str]:
    [rset] = yaml.safe_load_all(text)
    return [r["metadata"]["name"] for step in rset["spec"]["steps"] for r in step["resources"]]


def test_directory_is_read_recursively_in_name_order_without_hidden_or_local_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / ".expected").mkdir()
    (tmp_path / "b" / "two.yml").write_text(CONFIGMAP.format(name="two", step="s", index=0))
    (tmp_path / "a.yaml").write_text(CONFIGMAP.format(name="one", step="s", index=0))
    (tmp_path / ".expected" / "diff.yaml").write_text(CONFIGMAP.format(name="hidden", step="s", index=0))
    (tmp_path / "notes.txt").write_text("not yaml: [")
    (tmp_path / "Kptfile").write_text("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: x}\n")
    (tmp_path / "inventory.yaml").write_text(
        "apiVersion: kpt.dev/v1alpha1\nkind: ResourceGroup\nmetadata: {name: inv, namespace: apps}\n"
    )
    assert main(["export", "resourceset", "--name", "app", "-n", "apps", "-f", str(tmp_path)]) == 0
    assert _names(capsys.readouterr().out) == ["one", "two"]


def test_stdin_and_files_combine_in_argument_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(CONFIGMAP.format(name="from-stdin", step="s", index=0)))
    later = tmp_path / "later.yaml"
    later.write_text(CONFIGMAP.format(name="from-file", step="t", index=1))
    assert main(["export", "resourceset", "--name", "app", "-n", "apps", "-f", "-", "-f", str(later)]) == 0
    assert _names(capsys.readouterr().out) == ["from-stdin", "from-file"]


def test_output_file_gets_the_stream_and_stdout_stays_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.yaml"
    source.write_text(CONFIGMAP.format(name="one", step="s", index=3))
    out = tmp_path / "argo.yaml"
    assert main(["export", "argocd", "-f", str(source), "-o", str(out)]) == 0
    assert capsys.readouterr().out == ""
    [obj] = yaml.safe_load_all(out.read_text())
    assert obj["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] == "3"


def test_krmfn_cli_dispatches_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "in.yaml"
    source.write_text(CONFIGMAP.format(name="one", step="s", index=0))
    assert krmfn_main(["export", "resourceset", "-f", str(source), "--name", "app", "-n", "apps"]) == 0
    assert _names(capsys.readouterr().out) == ["one"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("a: [1, 2\n", r"in\.yaml: .*line"),
        ("- just\n- a list\n", r"document 1: not a Kubernetes object \(a list\)"),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n", "document 1: ConfigMap without metadata.name"),
        ("kind: ConfigMap\nmetadata: {name: x}\n", "document 1: missing apiVersion"),
        ("a: 1\na: 2\n", "duplicate key 'a'"),
    ],
    ids=["malformed-yaml", "not-an-object", "no-name", "no-api-version", "duplicate-key"],
)
def test_bad_input_is_a_one_line_error_with_exit_code_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    source = tmp_path / "in.yaml"
    source.write_text(content)
    assert main(["export", "argocd", "-f", str(source)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("krmfn export argocd: ")
    assert err.count("\n") == 1
    assert re.search(message, err), err


def test_missing_file_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "argocd", "-f", str(tmp_path / "absent.yaml")]) == 1
    assert "absent.yaml: no such file or directory" in capsys.readouterr().err


def test_directory_without_yaml_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "argocd", "-f", str(tmp_path)]) == 1
    assert "no .yaml, .yml or .json files in the directory" in capsys.readouterr().err


@pytest.mark.parametrize(
    "args",
    [[], ["resourceset", "-f", "x.yaml", "-n", "apps"], ["argocd"], ["kpt-live", "-f", "x.yaml"]],
    ids=["no-engine", "resourceset-without-name", "no-input", "unknown-engine"],
)
def test_usage_errors_exit_2(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", *args]) == 2
    assert "usage: krmfn export" in capsys.readouterr().err


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "resourceset", "--help"]) == 0
    assert "--service-account" in capsys.readouterr().out


TTL_JOB = """apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  namespace: apps
  annotations: {{krmfn.dev/step: s, krmfn.dev/step-index: '0', krmfn.dev/job-base-name: migrate}}
spec:
  {ttl}
  template:
    spec:
      restartPolicy: Never
      containers: [{{name: main, image: app:1}}]
"""


@pytest.mark.parametrize(
    ("engine", "args"), [("resourceset", ["--name", "app", "-n", "apps"]), ("argocd", [])]
)
def test_a_job_with_a_ttl_is_a_warning_the_engine_would_run_it_again(
    engine: str, args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The ResourceSet seed: do not set ttlSecondsAfterFinished on Jobs a ResourceSet manages; only
    # krmfn apply remembers the Jobs it ran.
    source = tmp_path / "in.yaml"
    source.write_text(
        TTL_JOB.format(name="migrate-0a1b2c3d", ttl="ttlSecondsAfterFinished: 60")
        + "---\n"
        + TTL_JOB.format(name="seed-0a1b2c3d", ttl="backoffLimit: 1")
    )
    assert main(["export", engine, "-f", str(source), *args]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1
    assert err[0].startswith(
        f"krmfn export {engine}: warning: Job apps/migrate-0a1b2c3d: ttlSecondsAfterFinished on a hash-named "
        "Job: once the TTL controller deletes it, "
    )
    assert "re-creates the missing Job, which runs again" in err[0]
    # the Flux Operator's step fails outright when the Job is gone before its health check sees it done
    flux = "before the Flux Operator's health check sees it complete, the step fails (NotFound"
    assert (flux in err[0]) == (engine == "resourceset"), err[0]


SECRET = """apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: apps
  annotations: {krmfn.dev/step: s, krmfn.dev/step-index: '0'}
stringData: {password: hunter2}
"""


def test_resourceset_refuses_secrets_unless_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ResourceSet is not a Secret: the embedded data would be plain text outside Secret RBAC and
    encryption at rest (issue 15, item 13). Argo CD's export keeps Secrets as Secrets."""
    path = tmp_path / "in.yaml"
    path.write_text(CONFIGMAP.format(name="cm", step="s", index=0) + "---\n" + SECRET)
    argv = ["export", "resourceset", "--name", "app", "-n", "apps", "-f", str(path)]
    assert main(argv) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "krmfn export resourceset: Secret apps/db: a ResourceSet would hold this Secret's data in plain "
        "text, outside Secret RBAC and Secret encryption at rest; deliver Secrets another way (SOPS, "
        "External Secrets, a separate apply), or pass --allow-secrets to embed them anyway\n"
    )
    assert "hunter2" not in err
    assert main([*argv, "--allow-secrets"]) == 0
    assert _names(capsys.readouterr().out) == ["cm", "db"]
    assert main(["export", "argocd", "-f", str(path)]) == 0
    assert "kind: Secret" in capsys.readouterr().out
