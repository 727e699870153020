"""Hostile text in the runner's newer outputs: `krmfn status` (run records and the lock read back from the
ApplySet parent), `krmfn diff` (Secret masking, the KRMFN_DIFF file names), the live view and a failed
Job's log lines. Whoever can write the parent or a member, or runs a container, chooses these strings;
each output must stay one clear line per item (escaped, bounded) or valid JSON, never a traceback.

tests/test_terminal.py checks the escape itself (``safe_line``) and the event printers.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import io
import json
import re
import tempfile
import unicodedata
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fake_kube import FakeApi
from hypothesis import given, settings
from hypothesis import strategies as st

from krmfn.k8s.annotations import STEP
from krmfn.runner.cluster.api import LOG_LIMIT_BYTES
from krmfn.runner.commands import diff_cmd
from krmfn.runner.commands.printers import JsonPrinter, PlainPrinter, TtyPrinter
from krmfn.runner.commands.status_cmd import collect as collect_status
from krmfn.runner.commands.status_cmd import report_data, write_text
from krmfn.runner.engine.diff import (
    MASK,
    NAME_MAX,
    Change,
    comparable,
    file_name,
    masked,
    patch_of,
    unified,
)
from krmfn.runner.engine.engine import Options, Result, Runner
from krmfn.runner.engine.joblogs import MAX_LINE, collect, describe, last_lines
from krmfn.runner.engine.jobs import PodProblem
from krmfn.runner.errors import StepFailed
from krmfn.runner.events import Apply, Event, Status, StepDone, StepStart
from krmfn.runner.inventory.runs import MAX_ERROR
from krmfn.runner.plan import build_plan
from krmfn.runner.reserved import LAST_PLAN, LOCK, RUNS
from krmfn.terminal import fit

# Strings an attacker would choose: terminal controls, a line that overwrites the one before, CI workflow
# commands, a bidi override, a lone surrogate, NUL, and length.
HOSTILE = [
    "\x1b]0;pwned\x07\x1b[2J",
    "ok\rstep 1 deploy: healthy",
    "::error::forged\n::add-mask::x",
    "##[group]fold\n##vso[task.setvariable variable=a]b",
    "abc\u202edcba",
    "lone \ud800 surrogate",
    "nul\x00byte",
    "x" * 100_000,
]
NOW = datetime(2026, 1, 1, tzinfo=UTC)
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
UNSAFE = {"Cc", "Cf", "Cs", "Zl", "Zp"}


def assert_inert(text: str, longest: int) -> None:
    """Every line printable, no workflow command can form, none longer than ``longest``."""
    for line in text.rstrip("\n").split("\n"):
        assert "::" not in line and "##" not in line, line[:200]
        assert not any(unicodedata.category(c) in UNSAFE for c in line), line[:200]
        assert len(line) <= longest, len(line)


def _applied() -> FakeApi:
    """An inventory ``app`` in ``ns`` with one member, as a krmfn apply leaves it."""
    api = FakeApi("ns")
    docs = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}}]
    result = Runner(api, Options(namespace="ns", applyset="app"), lambda e: None).run(
        build_plan(docs, namespace="ns", default_timeout=5)
    )
    assert result.ok, result.error
    return api


def _record(**fields: Any) -> dict[str, Any]:
    return {"run": "r1", "start": "2026-01-01T00:00:00Z", "end": "2026-01-01T00:00:09Z",
            "result": "failed", **fields}  # fmt: skip


def _lease(holder: str, run: str) -> str:
    since, expires = NOW - timedelta(seconds=5), NOW + timedelta(seconds=50)
    return json.dumps({"holder": holder, "run": run, "since": since.strftime("%Y-%m-%dT%H:%M:%SZ"),
                       "expires": expires.strftime("%Y-%m-%dT%H:%M:%SZ")})  # fmt: skip


def _annotations(text: str) -> list[dict[str, str]]:
    """The parent's records, each of them carrying ``text`` where a string goes."""
    return [
        {RUNS: json.dumps([_record(error=text, failedStep=text, steps=[[text, 1.5, text]])])},
        {RUNS: json.dumps([_record(run=text, start=text, end=text)])},
        {LOCK: _lease(text, text)},
    ]


