"""The waiter's watches (krmfn/runner/engine/waiter.py) against a scripted API: one watch per kind and
namespace, where it starts, which events reach the engine, and how a watch resumes."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from krmfn.runner.cluster.api import ApiStatusError, Resource, WatchEvent
from krmfn.runner.engine.waiter import Watched, Watcher
from krmfn.runner.errors import ClusterUnreachable
from krmfn.runner.plan import Key

DEPLOYMENTS = Resource("apps", "v1", "Deployment", "deployments", True)
JOBS = Resource("batch", "v1", "Job", "jobs", True)
NAMESPACES = Resource("", "v1", "Namespace", "namespaces", False)

Script = list[WatchEvent | Exception]


class ScriptedApi:
    """``watch`` calls are recorded; each plays the next script given for its (plural, name) and then
    blocks until the watcher stops, as a quiet watch does."""

    def __init__(self, scripts: dict[tuple[str, str], list[Script]]) -> None:
        self.scripts = scripts
        self.calls: list[tuple[str, str, str, str]] = []
        self.lock = threading.Lock()

    def watch(
        self, res: Resource, name: str, namespace: str, resource_version: str, stop: threading.Event
    ) -> Iterator[WatchEvent]:
        with self.lock:
            self.calls.append((res.plural, name, namespace, resource_version))
            plays = self.scripts.get((res.plural, name)) or []
            script = plays.pop(0) if plays else []
        for step in script:
            if isinstance(step, Exception):
                raise step
            yield step
        if not plays:
            stop.wait(5)


def obj(name: str, version: int | str, **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "team", "resourceVersion": str(version)},
        "status": status,
    }


def watched(res: Resource, name: str, version: int | str, namespace: str = "team") -> Watched:
    return Watched(Key(res.group, res.kind, namespace, name), res, str(version))


def updates(watcher: Watcher, count: int) -> list[tuple[str, Any]]:
    got = []
    for _ in range(count):
        key, found = watcher.updates.get(timeout=5)
        got.append((key.name, found if not isinstance(found, dict) else found["metadata"]["resourceVersion"]))
    with pytest.raises(queue.Empty):
        watcher.updates.get(timeout=0.2)
    return got


def test_objects_of_one_kind_and_namespace_share_one_watch_from_the_oldest_version() -> None:
    api = ScriptedApi({("deployments", ""): [[
        ("MODIFIED", obj("b", 15)),  # older than b's applied state (20): dropped
        ("MODIFIED", obj("a", 16)),
        ("MODIFIED", obj("other", 17)),  # not waited for
        ("BOOKMARK", {"metadata": {"resourceVersion": "18"}}),
        ("MODIFIED", obj("b", 21)),
        ("MODIFIED", obj("a", 16)),  # a repeat: dropped
        ("DELETED", obj("c", 30)),
    ]]})  # fmt: skip
    watcher = Watcher(api, sleep=lambda _: None)  # type: ignore[arg-type]
    watcher.follow_all(
        [watched(DEPLOYMENTS, "a", 12), watched(DEPLOYMENTS, "b", 20), watched(DEPLOYMENTS, "c", 25)]
    )
    try:
        assert updates(watcher, 3) == [("a", "16"), ("b", "21"), ("c", None)]
    finally:
        watcher.close()
    assert api.calls == [("deployments", "", "team", "12")]


def test_a_watch_per_kind_and_namespace_and_one_by_name_for_a_single_object() -> None:
    api = ScriptedApi({})
    watcher = Watcher(api, sleep=lambda _: None)  # type: ignore[arg-type]
    watcher.follow_all([
        watched(DEPLOYMENTS, "a", 5), watched(JOBS, "j", 7), watched(DEPLOYMENTS, "b", 3),
        watched(DEPLOYMENTS, "a", 9, namespace="prod"), watched(NAMESPACES, "n1", 4, namespace=""),
        watched(NAMESPACES, "n2", 6, namespace=""),
    ])  # fmt: skip
    watcher.close()
    for _ in range(50):
        if len(api.calls) == 4:
            break
        threading.Event().wait(0.02)
    assert sorted(api.calls) == [
        ("deployments", "", "team", "3"),
        ("deployments", "a", "prod", "9"),
        ("jobs", "j", "team", "7"),
        ("namespaces", "", "", "4"),
    ]


def test_versions_that_are_not_integers_get_one_watch_per_object() -> None:
    api = ScriptedApi({("deployments", "a"): [[("MODIFIED", obj("a", "x9"))]]})
    watcher = Watcher(api, sleep=lambda _: None)  # type: ignore[arg-type]
    watcher.follow_all([watched(DEPLOYMENTS, "a", "x1"), watched(DEPLOYMENTS, "b", 2)])
    try:
        assert updates(watcher, 1) == [("a", "x9")]
    finally:
        watcher.close()
    assert sorted(api.calls) == [("deployments", "a", "team", "x1"), ("deployments", "b", "team", "2")]


def test_a_dropped_watch_resumes_from_the_last_version_and_410_starts_over() -> None:
    api = ScriptedApi({("deployments", ""): [
        [("MODIFIED", obj("a", 11)), ClusterUnreachable("watch dropped")],
        [("BOOKMARK", {"metadata": {"resourceVersion": "40"}}),
         ("ERROR", {"code": 410, "reason": "Expired"})],
        [("ADDED", obj("a", 11)), ("ADDED", obj("b", 50))],  # the current state: a's is known already
    ]})  # fmt: skip
    sleeps: list[float] = []
    watcher = Watcher(api, sleep=sleeps.append)  # type: ignore[arg-type]
    watcher.follow_all([watched(DEPLOYMENTS, "a", 10), watched(DEPLOYMENTS, "b", 10)])
    try:
        assert updates(watcher, 2) == [("a", "11"), ("b", "50")]
    finally:
        watcher.close()
    assert [version for *_, version in api.calls] == ["10", "11", ""]
    assert sleeps == [0.05, 0.05]


def test_an_error_that_ends_the_watch_reaches_every_object_it_followed() -> None:
    api = ScriptedApi({("deployments", ""): [[ApiStatusError(404, "NotFound", "no such resource")]]})
    watcher = Watcher(api, sleep=lambda _: None)  # type: ignore[arg-type]
    watcher.follow_all([watched(DEPLOYMENTS, "a", 1), watched(DEPLOYMENTS, "b", 2)])
    try:
        got = [watcher.updates.get(timeout=5) for _ in range(2)]
    finally:
        watcher.close()
    assert sorted(key.name for key, _ in got) == ["a", "b"]
    assert all(isinstance(err, ApiStatusError) and err.code == 404 for _, err in got)


def test_a_forbidden_collection_watch_falls_back_to_one_watch_per_object() -> None:
    """RBAC may grant watch only with resourceNames: a watch by name is allowed, the collection's is not."""
    api = ScriptedApi({
        ("deployments", ""): [[ApiStatusError(403, "Forbidden", "cannot watch resource deployments")]],
        ("deployments", "a"): [[("MODIFIED", obj("a", 31))]],
        ("deployments", "b"): [[("MODIFIED", obj("b", 32))]],
    })  # fmt: skip
    watcher = Watcher(api, sleep=lambda _: None)  # type: ignore[arg-type]
    watcher.follow_all([watched(DEPLOYMENTS, "a", 30), watched(DEPLOYMENTS, "b", 20)])
    try:
        assert sorted(updates(watcher, 2)) == [("a", "31"), ("b", "32")]
    finally:
        watcher.close()
    assert sorted(api.calls) == [
        ("deployments", "", "team", "20"),
        ("deployments", "a", "team", "30"),
        ("deployments", "b", "team", "20"),
    ]


