"""HttpApi against a stand-in transport (tests/fake_http.py) with an injected clock: retries, Retry-After,
the retry budget, status mapping, paths and bodies. No network, no waiting."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fake_http import MockTransport, json_answer, kubeconfig, params_of, path_of

from krmfn.net.errors import Unreachable
from krmfn.net.wire import Request, Response
from krmfn.runner.cluster.api import ApiStatusError, Resource
from krmfn.runner.cluster.kube import HttpApi
from krmfn.runner.errors import ClusterUnreachable

CONFIG = kubeconfig("apps")
CONFIGMAPS = Resource(group="", version="v1", kind="ConfigMap", plural="configmaps", namespaced=True)


class Clock:
    """Time that moves only when the code under test sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


Answer = Response | Exception


def api(
    answers: Iterator[Answer] | Callable[[Request], Answer], budget: float = 30.0
) -> tuple[HttpApi, Clock, list[Request]]:
    clock, seen = Clock(), []

    def handle(request: Request) -> Response:
        seen.append(request)
        answer = answers(request) if callable(answers) else next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    http = HttpApi(
        CONFIG, retry_budget=budget, sleep=clock.sleep, clock=clock, transport=MockTransport(handle)
    )
    return http, clock, seen


def status(code: int, reason: str = "", message: str = "", **headers: str) -> Response:
    body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason,
            "message": message}  # fmt: skip
    return json_answer(code, body, **headers)


def ok(body: dict[str, Any] | None = None) -> Response:
    return json_answer(200, body or {"kind": "ConfigMap", "metadata": {"name": "x"}})


@pytest.mark.parametrize("code", [429, 500, 502, 503, 504])
def test_transient_answers_are_retried_with_backoff(code: int) -> None:
    http, clock, seen = api(iter([status(code), status(code), status(code), ok()]))
    assert http.get(CONFIGMAPS, "x", "apps") == {"kind": "ConfigMap", "metadata": {"name": "x"}}
    assert len(seen) == 4
    assert clock.sleeps == [0.05, 0.1, 0.2]


@pytest.mark.parametrize(("code", "reason"), [(400, "BadRequest"), (403, "Forbidden"), (409, "Conflict"),
                                              (422, "Invalid")])  # fmt: skip
def test_other_errors_are_not_retried_and_keep_the_servers_reason(code: int, reason: str) -> None:
    http, clock, seen = api(iter([status(code, reason, "spec.template: field is immutable")]))
    with pytest.raises(ApiStatusError) as caught:
        http.get(CONFIGMAPS, "x", "apps")
    assert (caught.value.code, len(seen), clock.sleeps) == (code, 1, [])
    assert reason in str(caught.value) and "field is immutable" in str(caught.value)


def test_retry_after_is_honoured() -> None:
    http, clock, _ = api(iter([status(429, "TooManyRequests", **{"Retry-After": "3"}), ok()]))
    http.get(CONFIGMAPS, "x", "apps")
    assert clock.sleeps == [3.0]


def test_a_retry_after_past_the_budget_ends_the_retries_without_sleeping() -> None:
    http, clock, seen = api(
        iter([status(503, "ServiceUnavailable", **{"Retry-After": "120"}), ok()]), budget=30
    )
    with pytest.raises(ApiStatusError) as caught:
        http.get(CONFIGMAPS, "x", "apps")
    assert (caught.value.code, clock.sleeps, len(seen)) == (503, [], 1)


def test_the_budget_bounds_retries_of_a_server_that_never_recovers() -> None:
    http, clock, seen = api(lambda request: status(503), budget=10)
    with pytest.raises(ApiStatusError):
        http.get(CONFIGMAPS, "x", "apps")
    assert clock.now <= 10 and sum(clock.sleeps) == clock.now
    assert max(clock.sleeps) == 2.0  # the back-off is capped
    assert len(seen) == len(clock.sleeps) + 1


def test_connection_errors_are_retried_then_reported_as_unreachable() -> None:
    http, clock, _ = api(lambda request: Unreachable("connection refused"), budget=5)
    with pytest.raises(ClusterUnreachable, match=r"cannot reach the API server at https://api\.test:6443"):
        http.get(CONFIGMAPS, "x", "apps")
    assert 0 < clock.now <= 5


def test_a_connection_error_then_success_is_survived() -> None:
    http, clock, _ = api(iter([Unreachable("the connection was reset"), ok()]))
    assert http.get(CONFIGMAPS, "x", "apps")["metadata"]["name"] == "x"
    assert clock.sleeps == [0.05]


def test_not_found_is_none_for_get() -> None:
    http, _, _ = api(iter([status(404, "NotFound")]))
    assert http.get(CONFIGMAPS, "x", "apps") is None