# Records that are not what krmfn writes: each must be left out or read within bounds.
MALFORMED = [
    "[" * 100_000,  # nested beyond Python's recursion limit
    "not json",
    json.dumps({"run": "r"}),
    json.dumps([_record(steps=[["s", 10**400, "ok"]])]),  # an integer beyond a float
    '[{"run":"r","start":"s","result":"failed","elapsed":1e999,"steps":[["s",NaN,"ok"],["t",-1,"ok"]]}]',
    json.dumps([_record(stepsLeftOut=-5, steps=[["s", 1, "ok"]] * 5000)]),
    json.dumps([_record(steps="x", end=[], error={}, failedStep=7)]),
]


def _status_outputs(api: FakeApi) -> tuple[str, dict[str, Any]]:
    report = collect_status(api, "app", "ns", now=NOW)
    out = io.StringIO()
    write_text(out, report, history=True)
    data = report_data(report, history=True)
    json.dumps(data, allow_nan=False)  # raises if a NaN or an infinity got through
    return out.getvalue(), data


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_status_shows_strings_in_the_records_escaped_and_bounded(text: str) -> None:
    api = _applied()
    for changes in _annotations(text):
        api.annotate("v1", "Secret", "ns", "app", changes)
        shown, data = _status_outputs(api)
        assert_inert(shown, longest=3000)
        assert len(json.dumps(data)) < 8000
    api.annotate("v1", "ConfigMap", "ns", "a", {STEP: text})  # a member's step name: anyone may edit it
    shown, _ = _status_outputs(api)
    assert_inert(shown, longest=len(text) * 10 + 100)  # escaped, as long as the annotation allows


@pytest.mark.parametrize("value", MALFORMED, ids=range(len(MALFORMED)))
def test_status_reads_a_malformed_record_without_a_traceback(value: str) -> None:
    api = _applied()
    for annotation in (RUNS, LOCK):
        api.annotate("v1", "Secret", "ns", "app", {annotation: value})
        shown, data = _status_outputs(api)
        assert_inert(shown, longest=3000)
        for run in data["runs"]:
            assert all(step[1] >= 0 for step in run["steps"]) and run.get("stepsLeftOut", 0) >= 0
            assert len(run["steps"]) <= 200 and len(run.get("error") or "") <= MAX_ERROR


@pytest.mark.parametrize("plan", ["²:", "9" * 5000 + ":", "-3:x", "3:" + "=" * 100])
def test_status_reads_a_malformed_last_plan(plan: str) -> None:
    api = _applied()
    api.annotate("v1", "Secret", "ns", "app", {LAST_PLAN: plan})
    _, data = _status_outputs(api)
    assert data["notInLastPlan"] is None


# --- krmfn diff: Secret values ----------------------------------------------------------------------------

# Each value starts with a snowman, so that finding one in the output is a leak, not a field's name.
secret_values = st.dictionaries(
    st.sampled_from("abcd"),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=3, max_size=12).map(lambda v: "\u2603" + v),
    max_size=4,
)


def _secret_with_annotations(kind: str, field: str, values: dict[str, str], extra: str) -> dict[str, Any]:
    """A Secret as a client-side ``kubectl apply`` leaves it (the object in last-applied-configuration),
    with an annotation that quotes one value (a checksum tool, a careless note)."""
    stored = (
        {k: base64.b64encode(v.encode()).decode() for k, v in values.items()} if field == "data" else values
    )
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": kind, "metadata": {"name": "s"}, field: stored}
    notes = {LAST_APPLIED: json.dumps(obj), "example.com/note": f"was {extra} before", "keep": "plain"}
    obj["metadata"] = {"name": "s", "annotations": notes}
    return obj


@settings(max_examples=200, deadline=None)
@given(
    before=secret_values, after=secret_values, field=st.sampled_from(["data", "stringData"]),
    kind=st.sampled_from(["Secret", "secret", "SECRET"]), pick=st.integers(0, 3),
)  # fmt: skip
def test_no_secret_value_reaches_the_diff(
    before: dict[str, str], after: dict[str, str], field: str, kind: str, pick: int
) -> None:
    values = [*before.values(), *after.values()] or ["none"]
    extra = values[pick % len(values)]
    b, a = masked(
        comparable(_secret_with_annotations(kind, field, before, extra)),
        comparable(_secret_with_annotations(kind, field, after, extra)),
    )
    change = Change(0, "s", "Secret ns/s", "v1.Secret.ns.s", "update", b, a)
    shown = json.dumps([b, a, patch_of(change)], ensure_ascii=False) + "\n".join(unified(change))
    for value in {*before.values(), *after.values()}:
        for form in (value, base64.b64encode(value.encode()).decode(), json.dumps(value)[1:-1]):
            assert form not in shown, form
    assert b is not None and b["metadata"]["annotations"]["keep"] == MASK  # masked whole, not searched


