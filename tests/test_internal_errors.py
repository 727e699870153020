"""A bug is never an answer: an exception a command does not expect ends it with one line on stderr and
exit code 70 (``krmfn.errors.EXIT_INTERNAL``), which none of its documented answers uses. A traceback
exits 1, which ``krmfn diff`` documents as "changes found" and ``krmfn status`` as "not healthy"; a
``RecursionError`` on a deep live object once made ``krmfn diff`` say there were changes.

Each command gets an exception injected at a point its own code calls, and its exit code is compared
with the codes its ``--help`` lists. ``krmfn apply`` must also end the run as a failure: its record
ended (not left ``running``), its lock released, the ``error`` and ``result`` events written.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fake_kube import FakeApi

from krmfn.cli import main as krmfn_main
from krmfn.errors import EXIT_INTERNAL
from krmfn.runner.engine.engine import Options, Runner
from krmfn.runner.inventory.runs import parse_runs
from krmfn.runner.plan import build_plan
from krmfn.runner.reserved import LOCK, RUNS

CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns"},
             "data": {"k": "v"}}  # fmt: skip
SECRET = "x" * 5000 + "\x1b]0;pwned\x07\n::add-mask::y"
"""The exception's text: long, a terminal control, a second line with a CI command."""


class Api(FakeApi):
    def close(self) -> None:
        pass


def _boom(*args: Any, **kwargs: Any) -> Any:
    raise ValueError(SECRET)


def _deep(*args: Any, **kwargs: Any) -> Any:
    raise RecursionError("maximum recursion depth exceeded while calling a Python object")


def _cluster(monkeypatch: pytest.MonkeyPatch) -> Api:
    """A cluster where ``app`` was applied once, reached by every command that connects."""
    api = Api("ns")
    result = Runner(api, Options(namespace="ns", applyset="app"), lambda e: None).run(
        build_plan([CONFIGMAP], namespace="ns", default_timeout=5)
    )
    assert result.ok, result.error
    import krmfn.runner.cluster.kube

    monkeypatch.setattr(krmfn.runner.cluster.kube, "connect", lambda *a, **k: api)
    return api


def _package(tmp: Path) -> Path:
    (tmp / "pkg").mkdir()
    (tmp / "pkg" / "Kptfile").write_text("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: pkg}\n")
    (tmp / "pkg" / "cm.yaml").write_text(json.dumps(CONFIGMAP))
    return tmp / "pkg"


# (command line, module and attribute that raise, exception); every command whose exit codes mean something
CASES: list[tuple[str, list[str], str, Callable[..., Any]]] = [
    ("plan", ["plan", "-f", "{stream}"], "krmfn.runner.commands.cli:plan_lines", _boom),
    ("plan json", ["plan", "-f", "{stream}", "-o", "json"], "krmfn.runner.commands.cli:plan_data", _boom),
    ("apply", ["apply", "-f", "{changed}", "-n", "ns", "--applyset", "app"],
     "krmfn.runner.engine.engine:prune", _boom),
    ("apply json", ["apply", "-f", "{changed}", "-n", "ns", "--applyset", "app", "-o", "json"],
     "krmfn.runner.engine.engine:prune", _boom),
    ("apply in a step", ["apply", "-f", "{changed}", "-n", "ns", "--applyset", "app"],
     "krmfn.runner.engine.applier:changed", _deep),
    ("diff", ["diff", "-f", "{changed}", "-n", "ns", "--applyset", "app"],
     "krmfn.runner.commands.diff_cmd:unified", _deep),
    ("diff json", ["diff", "-f", "{changed}", "-n", "ns", "--applyset", "app", "-o", "json"],
     "krmfn.runner.commands.diff_cmd:patch_of", _deep),
    ("diff differ", ["diff", "-f", "{changed}", "-n", "ns", "--applyset", "app"],
     "krmfn.runner.engine.differ:comparable", _boom),
    ("status", ["status", "-n", "ns", "--applyset", "app"], "krmfn.runner.commands.status_cmd:health", _deep),
    ("status json", ["status", "-n", "ns", "--applyset", "app", "-o", "json"],
     "krmfn.runner.commands.status_cmd:report_data", _boom),
    ("export argocd", ["export", "argocd", "-f", "{stream}"], "krmfn.export.argocd:annotate", _boom),
    ("export resourceset", ["export", "resourceset", "-f", "{stream}", "--name", "x", "-n", "ns"],
     "krmfn.export.resourceset:build", _boom),
    ("render", ["render", "{package}"], "krmfn.render:stream", _boom),
]  # fmt: skip


def _documented_codes(command: str) -> set[int]:
    """The exit codes ``krmfn COMMAND --help`` lists (``130, 143`` counts as two)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        krmfn_main([*command.split()[: 2 if command.startswith("export") else 1], "--help"])
    block = out.getvalue().split("exit codes:\n", 1)[1].split("\n\n", 1)[0]
    return {int(code) for line in block.splitlines() for code in re.findall(r"\d+", line.split("  ")[1])}


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_an_internal_error_is_one_line_and_its_own_exit_code(
    case: tuple[str, list[str], str, Callable[..., Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, argv, target, fault = case
    api = _cluster(monkeypatch)
    stream, changed = tmp_path / "stream.yaml", tmp_path / "changed.yaml"
    stream.write_text(json.dumps(CONFIGMAP))
    changed.write_text(json.dumps({**CONFIGMAP, "data": {"k": "changed"}}))
    places = {"stream": str(stream), "changed": str(changed), "package": str(_package(tmp_path))}
    module, _, attribute = target.partition(":")
    import importlib

    monkeypatch.setattr(importlib.import_module(module), attribute, fault)
    monkeypatch.delenv("KRMFN_DEBUG", raising=False)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = krmfn_main([arg.format(**places) for arg in argv])

    documented = _documented_codes(name)
    assert EXIT_INTERNAL in documented, documented  # --help lists it
    assert code == EXIT_INTERNAL and not documented - {EXIT_INTERNAL} & {code}, (code, err.getvalue())
    text = out.getvalue() + err.getvalue()
    assert "Traceback" not in text and "\x1b" not in text and "\n::" not in text, text[-500:]
    if name.endswith("json") and not name.startswith(("plan", "status")):  # the events end with a result
        last = json.loads(out.getvalue().splitlines()[-1])
        assert last["type"] == "result" and last["ok"] is False and "internal error" in last["error"]
        text = err.getvalue()
    lines = [line for line in text.splitlines() if "internal error" in line]
    assert len(lines) <= 1, lines
    for line in lines or [last["error"]]:
        assert re.search(r"internal error.*: (ValueError|RecursionError)", line) and len(line) < 600, line
    if name.startswith("apply"):
        parent = api.object("v1", "Secret", "ns", "app")
        assert parent is not None
        notes = parent["metadata"]["annotations"]
        assert LOCK not in notes  # released
        assert [r.result for r in parse_runs(notes[RUNS])] == ["succeeded", "failed"]  # ended, not running


def test_krmfn_debug_shows_the_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "s.yaml").write_text(json.dumps(CONFIGMAP))
    import krmfn.runner.commands.cli

    monkeypatch.setattr(krmfn.runner.commands.cli, "plan_lines", _boom)
    monkeypatch.setenv("KRMFN_DEBUG", "1")
    with pytest.raises(ValueError, match="xxx"):
        krmfn_main(["plan", "-f", str(tmp_path / "s.yaml")])
