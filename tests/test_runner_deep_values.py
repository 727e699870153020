"""Values from the cluster nested deep reach every consumer bounded: ``api.parse_json`` refuses JSON
deeper than ``MAX_DEPTH`` levels once, where it is parsed, so that nothing after it walks a deeper value.

Each consumer gets a value just within the bound (it must work: every walker holds ``MAX_DEPTH``), one
level past it, and 10,000 deep, through the real edge (``HttpApi`` over tests/scripted_kube.py, whose
answers are bytes): the waiter and the health rules (a custom resource's status in a watch event), a CEL
health check, ``krmfn diff`` in text and JSON (a live member), ``krmfn status``, a failed Job's pods and
logs, prune (a stale member), and the inventory (its parent Secret, its run record). Past the bound each
gives one clear line naming the object and the limit, or skips the value (a Job's pod details, a record),
never a traceback, never exit code 1 from ``krmfn diff`` (it says "changes found"). Before the bound, a
status 980 deep made a CEL check's ``json.dumps`` raise ``RecursionError`` mid-step, and a live object 470
deep (500 here: where its walkers stop depends on the stack) made ``krmfn diff`` print a traceback and exit 1.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_run import krmfn_cli
from scripted_kube import Served, Store

from krmfn.runner.cluster.api import MAX_DEPTH, parse_json
from krmfn.runner.engine.engine import Options, Runner
from krmfn.runner.health.celworker import Worker
from krmfn.runner.inventory.runs import parse_runs
from krmfn.runner.plan import build_plan
from krmfn.runner.reserved import LOCK, RUNS

DEEP = "\x00deep"
"""The placeholder the scripted server replaces with the nested JSON, wherever an object holds it."""
PLACED_AT = 2
"""Levels above the value in an object: the object, then ``status`` or ``spec``. An answer adds its own:
none for a get, one for a watch event, two for a list (``{"items": [...]}``)."""
DEPTHS = {
    "fits": MAX_DEPTH - PLACED_AT - 2,  # within the bound in every answer, a list's included
    "just-over": MAX_DEPTH - PLACED_AT + 1,  # past it in every answer, a get's included
    "500": 500,  # made krmfn diff's text a traceback (exit 1): its walkers stopped near 490 levels
    "980": 980,  # made a CEL health check's json.dumps raise mid-step
    "10000": 10_000,
}
WIDGET = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "ns"},
          "spec": {"size": 1}}  # fmt: skip
CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"},
             "data": {"k": "v"}}  # fmt: skip


def nested(levels: int) -> bytes:
    return b"[" * levels + b"]" * levels


@pytest.fixture(params=list(DEPTHS), ids=list(DEPTHS))
def depth(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> Iterator[Served]:
    """A scripted cluster, reached by every command (``krmfn.runner.cluster.kube.connect``)."""
    served = Served(Store("ns"))
    import krmfn.runner.cluster.kube

    monkeypatch.setattr(krmfn.runner.cluster.kube, "connect", lambda *a, **k: served.api())
    monkeypatch.delenv("KRMFN_DEBUG", raising=False)
    yield served


def run(argv: list[str]) -> tuple[int, str, str]:
    code, out, err = krmfn_cli(argv)
    assert "RecursionError" not in out + err, (out + err)[-3000:]
    return code, out, err


def stream(tmp: Path, *docs: dict[str, Any]) -> str:
    path = tmp / "stream.yaml"
    path.write_text("\n---\n".join(json.dumps(d) for d in docs))
    return str(path)


def applied(served: Served, *docs: dict[str, Any]) -> None:
    """``docs`` applied as krmfn apply leaves them (``app`` in ``ns``), before anything is deep."""
    result = Runner(served.api(), Options(namespace="ns", applyset="app"), lambda e: None).run(
        build_plan(list(docs), namespace="ns", default_timeout=5)
    )
    assert result.ok, result.error


def make_deep(served: Served, depth: str, verbs: set[str] | None = None, placed_at: int = PLACED_AT) -> None:
    """``DEEP`` becomes ``depth`` (of ``DEPTHS``) for a value ``placed_at`` levels down in an object."""
    shift = PLACED_AT - placed_at if depth in ("fits", "just-over") else 0
    served.raw = {DEEP: nested(DEPTHS[depth] + shift)}
    if verbs is not None:
        served.raw_in = verbs


def poke(served: Served, kind: tuple[str, str], name: str, field: str, value: Any) -> None:
    """Sets a top-level ``field`` of the stored object as another client (a controller) would."""
    res = served.store.resource(*kind)
    live = served.store.get(res, name, "ns")
    assert live is not None
    live[field] = value
    served.store.replace(res, live, field_manager="other")


def one_line(text: str, *words: str) -> str:
    lines = [line for line in text.strip().splitlines() if line]
    assert lines and len(lines[-1]) < 1000, lines
    for word in words:
        assert word in lines[-1], lines[-1]
    return lines[-1]


def record(served: Served) -> list[str]:
    parent = served.store.object("v1", "Secret", "ns", "app")
    assert parent is not None
    notes = parent["metadata"]["annotations"]
    assert LOCK not in notes  # released
    return [r.result for r in parse_runs(notes.get(RUNS, ""))]


LIMIT = f"nests deeper than {MAX_DEPTH} levels"


# --- the parse itself ---------------------------------------------------------------------------------------


def test_the_bound_is_where_json_is_parsed() -> None:
    assert parse_json(nested(MAX_DEPTH)) is not None
    for text in (nested(MAX_DEPTH + 1), nested(100_000), "[" * 100_000):
        with pytest.raises(ValueError, match=r"nests deeper|Expecting"):
            parse_json(text)
    assert parse_json('{"a": "' + "[" * 5000 + '"}') == {"a": "[" * 5000}  # brackets in a string do not count


@pytest.mark.parametrize(
    ("text", "why"),
    [("1e999", "not finite"), ("-1e999", "not finite"), ("NaN", "not JSON"), ("-Infinity", "not JSON"),
     ("9" * 5000, "more than 4300 digits")],
)  # fmt: skip
def test_numbers_json_cannot_carry_are_refused_where_json_is_parsed(text: str, why: str) -> None:
    """``-o json`` could not write them back as JSON (Python writes ``NaN``, which JSON readers refuse)."""
    with pytest.raises(ValueError, match=why):
        parse_json('{"status": {"n": ' + text + "}}")
    assert parse_json('{"n": 1.5e308}') == {"n": 1.5e308}


# --- the waiter, the health rules, CEL: a custom resource's status in a watch event -------------------------


def _widget_status(served: Served) -> None:
    """The controller answers the apply with "not ready", and writes a Ready status holding the deep
    field once the Widget is watched (so that the watch, not the apply, carries it)."""

    def not_ready(obj: dict[str, Any]) -> None:
        if obj["kind"] == "Widget" and not obj.get("status"):
            obj["status"] = {"conditions": [{"type": "Ready", "status": "False"}]}

    def ready() -> None:
        res = served.store.resource("example.com/v1", "Widget")
        live = served.store.get(res, "w", "ns")
        if live is not None and "deep" not in live.get("status", {}):
            poke(served, ("example.com/v1", "Widget"), "w", "status",
                 {"conditions": [{"type": "Ready", "status": "True"}], "deep": DEEP})  # fmt: skip

    served.store.controllers.append(not_ready)
    served.on_watch.append(ready)


@pytest.mark.parametrize("checks", [False, True], ids=["kstatus", "cel"])
def test_a_deep_status_in_a_watch_event(
    cluster: Served, depth: str, checks: bool, tmp_path: Path
) -> None:  # fmt: skip
    make_deep(cluster, depth, {"watch"})
    _widget_status(cluster)
    argv = ["apply", "-f", stream(tmp_path, WIDGET), "-n", "ns", "--applyset", "app", "--wait",
            "--step-timeout", "30s"]  # fmt: skip
    if checks:
        (tmp_path / "checks.yaml").write_text(json.dumps([{
            "apiVersion": "example.com/v1", "kind": "Widget",
            "current": "size(status.deep) >= 0 && status.conditions.exists(c, c.type == 'Ready' && "
                       "c.status == 'True')",
        }]))  # fmt: skip
        argv += ["--health-checks", str(tmp_path / "checks.yaml")]
    code, out, err = run(argv)
    if depth == "fits":
        assert code == 0, out + err
        assert record(cluster) == ["succeeded"]
    else:
        assert code == 1, out + err
        one_line(out, "Widget.example.com ns/w", LIMIT)
        assert record(cluster) == ["failed"]


def test_the_cel_worker_refuses_what_it_cannot_serialize() -> None:
    """The bound keeps deeper values away; the worker still answers for one it is handed anyway."""
    value: Any = "x"
    for _ in range(5000):
        value = [value]
    worker = Worker()
    try:
        assert "error" in worker.evaluate("true", {"status": {"deep": value}})
        assert worker.evaluate("true", {"status": {"deep": [[[1]]]}}) == {"bool": True}
    finally:
        worker.close()


# --- krmfn diff and krmfn status: a live member -------------------------------------------------------------


@pytest.mark.parametrize("output", ["text", "json"])
def test_diff_of_a_deep_live_member(cluster: Served, depth: str, output: str, tmp_path: Path) -> None:
    applied(cluster, WIDGET, CONFIGMAP)
    poke(cluster, ("example.com/v1", "Widget"), "w", "spec", {"size": 1, "deep": DEEP})
    make_deep(cluster, depth)
    code, out, err = run(["diff", "-f", stream(tmp_path, WIDGET, CONFIGMAP), "-n", "ns", "--applyset", "app",
                          "-o", output])  # fmt: skip
    if depth == "fits":
        assert code == 1, err  # the next apply removes spec.deep
        shown = out if output == "text" else json.dumps([json.loads(line) for line in out.splitlines()])
        assert "deep" in shown
    else:
        assert code == 2, out + err  # an error, never 1 ("changes found")
        one_line(err, "Widget.example.com", LIMIT)
        if output == "json":
            assert json.loads(out.splitlines()[-1])["ok"] is False


def test_status_of_a_deep_live_member(cluster: Served, depth: str) -> None:
    applied(cluster, WIDGET, CONFIGMAP)
    poke(cluster, ("example.com/v1", "Widget"), "w", "spec", {"size": 1, "deep": DEEP})
    make_deep(cluster, depth)
    for output in ("text", "json"):
        code, out, err = run(["status", "-n", "ns", "--applyset", "app", "-o", output])
        if depth == "fits":
            assert code == 0, out + err
        else:
            assert code == 1 and out == "", out + err
            one_line(err, "Widget.example.com", LIMIT)


# --- prune: a stale member; the inventory: its parent and its record ----------------------------------------


def test_a_deep_stale_member(cluster: Served, depth: str, tmp_path: Path) -> None:
    applied(cluster, WIDGET, CONFIGMAP)
    poke(cluster, ("example.com/v1", "Widget"), "w", "spec", {"size": 1, "deep": DEEP})
    make_deep(cluster, depth)
    code, out, err = run(["apply", "-f", stream(tmp_path, CONFIGMAP), "-n", "ns", "--applyset", "app"])
    if depth == "fits":
        assert code == 0, out + err
        assert cluster.store.object("example.com/v1", "Widget", "ns", "w") is None  # pruned
        assert record(cluster) == ["succeeded", "succeeded"]
    else:
        assert code == 1, out + err
        one_line(out, "Widget.example.com", LIMIT, "nothing applied")
        assert record(cluster) == ["succeeded", "failed"]
        assert cluster.store.object("example.com/v1", "Widget", "ns", "w") is not None


def test_a_deep_inventory_parent(cluster: Served, depth: str, tmp_path: Path) -> None:
    applied(cluster, CONFIGMAP)
    # Where the API server keeps arbitrary JSON on any object: another manager's managedFields.
    res = cluster.store.resource("v1", "Secret")
    with cluster.store._lock:
        parent = cluster.store._objects[next(k for k in cluster.store._objects if k.kind == "Secret")]
        parent["metadata"]["managedFields"] = [{"manager": "other", "fieldsV1": {"f:data": DEEP}}]
    assert cluster.store.get(res, "app", "ns") is not None
    make_deep(cluster, depth, placed_at=5)
    code, out, err = run(["apply", "-f", stream(tmp_path, CONFIGMAP), "-n", "ns", "--applyset", "app"])
    assert code == (0 if depth == "fits" else 1), out + err
    code, out, err = run(["diff", "-f", stream(tmp_path, CONFIGMAP), "-n", "ns", "--applyset", "app"])
    assert code == (0 if depth == "fits" else 2), out + err
    code, out, err = run(["status", "-n", "ns", "--applyset", "app"])
    assert code == (0 if depth == "fits" else 1), out + err
    if depth != "fits":
        one_line(err, "Secret ns/app", LIMIT)


def test_a_deep_run_record_is_skipped(cluster: Served, depth: str, tmp_path: Path) -> None:
    applied(cluster, CONFIGMAP)
    cluster.store.annotate("v1", "Secret", "ns", "app", {RUNS: "[" * DEPTHS[depth] + "]" * DEPTHS[depth]})
    code, out, err = run(["status", "-n", "ns", "--applyset", "app", "--history"])
    assert code == 0 and "last run: not recorded" in out, out + err  # the record is left out
    code, out, err = run(["apply", "-f", stream(tmp_path, CONFIGMAP), "-n", "ns", "--applyset", "app"])
    assert code == 0, out + err
    assert record(cluster) == ["succeeded"]


# --- a failed Job's pods and logs ---------------------------------------------------------------------------

POD_SPEC = {"restartPolicy": "Never", "containers": [{"name": "main", "image": "x"}]}
JOB = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "ns"},
       "spec": {"backoffLimit": 0, "template": {"spec": POD_SPEC}}}  # fmt: skip


def test_a_failed_jobs_deep_pod_is_left_out_of_its_error(cluster: Served, depth: str, tmp_path: Path) -> None:
    store = cluster.store

    def controller(obj: dict[str, Any]) -> None:
        if obj["kind"] != "Job" or obj.get("status"):
            return
        obj["status"] = {"failed": 1, "conditions": [{"type": "Failed", "status": "True",
                                                      "reason": "BackoffLimitExceeded"}]}  # fmt: skip
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "j-1", "namespace": "ns", "labels": {"batch.kubernetes.io/job-name": "j"},
                            "ownerReferences": [{"kind": "Job", "name": "j", "uid": obj["metadata"]["uid"]}]},
               "status": {"phase": "Failed", "deep": DEEP, "containerStatuses": [
                   {"name": "main", "state": {"terminated": {"exitCode": 3, "reason": "Error"}}}
               ]}}  # fmt: skip
        with contextlib.suppress(Exception):
            store.seed(pod)

    store.controllers.append(controller)
    store.log_lines[("j-1", "main", False)] = "last words\n"
    make_deep(cluster, depth)
    code, out, err = run(["apply", "-f", stream(tmp_path, JOB), "-n", "ns", "--applyset", "app", "--wait"])
    assert code == 1, out + err
    line = one_line(out, "Job.batch ns/j", "BackoffLimitExceeded")
    assert ("exit code 3" in line) == (depth == "fits"), line  # the pod's details, when it can be read
    assert record(cluster) == ["failed"]