@pytest.mark.parametrize("status_code", [200, 422], ids=["an answer", "an error answer"])
@pytest.mark.parametrize(
    "body", ["<html>proxy login</html>", "[" * 100_000 + "]" * 100_000], ids=["html", "nested too deep"]
)
def test_a_body_that_is_not_json_is_one_clear_error(body: str, status_code: int) -> None:
    http, _, _ = api(iter([Response.of(status_code, body.encode())]))
    wanted = (
        ("not JSON" if body.startswith("<") else "nests deeper than 256 levels")
        if status_code == 200
        else "422"
    )
    with pytest.raises(ApiStatusError, match=wanted):
        http.get(CONFIGMAPS, "x", "apps")


def test_requests_carry_the_token_the_path_segments_and_the_field_manager() -> None:
    http, _, seen = api(lambda request: ok())
    http.get(CONFIGMAPS, "a/../b", "apps")
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "apps"}}
    http.apply(CONFIGMAPS, obj, field_manager="krmfn", force=False, dry_run=False)
    get, patch = seen
    assert get.headers["Authorization"] == "Bearer t0k3n"
    assert path_of(get) == "/api/v1/namespaces/apps/configmaps/a%2F..%2Fb"
    assert patch.method == "PATCH" and patch.headers["Content-Type"] == "application/apply-patch+yaml"
    assert params_of(patch)["fieldManager"] == "krmfn"
    assert patch.body is not None and json.loads(patch.body)["metadata"]["name"] == "x"


def test_list_follows_continue_tokens() -> None:
    pages = iter([
        ok({"items": [{"metadata": {"name": "a"}}], "metadata": {"continue": "tok"}}),
        ok({"items": [{"metadata": {"name": "b"}}], "metadata": {}}),
    ])  # fmt: skip
    http, _, seen = api(pages)
    items = http.list(CONFIGMAPS, "apps", "app=web")
    assert [i["metadata"]["name"] for i in items] == ["a", "b"]
    assert all(i["kind"] == "ConfigMap" and i["apiVersion"] == "v1" for i in items)
    assert params_of(seen[1])["continue"] == "tok"


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"<html>proxy error</html>", id="not JSON"),
        pytest.param(b"[1, 2]", id="not an object"),
        pytest.param(b'{"type": "MODIFIED", "object": "x"}', id="object not a mapping"),
        pytest.param(b'{"type": "MODIFIED"}', id="no object"),
    ],
)
def test_a_watch_line_that_is_not_an_event_is_a_dropped_watch(body: bytes) -> None:
    """The watch's lines come from the cluster (or a proxy): one that is not an event raised ValueError
    or AttributeError in the waiter's thread, which ended it; now the watch is resumed like a cut one."""
    good = b'{"type": "ADDED", "object": {"metadata": {"name": "x", "resourceVersion": "5"}}}\n'
    http, _, _ = api(lambda request: Response.of(200, good + body + b"\n"))
    events = http.watch(CONFIGMAPS, "x", "apps", "", threading.Event())
    assert next(events) == ("ADDED", {"metadata": {"name": "x", "resourceVersion": "5"}})
    with pytest.raises(ClusterUnreachable, match=r"^watch of x: the answer is not a stream of events$"):
        next(events)


@pytest.mark.parametrize("depth", [257, 100_000])
def test_a_watch_event_nested_too_deep_ends_the_watch_with_an_error(depth: int) -> None:
    """Resumed like a cut watch, it would come again, and again, until the step's timeout."""
    good = b'{"type": "ADDED", "object": {"metadata": {"name": "x", "resourceVersion": "5"}}}\n'
    deep = b'{"type": "MODIFIED", "object": {"s": ' + b"[" * (depth - 2) + b"]" * (depth - 2) + b"}}\n"
    http, _, _ = api(lambda request: Response.of(200, good + deep))
    events = http.watch(CONFIGMAPS, "x", "apps", "", threading.Event())
    assert next(events)[0] == "ADDED"
    with pytest.raises(ApiStatusError, match=r"^watch of x: an event nests deeper than 256 levels"):
        next(events)


@pytest.mark.parametrize(
    ("date", "expected"),
    [
        ("Thu, 03 Dec 2026 08:00:00 GMT", "2026-12-03T08:00:02+00:00"),
        ("", None),
        ("yesterday", None),
        ("Thu, 03 Dec 2026 08:00:00", None),  # no zone: not the API server's form, not guessed
        ("Thu, 03 Dec 2026 08:00:00 GMT" + " " * 100, None),  # over the length of any HTTP date
        ("Thu, 99 Dec 2026 08:00:00 GMT", None),
    ],
    ids=["http-date", "none", "words", "no-zone", "too-long", "no-such-day"],
)
def test_the_servers_time_comes_from_the_last_date_it_sent_plus_the_time_since(
    date: str, expected: str | None
) -> None:
    http, clock, _ = api(iter([ok() if not date else json_answer(200, {"kind": "ConfigMap"}, Date=date)]))
    assert http.server_time() is None  # before any answer
    http.get(CONFIGMAPS, "x", "apps")
    clock.now += 2.0
    found = http.server_time()
    assert (found.isoformat() if found else None) == expected
