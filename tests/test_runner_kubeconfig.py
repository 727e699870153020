"""Issue 15, item 9: a broken kubeconfig or a failing exec credential plugin gives one clear line, exit 1,
the documented ``-o json`` events, and never a fragment of a credential.

A kubeconfig holds tokens and keys; a credential plugin's output may hold a token. Errors give the
position in the file, the field's path, the plugin's name and exit code, never their text.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from krmfn.runner.commands.cli import main

SECRET = "sk-S3CRETTOKENFRAGMENT"
MANIFEST = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\ndata: {k: v}\n"


def kubeconfig(user: str) -> str:
    return (
        "apiVersion: v1\nkind: Config\ncurrent-context: ctx\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "contexts: [{name: ctx, context: {cluster: c, user: u, namespace: apps}}]\n"
        f"users:\n- name: u\n  user: {user}\n"
    )


def plugin(tmp_path: Path, body: str) -> str:
    script = tmp_path / "cloud-auth"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return "{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: " + f"'{script}'" + "}}"


CASES = {
    "YAML error on the token's line": (
        lambda tmp: kubeconfig("{token: " + SECRET + ": x}"),
        "is not valid YAML (at line 8, column",
    ),
    "token of the wrong type": (
        lambda tmp: kubeconfig("{token: [" + SECRET + "]}"),
        "has a list or field of the wrong type",
    ),
    "plugin fails and prints the token": (
        lambda tmp: kubeconfig(plugin(tmp, f"echo 'refresh failed for token {SECRET}' >&2\nexit 3")),
        "the exec credential plugin cloud-auth of context ctx failed (run it yourself to see its output; "
        "krmfn does not print it, as it may hold credentials): exit code 3",
    ),
    "plugin prints no ExecCredential": (
        lambda tmp: kubeconfig(plugin(tmp, f'echo \'{{"status": "{SECRET}"\'')),
        "failed (run it yourself to see its output; krmfn does not print it, as it may hold "
        "credentials): its output is not an ExecCredential with status.token",
    ),
    "plugin missing": (
        lambda tmp: kubeconfig(
            "{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: /nonexistent/auth}}"
        ),
        "the exec credential plugin auth of context ctx failed",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("output", ["text", "json"])
def test_kubeconfig_and_credential_failures_are_one_clean_line(
    tmp_path: Path, case: str, output: str, capsys: pytest.CaptureFixture[str]
) -> None:
    make, expected = CASES[case]
    config = tmp_path / "kubeconfig"
    config.write_text(make(tmp_path))
    manifest = tmp_path / "app.yaml"
    manifest.write_text(MANIFEST)
    code = main(
        [
            "apply",
            "-f",
            str(manifest),
            "--kubeconfig",
            str(config),
            "-o",
            output,
            "--retry-timeout",
            "1s",
            "--applyset",
            "app",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 1
    assert SECRET not in out + err
    assert "Traceback" not in err
    # A kubeconfig that cannot be read fails before the run (stderr); credentials fail in the run's first
    # request (its summary, or the error and result events). Either way one line says it.
    assert len(err.splitlines()) <= 1
    if output == "json":
        events = [json.loads(line) for line in out.splitlines()]
        assert events[-2]["type"] == "error" and expected in events[-2]["message"]
        assert events[-1].pop("elapsed") >= 0  # seconds the run took until the failure
        assert events[-1] == {
            "type": "result", "ok": False, "failedStep": None, "failedStepName": None,
            "error": events[-2]["message"], "steps": 0, "applied": [], "unchanged": [], "pruned": [],
        }  # fmt: skip
    else:
        lines = (err + out).splitlines()
        assert len(lines) == 1 and expected in lines[0], lines
        assert lines[0].startswith(("krmfn apply: ", "failed: "))
