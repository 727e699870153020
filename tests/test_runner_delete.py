"""``krmfn delete`` against the in-memory API (tests/fake_kube.py): which requests, in which order, what
becomes of the inventory. The waits on watches, finalizers and foreground deletion are the control
plane's (tests/cluster/test_delete.py); here every delete is immediate, so each object is gone at its GET.
"""

from __future__ import annotations

import io
import json
from typing import Any

from fake_kube import FakeApi, FakeClock

from krmfn.runner.commands.delete_cmd import DeleteOptions, Deleter, result_data, summary_line
from krmfn.runner.commands.printers import PlainPrinter
from krmfn.runner.events import Delete, Event, to_dict
from krmfn.runner.inventory.applyset import PART_OF, Parent
from krmfn.runner.reserved import LOCK

NS = "apps"


def seed_app(api: FakeApi, name: str, members: list[tuple[str, str, int | None]]) -> None:
    """The parent ``apps/name`` listing ``members`` (kind, name, step index), and the members, labelled."""
    parent = Parent(name, NS, "1", group_kinds={"ConfigMap", "Job.batch", "Namespace"})
    api.seed(parent.render())
    for kind, obj_name, step in members:
        notes = {} if step is None else {"krmfn.dev/step-index": str(step), "krmfn.dev/step": f"s{step}"}
        meta: dict[str, Any] = {"name": obj_name, "labels": {PART_OF: parent.id}, "annotations": notes}
        if kind != "Namespace":
            meta["namespace"] = NS
        api_version = "batch/v1" if kind == "Job" else "v1"
        api.seed({"apiVersion": api_version, "kind": kind, "metadata": meta})


def run(api: FakeApi, **options: Any) -> tuple[Any, list[Event]]:
    events: list[Event] = []
    deleter = Deleter(
        api, DeleteOptions(name="shop", namespace=NS, **options), events.append, clock=FakeClock()
    )
    return deleter.run(), events


MEMBERS = [("ConfigMap", "config", 0), ("Job", "migrate", 0), ("ConfigMap", "web", 2),
           ("ConfigMap", "mid", 1), ("ConfigMap", "loose", None)]  # fmt: skip


def test_requests_go_in_reverse_step_order_then_the_parent_and_touch_no_other_app() -> None:
    api = FakeApi()
    seed_app(api, "shop", MEMBERS)
    seed_app(api, "other", [("ConfigMap", "theirs", 0)])
    api.requests.clear()

    result, events = run(api)

    assert result.ok, result.error
    deletes = [obj for verb, obj in api.requests if verb == "delete"]
    assert deletes == [
        f"ConfigMap {NS}/web", f"ConfigMap {NS}/mid", f"Job.batch {NS}/migrate", f"ConfigMap {NS}/config",
        f"ConfigMap {NS}/loose", f"Secret {NS}/shop",
    ]  # fmt: skip
    assert api.object("v1", "Secret", NS, "shop") is None
    assert api.object("v1", "ConfigMap", NS, "theirs") is not None and api.object("v1", "Secret", NS, "other")
    assert result_data(result, DeleteOptions("shop", NS))["inventory"] == "deleted"
    assert [e.step_name for e in events if isinstance(e, Delete) and e.action == "deleted"][:-1] == [
        "s2", "s1", "s0", "s0", "default"
    ]  # fmt: skip


def test_a_dry_run_sends_no_write() -> None:
    api = FakeApi()
    seed_app(api, "shop", MEMBERS)
    api.requests.clear()
    result, events = run(api, dry_run=True)
    assert result.ok and {verb for verb, _ in api.requests} <= {"get", "list"}
    assert [e.object for e in events if isinstance(e, Delete)][-1] == f"Secret {NS}/shop"
    assert summary_line(result, DeleteOptions("shop", NS, dry_run=True)).startswith(
        "dry run: would delete 5 object(s) in 4 step(s), then delete the inventory apps/shop"
    )


def test_a_kept_namespace_keeps_the_inventory_narrowed_to_it_with_the_run_recorded() -> None:
    api = FakeApi()
    seed_app(api, "shop", [*MEMBERS, ("Namespace", "shop-data", 0)])
    result, events = run(api)
    assert result.ok, result.error
    parent = api.object("v1", "Secret", NS, "shop")
    assert parent is not None
    notes = parent["metadata"]["annotations"]
    assert notes["applyset.kubernetes.io/contains-group-kinds"] == "Namespace" and LOCK not in notes
    record = json.loads(notes["krmfn.dev/runs"])[-1]
    assert record["command"] == "delete" and record["result"] == "succeeded"
    assert api.object("v1", "Namespace", "", "shop-data") is not None
    kept = [e for e in events if isinstance(e, Delete) and e.action == "kept"]
    assert [e.object for e in kept] == ["Namespace shop-data", f"Secret {NS}/shop"]
    assert "--prune-namespaces" in kept[-1].detail
    # With the flag, the rest goes.
    result, _ = run(api, prune_namespaces=True)
    assert result.ok and api.object("v1", "Namespace", "", "shop-data") is None
    assert api.object("v1", "Secret", NS, "shop") is None


def test_a_gone_app_is_nothing_to_delete() -> None:
    api = FakeApi()
    result, events = run(api)
    assert result.ok and result.absent and events == []
    assert summary_line(result, DeleteOptions("shop", NS)).startswith("nothing to delete: namespace apps has")


def test_hostile_names_are_escaped_in_the_text_output() -> None:
    out = io.StringIO()
    PlainPrinter(out)(Delete("ConfigMap apps/x\x1b[2J\nforged", "deleted", "", 0, "s\u202e0"))
    assert out.getvalue().count("\n") == 1 and "\x1b" not in out.getvalue() and "\u202e" not in out.getvalue()
    assert to_dict(Delete("x", "kept"))["type"] == "delete"
