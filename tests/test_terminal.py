"""Issue 15, item 16: text from the cluster (and the manifests) cannot control the terminal or a CI log.

A pod's termination message and log lines, conditions, API errors and names reach text output. Raw,
they could clear the screen, forge a line of krmfn's own, or run a workflow command (``::add-mask::``,
``##vso[...]``). Every text line goes through ``terminal.safe_line``; JSON output escapes by itself.
"""

from __future__ import annotations

import io
import json
import re
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from krmfn.runner.commands.cli import main
from krmfn.runner.commands.printers import JsonPrinter, PlainPrinter, TtyPrinter, format_plan
from krmfn.runner.engine.engine import Result
from krmfn.runner.errors import StepFailed
from krmfn.runner.events import Apply, Error, Event, Inventory, Lock, Prune, Status, StepDone, StepStart
from krmfn.runner.plan import build_plan
from krmfn.terminal import safe_line

# What a failing migration's pod may say (its termination message and last log lines).
HOSTILE = (
    "boom\x1b]0;pwned\x07\x1b[2J\r\nstep 1 deploy: healthy in 0.1s\n::add-mask::secret\n"
    "::set-output name=x::y\n##vso[task.setvariable variable=a]b\u202eevil\u2028tail\x9b31m"
)
CONTROL_TTY = re.compile(r"\x1b\[\d+F\x1b\[J")  # the live view's own redraw sequence


def assert_inert(text: str) -> None:
    """Every line printable, no workflow command can form."""
    for line in text.split("\n"):
        assert "::" not in line and "##" not in line, line
        for char in line:
            assert unicodedata.category(char) not in ("Cc", "Cf", "Cs", "Zl", "Zp"), (char, line)


def test_safe_line_escapes_controls_and_workflow_commands() -> None:
    assert safe_line("plain text: ok (1/2)") == "plain text: ok (1/2)"
    assert safe_line("a\nb\r\tc\x1b[2J") == "a\\nb\\r\\tc\\x1b[2J"
    assert safe_line("::add-mask::x") == ":\\x3aadd-mask:\\x3ax"
    assert safe_line("##vso[task]") == "#\\x23vso[task]"
    assert (
        safe_line("rtl\u202eltr zw\u200bj sep\u2028 c1\x9b") == "rtl\\u202eltr zw\\u200bj sep\\u2028 c1\\x9b"
    )
    assert safe_line("snow ☃ and ünïcode stay") == "snow ☃ and ünïcode stay"
    assert_inert(safe_line(HOSTILE))


@settings(max_examples=500, deadline=None)
@given(text=st.text(alphabet=st.characters(codec=None) | st.sampled_from([":", "#", "\n", "\x1b"])))
def test_any_text_becomes_one_inert_line(text: str) -> None:
    out = safe_line(text)
    assert "\n" not in out
    assert_inert(out)


def events() -> list[Event]:
    return [
        Inventory(f"shop{HOSTILE}", "apps", f"krmfn.dev/app{HOSTILE}", True),
        StepStart(0, f"pre-deploy{HOSTILE}", 1, 30.0, True),
        Apply(0, f"pre-deploy{HOSTILE}", f"Job.batch apps/m{HOSTILE}", "created", HOSTILE),
        Status(0, "pre-deploy", "Job.batch apps/m", "failed", HOSTILE, 1.0),
        Prune(f"ConfigMap apps/{HOSTILE}", "deleted", HOSTILE),
        Lock("waiting", f"host/1{HOSTILE}", HOSTILE),
        StepDone(0, "pre-deploy", "failed", 2.0),
        Error(HOSTILE, 0, "pre-deploy", "Job.batch apps/m"),
    ]


def failed() -> Result:
    return Result(
        ok=False, error=StepFailed("pre-deploy", "Job.batch apps/m", HOSTILE), failed_step="pre-deploy"
    )


def test_plain_output_escapes_what_the_cluster_says() -> None:
    out = io.StringIO()
    printer = PlainPrinter(out)
    for event in events():
        printer(event)
    printer.summary(failed())
    text = out.getvalue()
    assert_inert(text.rstrip("\n"))
    assert len(text.splitlines()) == 8  # seven events (not the error: the summary has it) and the summary
    assert "boom\\x1b]0;pwned\\x07\\x1b[2J\\r\\nstep 1 deploy" in text  # readable, on one line


def test_live_view_escapes_what_the_cluster_says() -> None:
    out = io.StringIO()
    printer = TtyPrinter(out, clock=lambda: 0.0, refresh=3600)
    try:
        for event in events():
            printer(event)
        printer(StepStart(1, "deploy", 1, 30.0, True))
        printer(Status(1, "deploy", f"Deployment.apps apps/{HOSTILE}", "in-progress", HOSTILE, 0.5))
        printer.summary(failed())
    finally:
        printer.close()
    assert_inert(CONTROL_TTY.sub("", out.getvalue()).rstrip("\n"))


def test_json_output_carries_the_text_escaped_by_json() -> None:
    out = io.StringIO()
    printer = JsonPrinter(out)
    for event in events():
        printer(event)
    printer.summary(failed())
    for line in out.getvalue().splitlines():
        assert line.startswith("{") and line.isascii() and line.isprintable()
        assert json.loads(line)["type"]
    messages = [json.loads(line).get("message") for line in out.getvalue().splitlines()]
    assert HOSTILE in messages  # the error event: the text itself, for a program to read


def test_plan_output_and_error_lines_are_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    step = {"krmfn.dev/step": "a::b\x1b[2J", "krmfn.dev/step-index": "0"}
    doc = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "annotations": step}}
    assert_inert(format_plan(build_plan([doc], namespace="apps", default_timeout=30)).rstrip("\n"))
    bad = tmp_path / "bad.yaml"
    bad.write_text('apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "x\\e[2J::warning::y"}\n')
    assert main(["plan", "-f", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert_inert(err.rstrip("\n"))
