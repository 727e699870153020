"""Concurrent apply within a step (krmfn/runner/engine/parallel.py and the engine's use of it, on the fake
cluster): kind order kept between groups, bounded requests in flight, results in plan order, the first
failure stops the step and names its object, nothing of a later step applied."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from fake_kube import FakeApi
from hypothesis import given, settings
from hypothesis import strategies as st

from krmfn.runner.cluster.api import ApiStatusError
from krmfn.runner.engine.engine import Options, Runner
from krmfn.runner.engine.parallel import groups, in_order
from krmfn.runner.errors import Interrupted, InvalidObject
from krmfn.runner.events import Apply, Error, Event
from krmfn.runner.plan import Item, Key, build_plan, kind_rank

KINDS = ["Namespace", "CustomResourceDefinition", "ConfigMap", "Secret", "Service", "Deployment",
         "Widget", "ValidatingWebhookConfiguration", "Job"]  # fmt: skip


def _item(kind: str, name: str) -> Item:
    return Item({"apiVersion": "v1", "kind": kind, "metadata": {"name": name}})


@settings(max_examples=200, deadline=None)
@given(kinds=st.lists(st.sampled_from(KINDS), max_size=30))
def test_groups_keep_the_plan_order_and_never_mix_kind_ranks(kinds: list[str]) -> None:
    items = sorted((_item(k, f"o{i}") for i, k in enumerate(kinds)), key=lambda it: kind_rank(it.kind))
    found = groups(items, lambda it: it.kind == "Job")
    assert [it for g in found for it in g] == items
    for group in found:
        assert len({kind_rank(it.kind) for it in group}) == 1
        assert len(group) == 1 or all(it.kind != "Job" for it in group)
    ranks = [kind_rank(g[0].kind) for g in found]
    assert ranks == sorted(ranks), "a later group never holds a kind an earlier one must follow"


def test_in_order_bounds_the_requests_in_flight_and_yields_in_order() -> None:
    lock = threading.Lock()
    running, most = 0, 0

    def task(i: int) -> Callable[[], int]:
        def run() -> int:
            nonlocal running, most
            with lock:
                running += 1
                most = max(most, running)
            time.sleep(0.002 * ((i * 7) % 5))
            with lock:
                running -= 1
            return i

        return run

    checks = []
    out = [(i, f.result()) for i, f in in_order([task(i) for i in range(40)], 4, lambda: checks.append(1))]
    assert out == [(i, i) for i in range(40)]
    assert most <= 4 and len(checks) == 40


def test_in_order_starts_nothing_after_a_failure_and_yields_what_was_in_flight() -> None:
    started = []

    def task(i: int) -> Callable[[], int]:
        def run() -> int:
            started.append(i)
            if i == 3:
                raise ValueError("boom")
            time.sleep(0.01)
            return i

        return run

    results = list(in_order([task(i) for i in range(50)], 4, lambda: None))
    assert [i for i, _ in results] == list(range(len(results)))
    assert isinstance(results[3][1].exception(), ValueError)
    assert max(started) < 3 + 4 + 1, "after the failure, only the requests already in flight ran"


def test_in_order_stops_when_check_raises() -> None:
    calls = []

    def check() -> None:
        if len(calls) == 5:
            raise Interrupted(2, "step s")
        calls.append(1)

    with pytest.raises(Interrupted):
        list(in_order([lambda: None] * 20, 2, check))
    assert len(calls) == 5


# --- the engine ----------------------------------------------------------------------------------------


def _cm(name: str, step: int, **extra: Any) -> dict[str, Any]:
    notes = {"krmfn.dev/step-index": str(step), "krmfn.dev/step": f"s{step}"}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "annotations": notes},
            "data": {"k": "v"}, **extra}  # fmt: skip


@pytest.mark.parametrize("concurrency", [1, 4, 16])
def test_a_refused_object_stops_its_step_names_itself_and_nothing_later_is_applied(concurrency: int) -> None:
    docs = [_cm(f"cm-{i:02}", 0) for i in range(30)] + [_cm("later", 1)]
    api = FakeApi()
    refused = "cm-07"

    def refuse(verb: str, key: Key) -> None:
        if verb == "apply" and key.name == refused:
            raise ApiStatusError(422, "Invalid", f'ConfigMap "{refused}" is invalid: data: bad key')
        time.sleep(0.001)  # a request takes a moment, so several are in flight

    api.before.append(refuse)
    events: list[Event] = []
    plan = build_plan(docs, namespace="ns", default_timeout=5)
    result = Runner(api, Options(namespace="ns", applyset="app", concurrency=concurrency), events.append).run(
        plan
    )
    assert not result.ok and isinstance(result.error, InvalidObject)
    assert f"ConfigMap ns/{refused}" in str(result.error) and result.failed_step == "s0"
    applied = [e.object for e in events if isinstance(e, Apply)]
    assert applied == sorted(applied), "reported in plan order"
    assert f"ConfigMap ns/{refused}" not in applied
    assert all(f"ConfigMap ns/cm-{i:02}" in applied for i in range(7)), "what came before was applied"
    # Past the refused object, only what was already in flight when it failed.
    assert len(applied) <= 7 + concurrency - 1
    assert api.object("v1", "ConfigMap", "ns", refused) is None
    assert "ConfigMap ns/later" not in applied
    assert [e for e in events if isinstance(e, Error)][-1].object == f"ConfigMap ns/{refused}"
