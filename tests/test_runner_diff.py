"""The pure parts of `krmfn diff` and `krmfn status`: comparison, Secret masking, the text a terminal
gets, and the run records on the ApplySet parent (bounded, and read safely when tampered with)."""

from __future__ import annotations

import base64
import io
import json
import signal
import unicodedata
from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from krmfn.runner.commands.diff_cmd import _text
from krmfn.runner.engine.diff import MASK, Change, comparable, masked, patch_of, unified
from krmfn.runner.errors import Interrupted, ObjectError, StepTimeout
from krmfn.runner.events import StepDone
from krmfn.runner.inventory.applyset import Parent
from krmfn.runner.inventory.runs import (
    MAX_PLAN_BYTES,
    MAX_RUN_BYTES,
    MAX_RUNS,
    RunLog,
    RunRecord,
    decode_plan,
    encode_plan,
    parse_runs,
    render_runs,
)

ESC = "\x1b"


def _secret(field: str, values: dict[str, str]) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, field: values}


values = st.dictionaries(st.sampled_from("abcdef"), st.text(min_size=4), max_size=6)


@settings(max_examples=200, deadline=None)
@given(before=values, after=values, field=st.sampled_from(["data", "stringData"]))
def test_masking_never_shows_a_value_and_marks_exactly_the_changed_keys(
    before: dict[str, str], after: dict[str, str], field: str
) -> None:
    b, a = masked(_secret(field, before), _secret(field, after))
    assert b is not None and a is not None
    # No value can show: everything but the field is the Secret's own frame, and every value of the field
    # is exactly the mask (with a marker) below. A search for each value in the text instead found
    # generated values such as 'efor' inside the marker ' (before)' or the word 'stringData'.
    frame = {k: v for k, v in _secret(field, {}).items() if k != field}
    assert {k: v for k, v in b.items() if k != field} == frame
    assert {k: v for k, v in a.items() if k != field} == frame
    assert set(b[field]) == set(before) and set(a[field]) == set(after)  # type: ignore[arg-type]
    for key, old in before.items():
        changed = key in after and after[key] != old
        assert b[field][key] == (f"{MASK} (before)" if changed else MASK)  # type: ignore[index]
    for key, new in after.items():
        changed = key in before and new != before[key]
        assert a[field][key] == (f"{MASK} (after)" if changed else MASK)  # type: ignore[index]


def test_masking_leaves_other_kinds_and_handles_a_missing_side() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"}}
    assert masked(cm, cm) == (cm, cm)
    b, a = masked(None, _secret("data", {"k": base64.b64encode(b"v").decode()}))
    assert b is None and a == _secret("data", {"k": MASK})
    b, a = masked(_secret("data", {"k": "dg=="}), None)
    assert a is None and b == _secret("data", {"k": MASK})


def test_comparable_leaves_out_status_managed_fields_and_server_metadata() -> None:
    live = {
        "apiVersion": "v1", "kind": "ConfigMap", "status": {"x": 1},
        "metadata": {"name": "a", "namespace": "n", "uid": "u", "resourceVersion": "9", "generation": 2,
                     "creationTimestamp": "t", "managedFields": [{}], "labels": {"l": "1"},
                     "annotations": {}},
    }  # fmt: skip
    assert comparable(live) == {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "a", "namespace": "n", "labels": {"l": "1"}},
    }  # fmt: skip
    assert comparable(None) is None


def _change(before: dict[str, object] | None, after: dict[str, object] | None) -> Change:
    return Change(0, "s", "ConfigMap n/a", "v1.ConfigMap.n.a", "update", before, after)


def test_patch_is_rfc6902_from_before_to_after() -> None:
    before = {"data": {"a": "1", "b": "2"}}
    after = {"data": {"a": "1", "c": "3"}}
    ops = patch_of(_change(before, after))
    assert {"op": "remove", "path": "/data/b"} in ops and {
        "op": "add",
        "path": "/data/c",
        "value": "3",
    } in ops
    assert patch_of(_change(None, {"a": 1})) == [{"op": "add", "path": "/a", "value": 1}]
    assert patch_of(_change(before, before)) == []


hostile = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=20)


