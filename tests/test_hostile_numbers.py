"""Every number krmfn reads from text someone else wrote (an annotation, an HTTP header, a field the
cluster keeps as text, a record, a cron field, a tag) goes through ``krmfn.numbers.whole``. Here each such
field gets the numbers ``int()`` and ``str.isdigit()`` mistake: thousands of digits (``int()`` raises past
4,300), ``'²'`` (``isdigit()`` but not ``int()``), other scripts' digits (``int('١٢')`` is 12), signs,
spaces, exponents, hex, NaN and infinity. Each gets a clear error or the fallback its reader documents,
never a traceback and never a number another reader (Go's ``strconv``) would not see.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import socket
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cli_run import krmfn_cli
from fake_kube import FakeApi
from hypothesis import given
from hypothesis import strategies as st
from test_runner_http import CONFIGMAPS, ok
from test_runner_http import api as http_api

from krmfn.duration import parse_duration
from krmfn.functions.set_image.semver import SemverError, parse_constraint, parse_version
from krmfn.functions.validate_jobs import FUNCTION as VALIDATE_JOBS
from krmfn.k8s import kobj
from krmfn.k8s.annotations import STEP_INDEX, STEP_TIMEOUT
from krmfn.kpt import annotations as kpt_annotations
from krmfn.net.answers import framing_of
from krmfn.net.errors import Malformed
from krmfn.net.wire import Response
from krmfn.numbers import MAX_DIGITS, whole
from krmfn.runner.commands.cli import parser
from krmfn.runner.commands.status_cmd import collect, write_text
from krmfn.runner.engine import waiter
from krmfn.runner.engine.engine import Options, Runner
from krmfn.runner.inventory import lock
from krmfn.runner.inventory.applyset import PART_OF
from krmfn.runner.inventory.runs import decode_plan, parse_runs
from krmfn.runner.plan import build_plan
from krmfn.runner.reserved import RUNS

HOSTILE = [
    "9" * 5000,  # int() raises past 4,300 digits
    "1" * 25,  # beyond 64 bits
    "\u00b2",  # '²': isdigit() is true, int() refuses it
    "\u0661\u0662",  # '١٢': int() reads 12; Go does not
    "\uff11\uff12",  # fullwidth digits: the same
    "+1",
    "-1",
    " 1",
    "1\n",
    "1e9",
    "0x10",
    "1_0",
    "NaN",
    "inf",
    "",
]
IDS = [repr(v[:12]) + (f"x{len(v)}" if len(v) > 12 else "") for v in HOSTILE]


def one_line(text: str, longest: int = 600) -> str:
    assert "Traceback" not in text, text[-2000:]
    lines = text.strip("\n").split("\n")
    assert len(lines) == 1, lines[:5]
    assert len(lines[0]) <= longest, len(lines[0])
    return lines[0]


def _stream(tmp: Path, annotations: dict[str, str]) -> str:
    doc = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "annotations": annotations}}
    path = tmp / "stream.yaml"
    path.write_text(json.dumps(doc))
    return str(path)


# --- the helper itself --------------------------------------------------------------------------------------


@given(st.text(max_size=30) | st.from_regex(r"[+-]?0*[0-9]{1,25}", fullmatch=True))
def test_whole_reads_ascii_digits_in_range_and_nothing_else(text: str) -> None:
    for sign in (False, True):
        value = whole(text, 10**12, low=-(10**12) if sign else 0, sign=sign)
        body = text[1:] if sign and text[:1] in "+-" else text
        plain = body != "" and all(c in "0123456789" for c in body)
        if not plain or len(body.lstrip("0")) > MAX_DIGITS or abs(int(text)) > 10**12:
            assert value is None, text
        else:
            assert value == int(text), text


@pytest.mark.parametrize("value", HOSTILE, ids=IDS)
def test_whole_refuses_every_hostile_number(value: str) -> None:
    assert whole(value, 2**63) is None
    assert whole("0" * 5000 + "7", 9) == 7  # leading zeros do not count, as in Go


# --- krmfn.dev/step-index and step-timeout: plan, export, status, prune -------------------------------------


@pytest.mark.parametrize("value", HOSTILE, ids=IDS)
def test_a_hostile_step_index_is_one_input_error_in_plan_and_export(value: str, tmp_path: Path) -> None:
    stream = _stream(tmp_path, {STEP_INDEX: value})
    code, _, err = krmfn_cli(["plan", "-f", stream])
    assert code == 2 and "krmfn.dev/step-index must be a whole number" in one_line(err)
    code, out, err = krmfn_cli(["export", "argocd", "-f", stream])
    assert (code, out) == (1, "") and "krmfn.dev/step-index must be a whole number" in one_line(err)


@pytest.mark.parametrize("value", HOSTILE, ids=IDS)
def test_a_hostile_step_timeout_is_one_input_error(value: str, tmp_path: Path) -> None:
    code, _, err = krmfn_cli(["plan", "-f", _stream(tmp_path, {STEP_TIMEOUT: value + "s"})])
    if value == "+1":  # Go's time.ParseDuration reads "+1s"
        assert code == 0
        return
    assert code == 2 and "krmfn.dev/step-timeout" in one_line(err)
    if value.isascii() and value.isdigit():
        assert "time: invalid duration" in err  # Go's words, not int()'s


def _applied(value: str) -> tuple[FakeApi, dict[str, Any]]:
    """An inventory ``app`` whose stale member (no longer rendered) carries ``value`` as its step-index:
    anyone who may edit the member can write it there."""
    api = FakeApi("ns")
    docs = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n}} for n in ("a", "stale")]
    result = Runner(api, Options(namespace="ns", applyset="app"), lambda e: None).run(
        build_plan(docs, namespace="ns", default_timeout=5)
    )
    assert result.ok, result.error
    stale = api.annotate("v1", "ConfigMap", "ns", "stale", {STEP_INDEX: value})
    assert PART_OF in stale["metadata"]["labels"]
    return api, docs[0]


@pytest.mark.parametrize("value", HOSTILE, ids=IDS)
def test_status_reads_a_member_with_a_hostile_step_index(value: str) -> None:
    api, _ = _applied(value)
    report = collect(api, "app", "ns", now=datetime(2026, 1, 1, tzinfo=UTC))
    stale = next(m for m in report.members if m.object.endswith("/stale"))
    assert stale.step_index is None  # the documented fallback: shown with the unindexed objects
    out = io.StringIO()
    write_text(out, report, history=False)
    assert "Traceback" not in out.getvalue()


@pytest.mark.parametrize("value", HOSTILE, ids=IDS)
def test_a_stale_member_with_a_hostile_step_index_is_pruned_and_the_run_ends(value: str) -> None:
    api, kept = _applied(value)
    result = Runner(api, Options(namespace="ns", applyset="app"), lambda e: None).run(
        build_plan([kept], namespace="ns", default_timeout=5)
    )
    assert result.ok, result.error
    assert result.pruned == ["ConfigMap ns/stale"]
    parent = api.object("v1", "Secret", "ns", "app")
    assert parent is not None
    runs = parse_runs(parent["metadata"]["annotations"][RUNS])
    assert [r.result for r in runs] == ["succeeded", "succeeded"]  # never left "running"


# --- numbers the cluster and its answers hold as text -------------------------------------------------------


@pytest.mark.parametrize("value", HOSTILE, ids=IDS)
def test_a_hostile_retry_after_falls_back_to_the_backoff(value: str) -> None:
    busy = Response.of(503, b'{"kind": "Status"}', {"Retry-After": value})
    http, clock, seen = http_api(iter([busy, ok()]))
    assert http.get(CONFIGMAPS, "x", "apps") is not None
    stripped = value.strip()
    honoured = stripped.isascii() and stripped.isdigit() and len(stripped) < 10
    assert clock.sleeps == ([float(stripped)] if honoured else [0.05]), clock.sleeps
    assert len(seen) == 2


@pytest.mark.parametrize("value", HOSTILE, ids=IDS)
def test_a_hostile_content_length_is_a_malformed_answer(value: str) -> None:
    """Every HTTP answer krmfn reads (the API server's, a registry's) is framed by its Content-Length."""
    stripped = value.strip()
    if stripped.isascii() and stripped.isdigit() and len(stripped) < 19:
        assert framing_of("GET", 200, {"content-length": value})[1] == int(stripped)
        return
    with pytest.raises(Malformed, match="Content-Length is not one number"):
        framing_of("GET", 200, {"content-length": value})


@pytest.mark.parametrize("value", HOSTILE, ids=IDS)
def test_a_lease_with_a_hostile_pid_is_never_judged_gone(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lock, "_boot_id", lambda: "boot")
    monkeypatch.setattr(lock, "_pid_namespace", lambda: "ns")
    now = datetime(2026, 1, 1, tzinfo=UTC)
    later = now + timedelta(seconds=60)
    lease = lock.Lease(f"{socket.gethostname()}/{value}", "r", now, later, "", "boot", "ns")
    assert lease.holder_gone() is False
    gone = lock.Lease(f"{socket.gethostname()}/{2**31 - 1}", "r", now, now, "", "boot", "ns")
    assert gone.holder_gone() is True  # a pid that cannot exist here: the holder is gone


@pytest.mark.parametrize("value", HOSTILE, ids=IDS)
def test_hostile_counts_and_versions_read_as_unknown(value: str) -> None:
    assert waiter._version(value) is None  # a resourceVersion: not compared, the object watched alone
    assert decode_plan(f"{value}:")[0] == 0  # the last plan's count: unknown
    index = {"config.kubernetes.io/path": "a.yaml", "config.kubernetes.io/index": value}
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "annotations": index}}
    assert kobj.file_of(obj) == {"path": "a.yaml"}  # a result's file: without a position
    assert kpt_annotations.location(obj, Path("pkg"))[2] == 0  # render --in-place: the first document


# --- functions: cron fields, completion indexes, semantic versions ------------------------------------------

CRON_READS = {"+1", "1\n"}  # robfig/cron: strconv.Atoi takes a sign, strings.Fields splits at "\n"


def _validate(obj: dict[str, Any]) -> list[dict[str, Any]]:
    text = json.dumps({"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [obj]})
    out, _ = VALIDATE_JOBS.process(text)
    results: list[dict[str, Any]] = json.loads(json.dumps(_results(out)))
    assert not any("internal error" in str(r.get("message")) for r in results), results
    return results


def _results(text: str) -> list[dict[str, Any]]:
    from krmfn.yaml.io import load_all_fast

    [rl] = list(load_all_fast(text))
    return list(rl.get("results") or [])


def _pod() -> dict[str, Any]:
    return {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:1.37"}]}}


@pytest.mark.parametrize("value", HOSTILE, ids=IDS)
def test_a_hostile_cron_field_is_an_error_result(value: str) -> None:
    cron = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c", "namespace": "n"},
            "spec": {"schedule": f"*/{value} * * * *", "concurrencyPolicy": "Forbid",
                     "jobTemplate": {"spec": {"backoffLimit": 1, "template": _pod()}}}}  # fmt: skip
    results = _validate(cron)
    if value not in CRON_READS:
        assert any(r.get("severity") == "error" and "schedule" in str(r) for r in results), results


@pytest.mark.parametrize("value", HOSTILE, ids=IDS)
def test_hostile_succeeded_indexes_are_an_error_result(value: str) -> None:
    policy = {"rules": [{"succeededIndexes": value}]}
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "n"},
           "spec": {"completionMode": "Indexed", "completions": 5, "backoffLimit": 1,
                    "successPolicy": policy, "template": _pod()}}  # fmt: skip
    results = _validate(job)
    if value:
        assert any("succeededIndexes" in str(r.get("field") or r) for r in results), results


@pytest.mark.parametrize("value", HOSTILE, ids=IDS)
def test_hostile_version_numbers_are_not_versions(value: str) -> None:
    for tag in (value, f"v{value}", f"1.{value}", f"1.2.{value}"):
        found = parse_version(tag)  # a tag is read stripped, as Flux reads it
        plain = re.fullmatch(r"v?([0-9]{1,20})(\.[0-9]{1,20}){0,2}", tag.strip(), re.ASCII)
        assert (found is None) == (plain is None), tag
    if value != "1\n":  # terms are split at white space: ">=1.2.1" then nothing
        with pytest.raises(SemverError):
            parse_constraint(f">=1.2.{value}" if value else ">=\u00b2")
    assert parse_version("1.2.3-" + "9" * 30) is not None  # a long numeric pre-release compares as text


# --- the runner's own flags ---------------------------------------------------------------------------------


@pytest.mark.parametrize("flag", ["--log-lines", "--concurrency"])
@pytest.mark.parametrize("value", HOSTILE, ids=IDS)
def test_hostile_flag_numbers_are_usage_errors(flag: str, value: str) -> None:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as stop:
        parser("apply").parse_args(["-f", "-", flag, value])
    assert stop.value.code == 2
    assert "must be a whole number" in err.getvalue() and len(err.getvalue()) < 1000


def test_durations_keep_gos_words_for_every_length() -> None:
    for text in ("9" * 5000 + "s", "0" * 5000 + "1s", "1" * 20 + "s"):
        try:
            parse_duration(text)
        except ValueError as err:
            assert str(err).startswith("time: invalid duration"), str(err)[:100]
    assert parse_duration("0" * 5000 + "1s") == 10**9
