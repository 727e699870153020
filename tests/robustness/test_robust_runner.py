"""The standing hostile-input suite, runner side: generated hostile values where the cluster (or the
stream) holds them, through every runner entry point, each output checked by one oracle.

The values: nesting past the bound and 10,000 deep, numbers of thousands of digits, ``1e999``, ``NaN``,
terminal controls, bidi and zero-width characters, line separators, CI workflow commands on a line of
their own, a lone surrogate, strings of a megabyte. The places: a custom resource's status in a watch
event, a failed Job's pod and its log, the API server's refusal of an apply, a stale member that prune
meets (its step-index, step name, spec), live members and a Secret that ``krmfn diff`` shows, the members
and the records (runs, lock) ``krmfn status`` reads, and a stream's annotations for ``krmfn plan`` and
``krmfn export``. The cluster is tests/scripted_kube.py: its answers are bytes, so the runner's own
parse runs.

The oracle: no traceback, an exit code among the command's documented answers (never 70, a bug), every
text line inert (no control or format character, no ``::`` or ``##`` that a CI reads as a command),
every ``-o json`` line strict JSON (no ``NaN`` or ``Infinity``, which JSON readers refuse) in ASCII.
"""

from __future__ import annotations

import contextlib
import io
import json
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scripted_kube import Served, Store

from krmfn.cli import main as krmfn_main
from krmfn.k8s.annotations import STEP, STEP_INDEX, STEP_TIMEOUT
from krmfn.runner.engine.engine import Options, Runner
from krmfn.runner.plan import build_plan
from krmfn.runner.reserved import LOCK, RUNS
from robustness.budget import examples

H = "\x00hostile"
"""The placeholder the scripted server replaces with the hostile JSON, wherever an object holds it."""
CONTROLS = ["\x1b]0;pwned\x07", "\x1b[2J", "\r", "\x00", "\x08", "\x7f", "\x85", "\u2028", "\u2029", "\u202e",
            "\u200b", "\ufeff", "\ud800"]  # fmt: skip
CI_LINES = ["\n::add-mask::x\n", "\n::error file=a::forged\n", "\n##vso[task.setvariable variable=a]b\n",
            "\n##[group]x\n", "\n##teamcity[message text='x']\n", "\n::stop-commands::t\n"]  # fmt: skip
NUMBERS = ["9" * 5000, "\u00b2", "\u0661\u0662", "+1", " 1", "1e9", "0x10", "-1", "NaN", "inf"]
"""Numbers as text: where an annotation or a field holds one, ``int()`` raises or reads another number."""
texts = st.one_of(
    st.lists(
        st.sampled_from([*CONTROLS, *CI_LINES, "a", "\u2603", " ", ":", "#"]), min_size=1, max_size=40
    ).map("".join),
    st.sampled_from(NUMBERS),
    st.integers(100_000, 1_000_000).map(lambda n: "x" * n + CONTROLS[1] + CI_LINES[0]),
)


def nested(levels: int) -> bytes:
    return b"[" * levels + b"]" * levels


RAW = [
    # past the bound; ~490 levels stopped diff's YAML text and JSON Patch, ~990 the CEL worker's json.dumps
    *(nested(n) for n in (257, 500, 980, 10_000)),
    b"9" * 5000, b"1" * 4000, b"1e999", b"-1e999", b"NaN", b"Infinity", b"-Infinity", b"1.5e308",
    b'"\\ud800\\u202e::x"', b"{}", b"[]", b"null", b"true", b"-1",
    *(json.dumps(n).encode() for n in NUMBERS),
]  # fmt: skip
"""Hostile JSON values of every type and shape; each test takes every one, then generated texts."""
CASES = [
    pytest.param(raw, json_out, id=f"{raw[:12].decode()}x{len(raw)}-{'json' if json_out else 'text'}")
    for i, raw in enumerate(RAW)
    for json_out in (False, True)
    if raw.startswith(b"[[") or json_out == (i % 2 == 1)  # nested values in both modes, the others in one
]
values = st.one_of(texts.map(lambda text: json.dumps(text).encode()), st.sampled_from(RAW))
UNSAFE = {"Cc", "Cf", "Cs", "Zl", "Zp"}
SETTINGS = settings(
    max_examples=examples(6),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
CODES = {"apply": {0, 1}, "diff": {0, 1, 2}, "status": {0, 1}, "plan": {0, 2}, "export": {0, 1}}

WIDGET = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "ns"},
          "spec": {"size": 1}}  # fmt: skip
CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"},
             "data": {"k": "v"}}  # fmt: skip


# --- the oracle ---------------------------------------------------------------------------------------------