@settings(max_examples=200, deadline=None)
@given(value=hostile, key=hostile, colour=st.booleans())
def test_text_output_never_carries_a_control_character_from_the_objects(
    value: str, key: str, colour: bool
) -> None:
    change = Change(0, f"st{ESC}ep", f"ConfigMap n/{key}", f"v1.ConfigMap.n.{key}", "update",
                    {"data": {key: "old"}}, {"data": {key: value}})  # fmt: skip
    out = io.StringIO()
    _text(out, [change], colour=colour)
    text = out.getvalue()
    ours = text.replace(f"{ESC}[1m", "").replace(f"{ESC}[0m", "")
    for code in ("32", "31", "36"):
        ours = ours.replace(f"{ESC}[{code}m", "")
    assert ESC not in ours
    unsafe = {"Cc", "Cf", "Cs", "Zl", "Zp"}  # what krmfn.terminal escapes
    assert not any(unicodedata.category(c) in unsafe for c in ours.replace("\n", ""))
    assert "::" not in ours and "##" not in ours
    assert (f"{ESC}[" in text) == colour
    assert len(text.splitlines()) == len(unified(change)) + 2


# --- run records ---------------------------------------------------------------------------------------


def test_a_run_record_is_bounded() -> None:
    record = RunRecord("r", "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z", "failed", "s" * 300, "e" * 5000)
    step = __import__("krmfn.runner.inventory.runs").runner.inventory.runs.StepRecord
    record.steps = [step(f"step-{i:03}" * 5, 1.5, "healthy") for i in range(200)]
    text = render_runs([record] * 30)
    data = json.loads(text)
    assert len(data) == MAX_RUNS
    assert all(len(json.dumps(d, separators=(",", ":"))) <= MAX_RUN_BYTES for d in data)
    assert data[0]["stepsLeftOut"] + len(data[0]["steps"]) == 200
    assert len(data[0]["error"]) <= 400
    back = parse_runs(text)
    assert len(back) == MAX_RUNS and back[0].steps_left_out == data[0]["stepsLeftOut"]


junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(data=junk)
def test_any_json_in_the_runs_annotation_parses_to_records_or_nothing(data: object) -> None:
    record_of = {"run": "r", "start": "t", "result": "failed", "steps": data, "end": data}
    for text in (json.dumps(data), json.dumps([data]), json.dumps([record_of])):
        for record in parse_runs(text):
            assert isinstance(record.run, str) and record.result in ("running", "succeeded", "failed",
                                                                     "timeout", "interrupted")  # fmt: skip
            assert all(isinstance(s.seconds, float) for s in record.steps)
            json.dumps(record.data(), allow_nan=False)  # -o json stays JSON
    assert parse_runs("not json") == [] and parse_runs("{}") == []


def test_plan_names_round_trip_and_too_many_are_only_counted() -> None:
    names = [f"ConfigMap ns/cm-{i:05}" for i in range(1000)]
    count, decoded = decode_plan(encode_plan(names))
    assert (count, decoded) == (1000, set(names))
    many = [base64.b64encode(__import__("os").urandom(30)).decode() for _ in range(2000)]
    encoded = encode_plan(many)
    assert encoded == "2000:" and decode_plan(encoded) == (2000, None)
    for bad in (
        "",
        "x:y",
        "3:!!!",
        "3:" + base64.b64encode(b"not zlib").decode(),
        "-1:",
        "3:" + "A" * (MAX_PLAN_BYTES + 4),
    ):
        count, decoded = decode_plan(bad)
        assert decoded is None


def test_the_run_log_records_steps_and_how_the_run_ended() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    ticks = iter([10.0, 12.5, 20.0, 21.0, 30.0, 31.0])
    seen = []
    for error, result in (
        (None, "succeeded"),
        (StepTimeout("s", "1m", []), "timeout"),
        (Interrupted(signal.SIGTERM, "step s"), "interrupted"),
    ):
        log = RunLog(now=lambda: now, monotonic=lambda: next(ticks))
        parent = Parent("app", "ns", "0.1.0", runs=[RunRecord(f"old{i}", "t") for i in range(MAX_RUNS)])
        log.start(parent, ["ConfigMap ns/a"])
        emit = log.observing(seen.append)
        before = parent.render()
        emit(StepDone(0, "s", "healthy", 1.25))
        assert parent.render() == before, "a step alone costs no inventory write"
        log.end(error, None if error is None else "s")
        record = parent.runs[-1]
        assert len(parent.runs) == MAX_RUNS and parent.runs[0].run == "old1"
        assert record.result == result and record.steps[0].seconds == 1.25
        assert record.elapsed is not None and record.elapsed > 0
        back = Parent.from_live("app", "ns", "0.1.0", {"metadata": {**parent.render()["metadata"]}})
        assert back.runs[-1].data() == record.data()
        assert decode_plan(back.last_plan) == (1, {"ConfigMap ns/a"})
    failed = RunLog()
    failed.start(Parent("app", "ns", "0.1.0"), [])
    failed.end(ObjectError("ConfigMap ns/a", "bad"), "s")
    assert failed.record is not None and failed.record.result == "failed"
    assert len(seen) == 3