def test_an_annotation_with_a_value_is_masked_like_the_value() -> None:
    old = _secret_with_annotations("Secret", "stringData", {"k": "hunter22"}, "hunter22")
    new = _secret_with_annotations("Secret", "stringData", {"k": "hunter23"}, "hunter23")
    b, a = masked(old, new)
    assert b is not None and a is not None
    assert b["metadata"]["annotations"] == {LAST_APPLIED: f"{MASK} (before)", "example.com/note":
                                            f"{MASK} (before)", "keep": MASK}  # fmt: skip
    assert a["metadata"]["annotations"][LAST_APPLIED] == f"{MASK} (after)"
    same, _ = masked(old, old)
    assert same is not None and same["metadata"]["annotations"][LAST_APPLIED] == MASK


# --- krmfn diff: the KRMFN_DIFF files ---------------------------------------------------------------------

NAMES = ["../../etc/passwd", "-rf", "--output=/tmp/x", ".hidden", "a/b", "nul\x00", "new\nline", "é☃",
         "\ud800", "%2F", "x" * 300, "x" * 299 + "y", "a:b", "*", " "]  # fmt: skip


def test_diff_file_names_are_safe_short_and_distinct() -> None:
    names = [file_name("example.com/v1", "Widget", "ns", name) for name in NAMES]
    names.append(file_name("v1", "ClusterThing", "", "-rf"))
    assert len(set(names)) == len(names)
    for name in names:
        assert re.fullmatch(r"[A-Za-z0-9%._~-]+", name) and name[0] not in ".-", name
        assert len(name.encode()) <= NAME_MAX
    assert file_name("apps/v1", "Deployment", "ns", "web") == "apps.v1.Deployment.ns.web"  # kubectl's


def _changes(names: list[str]) -> list[Change]:
    return [
        Change(
            0,
            "s",
            f"Widget.example.com ns/{n}",
            file_name("example.com/v1", "Widget", "ns", n),
            "update",
            {"spec": {"v": n}},
            {"spec": {"v": n + "!"}},
        )
        for n in names
    ]


