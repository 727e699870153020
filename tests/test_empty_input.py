"""An input without objects (issue 34): what a failed render gives a pipe without ``set -o pipefail``.

``krmfn plan|apply|diff`` and ``krmfn export`` refuse it alike, before any connection, saying the input is
empty; only the commands that write nothing name ``--allow-empty`` (apply never suggests a flag that
deletes everything, and no message suggests ``--adopt`` for it: taking the inventory over would prune the
whole app). With ``--allow-empty`` it is meant: plan prints ``nothing to apply``, diff shows every member
as a deletion, apply prunes them, export writes an empty set.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from fake_kube import FakeApi

from krmfn.export import main as export_main
from krmfn.runner.commands.cli import main as runner_main
from krmfn.runner.inventory.applyset import Parent
from krmfn.runner.inventory.members import foreign_inventory
from krmfn.runner.plan import Key
from krmfn.yaml.io import dump_all_fast, load_all_fast

KPTFILE = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: shop}\n"
# input -> (how it is given, its text)
INPUTS = {
    "empty-stdin": ("-", ""),
    "separators-only": ("-", "---\n---\n"),
    "comments-only": ("file", "# rendered by nothing\n"),
    "local-config-only": ("file", KPTFILE),
    "dev-null": ("/dev/null", ""),
}
COMMANDS = {
    "plan": ["plan"],
    "apply": ["apply", "--applyset", "shop"],
    "diff": ["diff", "--applyset", "shop"],
    "export-argocd": ["export", "argocd"],
    "export-resourceset": ["export", "resourceset", "--name", "shop"],
}


def _source(kind: str, text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    if kind == "-":
        monkeypatch.setattr("sys.stdin", io.StringIO(text))
        return "-"
    if kind == "file":
        path = tmp_path / "rendered.yaml"
        path.write_text(text)
        return str(path)
    return kind


def _run(command: str, source: str, *extra: str, api: FakeApi | None = None) -> int:
    argv = [*COMMANDS[command], "-f", source, *extra]
    if command.startswith("export"):
        return export_main(argv if command == "export-argocd" else [*argv, "-n", "apps"])
    argv += ["-n", "apps"]

    def connect(args: Any) -> FakeApi:
        assert api is not None, "connected before refusing the input"
        return api

    return runner_main(argv, api_factory=connect)  # type: ignore[arg-type]


@pytest.mark.parametrize("given", INPUTS)
@pytest.mark.parametrize("command", COMMANDS)
def test_an_empty_input_is_refused_alike_and_never_with_a_flag_that_deletes_everything(
    command: str,
    given: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    kind, text = INPUTS[given]
    source = _source(kind, text, tmp_path, monkeypatch)
    code = _run(command, source)
    out, err = capsys.readouterr()
    assert code == (1 if command.startswith("export") else 2), (out, err)
    assert out == ""
    assert len(err.splitlines()) == 1, err
    assert " is empty: it has no objects to deploy; did the command that rendered it fail?" in err, err
    assert "--adopt" not in err and "another app" not in err
    if command == "apply":
        assert err.endswith("; nothing was applied and nothing pruned\n"), err
        assert "--allow-empty" not in err
    else:
        assert err.endswith("; if an app without objects is meant, pass --allow-empty\n"), err


def test_with_allow_empty_plan_and_export_print_an_empty_set(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("plan", "/dev/null", "--allow-empty") == 0
    assert capsys.readouterr().out == "nothing to apply\n"
    assert _run("export-argocd", "/dev/null", "--allow-empty") == 0
    assert capsys.readouterr().out == ""
    assert _run("export-resourceset", "/dev/null", "--allow-empty") == 0
    (rset,) = load_all_fast(capsys.readouterr().out)
    assert rset["spec"] == {"wait": False, "resources": []}  # .spec.steps needs at least one step


def test_with_allow_empty_diff_shows_and_apply_prunes_every_member(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api = FakeApi("apps")
    rendered = tmp_path / "rendered.yaml"
    rendered.write_text(
        dump_all_fast(
            [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n}} for n in ("a", "b")]
        )
    )
    assert _run("apply", str(rendered), api=api) == 0
    capsys.readouterr()
    assert _run("diff", "/dev/null", "--allow-empty", api=api) == 1
    out = capsys.readouterr().out
    assert "-  name: a" in out and "-  name: b" in out, out
    assert _run("apply", "/dev/null", "--allow-empty", "-o", "json", api=api) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    pruned = [e for e in events if e.get("type") == "prune"]
    assert sorted((e["object"], e["action"]) for e in pruned) == [
        ("ConfigMap apps/a", "deleted"),
        ("ConfigMap apps/b", "deleted"),
    ]


@pytest.mark.parametrize("planned", [set(), {Key("", "ConfigMap", "apps", "other")}])
def test_the_adoption_guard_suggests_adopt_only_for_a_render_that_has_objects(planned: set[Key]) -> None:
    members = [Key("", "ConfigMap", "apps", "a"), Key("", "Namespace", "", "apps")]
    message = foreign_inventory(Parent("shop", "apps", "0"), "--applyset", planned, members)
    assert message is not None
    if planned:
        assert "looks like another app's" in message and "pass --adopt" in message
    else:
        assert "this render has no objects, so applying it would prune all 2 member(s)" in message
        assert "--adopt" not in message and "another app" not in message