def test_a_lock_write_whose_answer_was_lost_records_the_run_once() -> None:
    """The write that takes the lock goes through but its answer is lost (a 409 after a retry, as over a
    dropped connection): the run reads its own record back and must not leave it "running" forever."""
    from fake_kube import FakeApi

    from krmfn.runner.cluster.api import ApiStatusError
    from krmfn.runner.engine.engine import Options, Runner
    from krmfn.runner.plan import build_plan

    api = FakeApi("ns")
    real = {"create": api.create, "replace": api.replace}
    lost = []

    def answer_lost(verb: str) -> Any:
        def write(res: Any, obj: dict[str, Any], **kwargs: Any) -> Any:
            stored = real[verb](res, obj, **kwargs)
            if obj.get("kind") == "Secret" and len(lost) < 2:
                lost.append(verb)
                raise ApiStatusError(409, "Conflict", "the object has been modified")
            return stored

        return write

    api.create = answer_lost("create")  # type: ignore[method-assign]
    api.replace = answer_lost("replace")  # type: ignore[method-assign]
    docs = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}}]
    for _ in range(2):
        result = Runner(api, Options(namespace="ns", applyset="app"), lambda e: None).run(
            build_plan(docs, namespace="ns", default_timeout=5)
        )
        assert result.ok, result.error
    live = api.object("v1", "Secret", "ns", "app")
    runs = Parent.from_live("app", "ns", "0", live).runs
    assert lost == ["create", "replace"]
    assert [r.result for r in runs] == ["succeeded", "succeeded"]


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_only_on_a_terminal_and_never_under_no_color(monkeypatch: Any) -> None:
    from krmfn.runner.commands.diff_cmd import _colour

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert _colour(_Tty()) is True
    assert _colour(io.StringIO()) is False
    monkeypatch.setenv("NO_COLOR", "1")
    assert _colour(_Tty()) is False


def test_what_a_dry_run_invents_for_a_new_object_is_left_out_and_what_was_rendered_kept() -> None:
    """Shapes as kube-apiserver v1.35 answers a dry-run create (tests/cluster/test_diff_status.py runs it)."""
    from krmfn.runner.engine.diff import without_invented

    uid = "273366c1-3535-4456-a19d-8a189b6c6200"
    ids = {"batch.kubernetes.io/controller-uid": uid, "controller-uid": uid}
    names = {"batch.kubernetes.io/job-name": "j", "job-name": "j"}
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "j", "uid": uid, "labels": {**ids, **names}},
           "spec": {"selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}},
                    "template": {"metadata": {"labels": {**ids, **names}}, "spec": {}}}}  # fmt: skip
    assert without_invented(job, {"kind": "Job"}) == {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "labels": names},
        "spec": {"template": {"metadata": {"labels": names}, "spec": {}}},
    }  # fmt: skip
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "uid": uid},
               "spec": {"type": "LoadBalancer", "clusterIP": "10.96.0.0", "clusterIPs": ["10.96.0.0"],
                        "healthCheckNodePort": 32770,
                        "ports": [{"port": 80, "nodePort": 32769}, {"port": 81, "nodePort": 30081}]},
               }  # fmt: skip
    rendered = {"spec": {"type": "LoadBalancer", "ports": [{"port": 80}, {"port": 81, "nodePort": 30081}]}}
    assert without_invented(service, rendered)["spec"] == {
        "type": "LoadBalancer", "ports": [{"port": 80}, {"port": 81, "nodePort": 30081}]
    }  # fmt: skip
    assert without_invented(service, {"spec": {"clusterIP": "10.96.0.0"}})["spec"]["clusterIP"] == "10.96.0.0"
    mount = {"name": "kube-api-access-mwgrk", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "uid": uid},
           "spec": {"containers": [{"name": "m", "volumeMounts": [mount]}],
                    "volumes": [{"name": "kube-api-access-mwgrk", "projected": {}}]}}  # fmt: skip
    assert without_invented(pod, {"spec": {"containers": [{"name": "m"}]}})["spec"] == {
        "containers": [{"name": "m"}]
    }