def test_a_resource_version_no_integer_can_hold_is_news_and_the_watch_goes_on() -> None:
    """Versions come from the cluster: 5,000 digits made int() raise in the watch thread, which ended it."""
    huge = "9" * 5000
    api = ScriptedApi({("deployments", ""): [[("MODIFIED", obj("a", huge)), ("MODIFIED", obj("b", 12))]]})
    watcher = Watcher(api, sleep=lambda _: None)  # type: ignore[arg-type]
    watcher.follow_all([watched(DEPLOYMENTS, "a", 10), watched(DEPLOYMENTS, "b", 10)])
    try:
        assert updates(watcher, 2) == [("a", huge), ("b", "12")]
    finally:
        watcher.close()


@pytest.mark.parametrize("code", ["abc", {"x": 1}, 1.5, None, True])
def test_a_watch_error_event_with_a_code_that_is_not_a_number_ends_the_watch_as_an_error(code: Any) -> None:
    """Cluster data: int("abc") or int({...}) raised in the watch thread, which ended it without a word."""
    event = {"code": code, "reason": "Odd", "message": "odd"}
    api = ScriptedApi({("deployments", "a"): [[("ERROR", event)]]})
    watcher = Watcher(api, sleep=lambda _: None)  # type: ignore[arg-type]
    watcher.follow(watched(DEPLOYMENTS, "a", 1))
    try:
        key, err = watcher.updates.get(timeout=5)
    finally:
        watcher.close()
    assert key.name == "a"
    assert isinstance(err, ApiStatusError) and err.code == 0 and err.reason == "Odd"


def test_an_event_whose_metadata_is_not_a_mapping_is_passed_over() -> None:
    api = ScriptedApi({("deployments", ""): [[("MODIFIED", {"metadata": "x"}), ("MODIFIED", obj("a", 12))]]})
    watcher = Watcher(api, sleep=lambda _: None)  # type: ignore[arg-type]
    watcher.follow_all([watched(DEPLOYMENTS, "a", 10), watched(DEPLOYMENTS, "b", 10)])
    try:
        assert updates(watcher, 1) == [("a", "12")]
    finally:
        watcher.close()
