"""``apply --follow`` (krmfn/runner/engine/follow.py): a step's Job pods' log lines as events, each once,
in order, bounded, across streams that end and open again. The cluster is a stub that serves pods and
scripted log streams; tests/cluster/test_real_node_jobs.py follows real containers."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from krmfn.runner.commands.printers import PlainPrinter, make_printer
from krmfn.runner.engine import follow
from krmfn.runner.engine.follow import Follower, instant
from krmfn.runner.events import Event, Log
from krmfn.runner.plan import Key

JOB = Key("batch", "Job", "ns", "migrate")
T = "2026-12-03T07:40:0{}.{}Z"


def stamp(second: int, fraction: str = "0") -> str:
    return T.format(second, fraction)


class StubApi:
    """Pods of one Job and, per (pod, container), the streams its follow requests get, in order."""

    def __init__(self, pods: list[dict[str, Any]], streams: dict[tuple[str, str], list[list[str]]]) -> None:
        self.pods = pods
        self.streams = streams
        self.requests: list[tuple[str, str, str]] = []
        self.listing_fails = False
        self.backoff = 0
        """Reads of the pod that show its containers waiting (a restart's back-off) before they run."""
        self.restarts = 0
        self.reads: list[dict[str, Any]] = []

    def resource(self, api_version: str, kind: str) -> str:
        return kind

    def list(self, res: str, namespace: str, selector: str) -> list[dict[str, Any]]:
        from krmfn.runner.errors import ClusterUnreachable

        if self.listing_fails:
            raise ClusterUnreachable("the API server went away")
        assert selector == "batch.kubernetes.io/job-name=migrate"
        return self.pods

    def get(self, res: str, name: str, namespace: str) -> dict[str, Any] | None:
        """The pod as ``reads`` says, one per read while there are any; then it runs while a stream of
        it is still scripted (after ``backoff`` reads that show it waiting to restart), then it has
        succeeded."""
        if self.reads:
            return self.reads.pop(0)
        if not any(left for (pod, _), left in self.streams.items() if pod == name):
            return {"status": {"phase": "Succeeded"}}
        state: dict[str, Any] = {"running": {}}
        if self.backoff > 0:
            self.backoff -= 1
            self.restarts += not self.backoff
            state = {"waiting": {"reason": "CrashLoopBackOff"}}
        statuses = [{"name": c, "state": state, "restartCount": self.restarts} for (pod, c) in self.streams
                    if pod == name]  # fmt: skip
        return {"status": {"phase": "Running", "containerStatuses": statuses}}

    def follow_logs(
        self, name: str, namespace: str, container: str, since: str, stop: threading.Event
    ) -> Iterator[str]:
        self.requests.append((name, container, since))
        if self.backoff > 0:  # the kubelet serves the ended run's log again: nothing new
            yield f"{stamp(1)} first run"
            return
        streams = self.streams.get((name, container)) or []
        yield from streams.pop(0) if streams else []


def pod(
    name: str, *, init: list[str] = (), started: list[str] = ("main",), waiting: list[str] = ()
) -> dict[str, Any]:  # type: ignore[assignment]
    def entry(c: str, state: dict[str, Any]) -> dict[str, Any]:
        return {"name": c, "state": state}

    return {
        "metadata": {"name": name, "labels": {"batch.kubernetes.io/job-name": "migrate"}},
        "status": {
            "initContainerStatuses": [entry(c, {"terminated": {"exitCode": 0}}) for c in init],
            "containerStatuses": [entry(c, {"running": {}}) for c in started]
            + [entry(c, {"waiting": {"reason": "ContainerCreating"}}) for c in waiting],
        },
    }


def lines_of(api: StubApi) -> list[tuple[str, str, str]]:
    events: list[Event] = []
    with Follower(api, events.append, poll=0.01).during(0, "pre-deploy", [JOB]):  # type: ignore[arg-type]
        pass
    assert all(isinstance(e, Log) and e.step == 0 and e.object == str(JOB) for e in events), events
    return [(e.pod, e.container, e.line) for e in events if isinstance(e, Log)]


def test_instants_compare_whatever_the_number_of_fraction_digits() -> None:
    ordered = [
        stamp(1),
        stamp(1, "000000001"),
        stamp(1, "12"),
        stamp(1, "123456789"),
        stamp(1, "5"),
        stamp(2),
    ]
    assert [instant(s) for s in ordered] == sorted(instant(s) for s in ordered)  # type: ignore[type-var]
    assert instant(stamp(1, "5")) == instant(stamp(1, "500000000"))
    for bad in (
        "",
        "unable",
        "2026-12-03 07:40:01Z",
        "2026-12-03T07:40:01.1234567890Z",
        "2026-12-03T07:40:01",
    ):
        assert instant(bad) is None, bad


@pytest.mark.parametrize(
    ("streams", "shown"),
    [
        ([[f"{stamp(1)} a", f"{stamp(2)} b"]], ["a", "b"]),
        # a stream that drops and opens again from the second of its last line: nothing twice
        ([[f"{stamp(1)} a", f"{stamp(2, '1')} b"], [f"{stamp(2, '1')} b", f"{stamp(3)} c"]], ["a", "b", "c"]),
        # two lines at one instant: the second is new even though its instant was seen
        ([[f"{stamp(1)} a"], [f"{stamp(1)} a", f"{stamp(1)} a", f"{stamp(2)} b"]], ["a", "a", "b"]),
        # a container restarted in place: its new run's lines follow its old run's
        (
            [[f"{stamp(1)} first run"], [f"{stamp(1)} first run", f"{stamp(5)} second run"]],
            ["first run", "second run"],
        ),
        # the kubelet's own text where a log would be (no timestamp) is not a line of the container
        ([["unable to retrieve container logs for containerd://abc", f"{stamp(1)} real"]], ["real"]),
    ],
    ids=["one-stream", "reopened", "same-instant", "restarted", "kubelet-text"],
)
def test_each_line_is_shown_once_in_order_across_streams(streams: list[list[str]], shown: list[str]) -> None:
    api = StubApi([pod("migrate-x")], {("migrate-x", "main"): streams})
    assert [line for _, _, line in lines_of(api)] == shown
    assert api.requests[0] == ("migrate-x", "main", "")
    if len(streams) > 1:  # opened again from the second of the last line shown
        last = [s for s in streams[0] if instant(s.partition(" ")[0])][-1].partition(" ")[0]
        assert api.requests[1][2] == last.partition(".")[0].removesuffix("Z") + "Z"


def test_every_started_container_is_followed_init_containers_too_and_a_waiting_one_not() -> None:
    api = StubApi(
        [pod("migrate-x", init=["schema"], started=["main"], waiting=["sidecar"])],
        {("migrate-x", "schema"): [[f"{stamp(1)} init"]], ("migrate-x", "main"): [[f"{stamp(2)} main"]]},
    )
    assert sorted(lines_of(api)) == [("migrate-x", "main", "main"), ("migrate-x", "schema", "init")]
    assert {c for _, c, _ in api.requests} == {"schema", "main"}


def test_a_line_is_cut_and_a_container_past_its_budget_says_so_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(follow, "MAX_BYTES", 2000)
    lines = [f"{stamp(1)} {'x' * 600}"] + [f"{stamp(2)} {i:03d}{'y' * 96}" for i in range(50)]
    api = StubApi([pod("migrate-x")], {("migrate-x", "main"): [lines, [f"{stamp(3)} never"]]})
    shown = [line for _, _, line in lines_of(api)]
    assert shown[0] == "x" * 512 + "... (88 more characters)"
    assert shown[-1] == "(over 2000 bytes of log: no more lines of this container are shown)"
    assert len(shown) == 1 + 14 + 1 and "never" not in shown  # 600 + 14 x 99 characters fit in 2000


def test_a_stream_that_keeps_ending_without_a_new_line_is_given_up_with_a_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api = StubApi([pod("migrate-x")], {("migrate-x", "main"): [[f"{stamp(1)} a"]] + [[f"{stamp(1)} a"]] * 5})
    running = {
        "status": {"phase": "Running", "containerStatuses": [{"name": "main", "state": {"running": {}}}]}
    }
    monkeypatch.setattr(api, "get", lambda *a: running)
    shown = [line for _, _, line in lines_of(api)]
    assert shown == [
        "a",
        "(the log stream keeps ending, a line may be over its ceiling: no more lines shown)",
    ]
    assert len(api.requests) == 1 + follow.EMPTY_REOPENS


def test_a_restart_back_off_is_waited_out_without_requests_and_is_not_an_empty_stream() -> None:
    # The first stream is the first run's (served while the back-off lasts), the second the next run's.
    api = StubApi(
        [pod("migrate-x")], {("migrate-x", "main"): [[f"{stamp(1)} first run", f"{stamp(9)} second run"]]}
    )
    api.backoff = 2 * follow.EMPTY_REOPENS
    assert [line for _, _, line in lines_of(api)] == ["first run", "second run"]
    assert len(api.requests) == 2  # one stream before the back-off, one after: none while it lasted


def test_a_run_that_starts_and_ends_between_two_looks_is_read_too() -> None:
    """Seen on a real kubelet: restarted in place, the second run wrote its line and exited 0 within one
    look, so the pod was already Succeeded; only the restart count says there is a run to read."""

    def read(phase: str, restarts: int, state: dict[str, Any]) -> dict[str, Any]:
        entry = {"name": "main", "state": state, "restartCount": restarts}
        return {
            "spec": {"restartPolicy": "OnFailure"},
            "status": {"phase": phase, "containerStatuses": [entry]},
        }

    second = [f"{stamp(1)} first run", f"{stamp(3)} second run"]
    api = StubApi([pod("migrate-x")], {("migrate-x", "main"): [[f"{stamp(1)} first run"], second]})
    api.reads = [read("Running", 0, {"running": {}}),
                 read("Succeeded", 1, {"terminated": {"exitCode": 0}}),
                 read("Succeeded", 1, {"terminated": {"exitCode": 0}})]  # fmt: skip
    assert [line for _, _, line in lines_of(api)] == ["first run", "second run"]
    assert len(api.requests) == 2


def test_pods_that_cannot_be_listed_never_fail_the_step() -> None:
    api = StubApi([pod("migrate-x")], {})
    api.listing_fails = True
    assert lines_of(api) == []


def test_a_follower_without_jobs_starts_nothing() -> None:
    api = StubApi([], {})
    with Follower(api, lambda e: None).during(1, "deploy", []):  # type: ignore[arg-type]
        pass
    assert api.requests == []


HOSTILE = "\x1b[2J::add-mask::x\rFORGED"


def test_log_lines_are_escaped_for_a_terminal_and_kept_verbatim_in_json() -> None:
    event = Log(0, "pre-deploy", str(JOB), "migrate-x", "main", HOSTILE)
    plain = io.StringIO()
    PlainPrinter(plain)(event)
    assert (
        plain.getvalue()
        == "  | Job.batch ns/migrate migrate-x/main: \\x1b[2J:\\x3aadd-mask:\\x3ax\\rFORGED\n"
    )
    out = io.StringIO()
    make_printer("json", out)(event)
    data = json.loads(out.getvalue())
    assert data == {"type": "log", "step": 0, "stepName": "pre-deploy", "object": "Job.batch ns/migrate",
                    "pod": "migrate-x", "container": "main", "line": HOSTILE}  # fmt: skip


def test_lines_of_several_streams_are_emitted_one_event_at_a_time() -> None:
    """The runner's printers are not written for threads: with --follow every event goes through one lock."""
    from krmfn.runner.engine.engine import _serialised

    active = [0]
    overlaps: list[int] = []

    def slow(event: Event) -> None:
        active[0] += 1
        if active[0] > 1:
            overlaps.append(active[0])
        threading.Event().wait(0.001)
        active[0] -= 1

    emit = _serialised(slow)
    threads = [threading.Thread(target=lambda: [emit(Log(0, "s", "o", "p", "c", "l")) for _ in range(20)])
               for _ in range(4)]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not overlaps