def test_the_differ_gets_every_object_in_its_two_directories_and_nothing_else(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    listing = tmp_path / "listing"
    command = f'sh -c \'ls -A "$0" "$1" > {listing}; exit 1\''  # 1: differences, as diff says
    assert diff_cmd._external(command, _changes(NAMES)) is None
    files = [line for line in listing.read_text().splitlines() if line and not line.endswith(":")]
    assert len(files) == 2 * len(NAMES)
    assert "stderr" not in capfd.readouterr().err.lower()


@pytest.mark.parametrize(
    "failure",
    [KeyboardInterrupt(), OSError(errno.ENOSPC, "No space left on device")],
    ids=["interrupted", "disk-full"],
)
def test_the_differs_directory_goes_away_however_it_ends(
    failure: BaseException, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise failure

    if isinstance(failure, KeyboardInterrupt):
        monkeypatch.setattr(diff_cmd.subprocess, "run", fail)
    else:
        monkeypatch.setattr(diff_cmd, "_write_sides", fail)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = diff_cmd._external("true", _changes(["a"]))
    assert code == (130 if isinstance(failure, KeyboardInterrupt) else diff_cmd.EXIT_ERROR)
    assert err.getvalue().count("\n") == 1 and "Traceback" not in err.getvalue()
    assert list(tmp_path.iterdir()) == []


# --- a failed Job's log lines, through every printer ------------------------------------------------------

LOG = (
    "starting\n\x1b]0;pwned\x07\x1b[2J\n100%\rstep 1 deploy: healthy in 0.1s\n::error file=a::forged\n"
    "##[group]x\n\ufffd\ufffd invalid UTF-8, as the HTTP layer decodes it\n\u202eevil\x00\n"
    + "y" * 5000
    + "\n"
)


def _failed_job_events() -> tuple[list[Event], Result]:
    problem = PodProblem("m-1\x1b[2J", "main::x", "Error (exit code 1): ::warning::term\rmessage")
    collected = collect([problem], lambda pod, container, lines, previous: LOG, 20)
    message = "BackoffLimitExceeded; " + "; ".join(describe(p, log) for p, log in collected)
    logs = [log.to_dict() for _, log in collected if log is not None]
    events: list[Event] = [
        StepStart(0, "migrate", 1, 30.0, True),
        Status(0, "migrate", "Job.batch apps/m", "failed", message, 1.0, logs),
        StepDone(0, "migrate", "failed", 1.0),
    ]
    return events, Result(ok=False, error=StepFailed("migrate", "Job.batch apps/m", message),
                          failed_step="migrate")  # fmt: skip


def test_log_lines_are_escaped_in_text_and_carried_as_json() -> None:
    events, result = _failed_job_events()
    plain, tty, as_json = io.StringIO(), io.StringIO(), io.StringIO()
    live = TtyPrinter(tty, clock=lambda: 0.0, refresh=3600, width=lambda: 100)
    try:
        for printer in (PlainPrinter(plain), live, JsonPrinter(as_json)):
            for event in events:
                printer(event)
            printer.summary(result)
    finally:
        live.close()
    assert_inert(plain.getvalue(), longest=10_000)
    assert len(plain.getvalue().splitlines()) == len(events) + 1
    assert_inert(re.sub(r"\x1b\[\d+F\x1b\[J", "", tty.getvalue()), longest=10_000)
    lines = as_json.getvalue().splitlines()
    assert all(line.startswith("{") and line.isascii() for line in lines)
    [status] = [json.loads(line) for line in lines if json.loads(line)["type"] == "status"]
    assert status["logs"][0]["lines"][2] == "100%\rstep 1 deploy: healthy in 0.1s"  # the text itself
    assert status["logs"][0]["lines"][-1].startswith("y" * MAX_LINE + "... (")


def test_log_text_is_bounded_even_when_the_server_ignores_limit_bytes() -> None:
    flood = ("z" * 2000 + "\n") * 10_000  # 20 MB: what a server that ignores limitBytes may send
    lines = last_lines(flood, 1000)
    assert sum(len(line) for line in lines) <= LOG_LIMIT_BYTES + len(lines) * 40


# --- the live view ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("width", [20, 80, 200])
@pytest.mark.parametrize("text", ["x" * 100_000, "\u2603\u6f22" * 5000, "\x1b" * 3000, "ok"])
def test_every_row_of_the_live_view_fits_the_terminal(width: int, text: str) -> None:
    """A wrapped row would be left behind by each redraw (the cursor moves up one line per row)."""
    out = io.StringIO()
    live = TtyPrinter(out, clock=lambda: 0.0, refresh=3600, width=lambda: width)
    try:
        live(StepStart(0, f"step{text}", 2, 30.0, True))
        live(Status(0, "s", f"Deployment.apps ns/{text}", "in-progress", text, 0.5))
        live(Apply(0, "s", "ConfigMap ns/c", "configured", text))
        block = out.getvalue().split("\x1b[J")[-1]
    finally:
        live.close()
    rows = block.rstrip("\n").split("\n")
    assert len(rows) == 3
    for row in rows:
        cells = sum(2 if unicodedata.east_asian_width(c) in ("W", "F") else 1 for c in row)
        assert cells < width, (cells, row[:80])


def test_fit_keeps_what_fits_and_marks_a_cut() -> None:
    assert fit("short", 80) == "short"
    assert fit("x" * 10, 10) == "x" * 10
    assert fit("x" * 11, 10) == "x" * 7 + "..."
    assert fit("\u6f22" * 10, 10) == "\u6f22" * 3 + "..."


def test_annotations_of_any_type_on_a_rendered_secret_are_masked_without_error() -> None:
    """A Secret shown as rendered (its Namespace created by the same input) has whatever the YAML says."""
    notes = {"a": ["hunter22"], "b": {"x": 1}, "c": 7, "d": None}
    odd = {"apiVersion": "v1", "kind": "Secret", "stringData": {"k": "hunter22"},
           "metadata": {"name": "s", "annotations": notes}}  # fmt: skip
    before, after = masked(None, odd)
    assert before is None and after is not None
    assert after["metadata"]["annotations"] == dict.fromkeys(notes, MASK)
