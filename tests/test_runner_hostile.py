"""Hostile text in the runner's newer outputs: `krmfn status` (run records and the lock read back from the
ApplySet parent), `krmfn diff` (Secret masking, the KRMFN_DIFF file names), the live view and a failed
Job's log lines. Whoever can write the parent or a member, or runs a container, chooses these strings;
each output must stay one clear line per item (escaped, bounded) or valid JSON, never a traceback.

tests/test_terminal.py checks the escape itself (``safe_line``) and the event printers.
"""

from __future__ import annotations

import io
import json
import unicodedata
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fake_kube import FakeApi

from krmfn.runner.engine import Options, Runner
from krmfn.runner.lock import LOCK
from krmfn.runner.plan import build_plan
from krmfn.runner.runs import LAST_PLAN, MAX_ERROR, RUNS
from krmfn.runner.status_cmd import collect, report_data, write_text

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
    report = collect(api, "app", "ns", now=NOW)
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