def _strict(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


def check(command: str, code: int, out: str, err: str, json_out: bool) -> None:
    text = out + err
    assert "Traceback" not in text, text[-3000:]
    assert code in CODES[command], (code, text[-2000:])
    for stream, lines in (("stderr", err), ("stdout", "" if json_out else out)):
        for line in lines.split("\n"):
            assert "::" not in line and "##" not in line, (stream, line[:300])
            bad = [c for c in line if unicodedata.category(c) in UNSAFE]
            assert not bad, (stream, bad[:5], line[:300])
    if json_out:
        for line in out.splitlines():
            assert line.isascii(), line[:300]
            json.loads(line, parse_constant=_strict)


def run(command: list[str], json_out: bool = False) -> None:
    argv = [*command, "-o", "json"] if json_out else command
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = krmfn_main(argv)
    check(command[0], code, out.getvalue(), err.getvalue(), json_out)


def cluster(monkeypatch: pytest.MonkeyPatch, raw: bytes) -> Served:
    served = Served(Store("ns"))
    served.raw = {H: raw}
    import krmfn.runner.cluster.kube

    monkeypatch.setattr(krmfn.runner.cluster.kube, "connect", lambda *a, **k: served.api())
    return served


def applied(served: Served, *docs: dict[str, Any]) -> None:
    """``docs`` applied by krmfn apply (the app ``app`` in ``ns``), before anything hostile is served."""
    keep, served.raw_in = served.raw_in, set()
    result = Runner(served.api(), Options(namespace="ns", applyset="app"), lambda e: None).run(
        build_plan(list(docs), namespace="ns", default_timeout=5)
    )
    served.raw_in = keep
    assert result.ok, result.error


def poke(served: Served, kind: tuple[str, str], name: str, **fields: Any) -> None:
    """Top-level fields of a stored object, set as another client (a controller, a person) would."""
    res = served.store.resource(*kind)
    live = served.store.get(res, name, "ns")
    assert live is not None
    live.update(fields)
    served.store.replace(res, live, field_manager="other")


def stream(tmp: Path, *docs: dict[str, Any]) -> str:
    path = tmp / "stream.yaml"
    path.write_text("\n---\n".join(json.dumps(d) for d in docs))
    return str(path)


def apply_argv(path: str) -> list[str]:
    return ["apply", "-f", path, "-n", "ns", "--applyset", "app", "--wait", "--step-timeout", "20s"]


# --- the scenarios: where the cluster (or the stream) holds the hostile value -------------------------------
# Each takes the cluster, a directory, the hostile JSON ``raw`` (served in place of ``H``), a hostile
# ``text`` (for the places that hold only strings: annotations, records) and the output mode.


def custom_resource_status(served: Served, tmp: Path, raw: bytes, text: str, json_out: bool) -> None:
    """apply: the waiter and the health rules read a Widget's status from a watch event."""

    def stalled() -> None:  # the controller writes its status once the Widget is watched
        live = served.store.get(served.store.resource("example.com/v1", "Widget"), "w", "ns")
        if live is not None and not live.get("status"):
            poke(served, ("example.com/v1", "Widget"), "w", status={
                "observedGeneration": H, "extra": H,
                "conditions": [{"type": "Stalled", "status": "True", "reason": H, "message": H}],
            })  # fmt: skip

    served.on_watch.append(stalled)
    served.store.controllers.append(
        lambda obj: obj.setdefault("status", {}) if obj["kind"] == "Widget" else None
    )
    argv = apply_argv(stream(tmp, WIDGET))
    if json_out:  # and a CEL health check, whose worker gets the status as JSON
        check = {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "failed": "has(status.extra)",
            "current": "false",
        }
        (tmp / "checks.yaml").write_text(json.dumps([check]))
        argv += ["--health-checks", str(tmp / "checks.yaml")]
    run(argv, json_out)


def failed_job(served: Served, tmp: Path, raw: bytes, text: str, json_out: bool) -> None:
    """apply: a failed Job's conditions, its pod's termination state and its log."""
    store = served.store

    def fail(obj: dict[str, Any]) -> None:
        if obj["kind"] != "Job" or obj.get("status"):
            return
        obj["status"] = {"failed": 1, "conditions": [{"type": "Failed", "status": "True", "reason": H,
                                                      "message": H}]}  # fmt: skip
        terminated = {"state": {"terminated": {"exitCode": H, "reason": H, "message": H}}}
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "j-1", "namespace": "ns", "labels": {"batch.kubernetes.io/job-name": "j"},
                            "ownerReferences": [{"kind": "Job", "name": "j", "uid": obj["metadata"]["uid"]}]},
               "status": {"phase": "Failed", "message": H,
                          "containerStatuses": [{"name": "main", **terminated}]}}  # fmt: skip
        with contextlib.suppress(Exception):
            store.seed(pod)

    store.controllers.append(fail)
    store.log_lines[("j-1", "main", False)] = text + "\n" + H
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "ns"},
           "spec": {"backoffLimit": 0, "template": {"spec": {
               "restartPolicy": "Never", "containers": [{"name": "main", "image": "x"}]}}}}  # fmt: skip
    run(apply_argv(stream(tmp, job)), json_out)


def refused_apply(served: Served, tmp: Path, raw: bytes, text: str, json_out: bool) -> None:
    """apply: the API server refuses an object, its Status message hostile."""
    from krmfn.runner.cluster.api import ApiStatusError

    def refuse(verb: str, key: Any) -> None:
        if verb == "apply" and key.kind == "ConfigMap":
            raise ApiStatusError(422, "Invalid", H)

    served.store.before.append(refuse)
    run(apply_argv(stream(tmp, CONFIGMAP)), json_out)


def stale_member(served: Served, tmp: Path, raw: bytes, text: str, json_out: bool) -> None:
    """apply's prune: a member no longer rendered, whose step-index, step name, spec and status anyone
    who may edit it chose."""
    applied(served, WIDGET, CONFIGMAP)
    served.store.annotate("example.com/v1", "Widget", "ns", "w", {STEP: text, STEP_INDEX: text[:5000]})
    poke(served, ("example.com/v1", "Widget"), "w", spec={"size": H}, status={"message": H})
    run(apply_argv(stream(tmp, CONFIGMAP)), json_out)
    parent = served.store.object("v1", "Secret", "ns", "app")
    assert parent is not None and LOCK not in parent["metadata"]["annotations"]  # the run ended
    assert '"result":"running"' not in parent["metadata"]["annotations"][RUNS]


def live_members(served: Served, tmp: Path, raw: bytes, text: str, json_out: bool) -> None:
    """diff: live members (a Widget's spec, a ConfigMap's step name) and a Secret's annotations."""
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"},
              "stringData": {"k": "v"}}  # fmt: skip
    applied(served, WIDGET, CONFIGMAP, secret)
    poke(served, ("example.com/v1", "Widget"), "w", spec={"size": H, "text": text})
    served.store.annotate("v1", "Secret", "ns", "s", {"kapp.k14s.io/original": text, "x": text})
    served.store.annotate("v1", "ConfigMap", "ns", "c", {STEP: text, STEP_INDEX: text[:5000]})
    run(["diff", "-f", stream(tmp, WIDGET, CONFIGMAP, secret), "-n", "ns", "--applyset", "app"], json_out)


def members_and_records(served: Served, tmp: Path, raw: bytes, text: str, json_out: bool) -> None:
    """status: members' statuses and step annotations, the parent's run record and lock."""
    applied(served, WIDGET, CONFIGMAP)
    poke(served, ("example.com/v1", "Widget"), "w", status={
        "conditions": [{"type": "Ready", "status": "False", "reason": H, "message": H}],
        "observedGeneration": H,
    })  # fmt: skip
    served.store.annotate("v1", "ConfigMap", "ns", "c", {STEP: text, STEP_INDEX: text[:5000]})
    since = "2026-01-01T00:00:00Z"
    record = {"run": text, "start": since, "end": text, "result": "failed", "failedStep": text, "error": text,
              "steps": [[text, 1.0, text]]}  # fmt: skip
    lock = {"holder": text, "run": text, "since": since, "expires": "2999-01-01T00:00:00Z", "start": text}
    served.store.annotate("v1", "Secret", "ns", "app", {RUNS: json.dumps([record]), LOCK: json.dumps(lock)})
    run(["status", "-n", "ns", "--applyset", "app", "--history"], json_out)


def hostile_stream(served: Served, tmp: Path, raw: bytes, text: str, json_out: bool) -> None:
    """plan and export: a stream whose step annotations hold the text (no cluster)."""
    for field in (STEP, STEP_INDEX, STEP_TIMEOUT, "krmfn.dev/wait"):
        notes = {field: text} if field == STEP_INDEX else {field: text, STEP_INDEX: "0"}
        path = stream(tmp, {**CONFIGMAP, "metadata": {**CONFIGMAP["metadata"], "annotations": notes}})
        run(["plan", "-f", path], json_out)
        for engine in (["argocd"], ["resourceset", "--name", "x", "-n", "ns"]):
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = krmfn_main(["export", engine[0], "-f", path, *engine[1:]])
            check("export", code, "", err.getvalue(), json_out=False)  # stdout: YAML, quoted by its writer


SCENARIOS = {f.__name__: f for f in (custom_resource_status, failed_job, refused_apply, stale_member,
                                      live_members, members_and_records, hostile_stream)}  # fmt: skip
TEXT = "".join(CONTROLS) + "".join(CI_LINES)
"""The text of the places that hold strings, when the value under test is not one."""


def _text_of(raw: bytes) -> str:
    with contextlib.suppress(ValueError, RecursionError):
        found = json.loads(raw)
        if isinstance(found, str):
            return found
    return TEXT


@pytest.mark.parametrize("scenario", list(SCENARIOS))
@pytest.mark.parametrize(("raw", "json_out"), CASES)
def test_every_hostile_value_through_every_entry_point(
    scenario: str, raw: bytes, json_out: bool, tmp_path: Path
) -> None:  # fmt: skip
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("KRMFN_DEBUG", raising=False)
        SCENARIOS[scenario](cluster(mp, raw), tmp_path, raw, _text_of(raw), json_out)


@pytest.mark.parametrize("scenario", list(SCENARIOS))
@SETTINGS
@given(raw=values, text=texts, json_out=st.booleans())
def test_generated_hostile_values_through_every_entry_point(
    scenario: str, raw: bytes, text: str, json_out: bool, tmp_path_factory: pytest.TempPathFactory
) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("KRMFN_DEBUG", raising=False)
        SCENARIOS[scenario](cluster(mp, raw), tmp_path_factory.mktemp("s"), raw, text, json_out)
