"""``krmfn apply --follow``: the log lines of a step's Job pods, as they are written, while the step waits.

A thread looks for the step's Job pods (by the Job controller's ``batch.kubernetes.io/job-name`` label)
every ``POLL`` seconds and starts one stream per container that has started (init containers too); each
stream is a follow request with ``timestamps=true`` (api.py ``follow_logs``), its lines emitted as
``Log`` events (the printers escape them, ``-o json`` carries them as JSON strings).

No line is shown twice or lost when a stream ends and is opened again (a dropped connection, a container
restarted in place under ``restartPolicy: OnFailure``): the stream opens again from the second of the last
line shown (``sinceTime`` has a second's precision), and the lines before that line's instant, or at it
and already shown, are skipped. With timestamps on, every line of a container's log starts with one; a
line without is the kubelet's own text (logtext.py) and is not shown.

Log text is hostile and bounded: a line is cut as joblogs.py cuts one, a container shows at
most ``MAX_BYTES`` (then one line says the rest is not shown), and a stream that keeps ending without a
new line (a line over the request's ceiling) is given up with a line that says so. Following is a
courtesy: a pod that cannot be listed or a log that cannot be read never fails the step; the Job's own
status decides, and a failed Job's last lines still reach the error (joblogs.py).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from krmfn.net.ceilings import size
from krmfn.runner.cluster.api import Api
from krmfn.runner.engine.joblogs import cut_line
from krmfn.runner.errors import RunnerError
from krmfn.runner.events import Event, Log
from krmfn.runner.plan import Key

POLL = 0.25
"""Seconds between two looks for new pods and containers: a container's first line is shown within
about this of its start, plus the kubelet's own delay."""
MAX_BYTES = 16 * 1024 * 1024
"""What one container may show in all; past it, one line says the rest is not shown."""
EMPTY_REOPENS = 3
"""Streams of a running container that end at once without a new line before it is given up."""
DRAIN = 2.0
"""Seconds a finished step waits for the streams of its ended containers to reach their end."""
LABEL = "batch.kubernetes.io/job-name"
_STAMP = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?Z")


def instant(stamp: str) -> tuple[str, int] | None:
    """An RFC 3339 timestamp the kubelet writes (``2026-12-03T07:40:01.1234Z``) as (its second, its
    nanoseconds): comparable whatever the number of fraction digits; None for anything else."""
    match = _STAMP.fullmatch(stamp)
    if match is None:
        return None
    return match[1], int((match[2] or "").ljust(9, "0"))


@dataclass
class _Position:
    """Where a container's log was shown up to: the last line's instant and how many lines at it."""

    last: tuple[str, int] | None = None
    at_last: int = 0
    shown_bytes: int = 0

    def since(self) -> str:
        return f"{self.last[0]}Z" if self.last else ""

    def is_new(self, at: tuple[str, int], seen_at: int) -> bool:
        """Whether the line at ``at`` (the ``seen_at``-th at that instant in this stream) is not shown yet."""
        if self.last is None or at > self.last:
            return True
        return at == self.last and seen_at > self.at_last


class Follower:
    """Streams the logs of one step's Job pods while the step waits (``during``)."""

    def __init__(self, api: Api, emit: Callable[[Event], None], poll: float = POLL) -> None:
        self._api = api
        self._emit = emit
        self._poll = poll

    @contextmanager
    def during(self, step: int, step_name: str, jobs: list[Key]) -> Iterator[None]:
        if not jobs:
            yield
            return
        run = _StepLogs(self._api, self._emit, (step, step_name), jobs, self._poll)
        run.start()
        try:
            yield
        finally:
            run.finish()


class _StepLogs:
    def __init__(
        self, api: Api, emit: Callable[[Event], None], step: tuple[int, str], jobs: list[Key], poll: float
    ) -> None:
        self._api = api
        self._emit = emit
        self._step = step
        self._namespace = jobs[0].namespace
        self._jobs = {key.name: key for key in jobs}
        self._poll = poll
        self._stop = threading.Event()
        self._streams: dict[tuple[str, str], threading.Thread] = {}
        self._looking = threading.Lock()
        """The finder and ``finish`` both look: one at a time, or a container could get two streams."""
        self._pod_res = api.resource("v1", "Pod")
        self._finder = threading.Thread(target=self._find, name="krmfn-follow", daemon=True)

    def start(self) -> None:
        self._finder.start()

    def finish(self) -> None:
        """The step is over: a last look for pods, the streams of ended containers read to their end
        (up to ``DRAIN`` seconds), then every stream stopped."""
        self._look()
        for thread in list(self._streams.values()):
            thread.join(DRAIN / max(1, len(self._streams)))
        self._stop.set()
        self._finder.join(1.0)

    def _find(self) -> None:
        while not self._stop.wait(self._poll):
            self._look()

    def _look(self) -> None:
        with self._looking:
            self._look_once()

    def _look_once(self) -> None:
        names = sorted(self._jobs)
        selector = f"{LABEL}={names[0]}" if len(names) == 1 else f"{LABEL} in ({','.join(names)})"
        try:
            pods = self._api.list(self._pod_res, self._namespace, selector)
        except RunnerError:
            return  # a courtesy: the next look tries again
        for pod in pods:
            meta = pod.get("metadata") or {}
            job = self._jobs.get(str((meta.get("labels") or {}).get(LABEL, "")))
            name = meta.get("name")
            if job is None or not isinstance(name, str):
                continue
            for container in _started(pod):
                where = (name, container)
                if where not in self._streams and not self._stop.is_set():
                    thread = threading.Thread(target=self._follow, args=(job, name, container), daemon=True)
                    self._streams[where] = thread
                    thread.start()

    def _follow(self, job: Key, pod: str, container: str) -> None:
        position = _Position()
        empty = 0
        _, seen = self._state(pod, container)
        while not self._stop.is_set():
            shown = self._read(job, pod, container, position)
            if shown is None:
                return  # over the byte budget: said so
            state, restarts = self._state(pod, container)
            while state == "waiting" and not self._stop.wait(self._poll):
                state, restarts = self._state(pod, container)  # a restart's back-off: no request meanwhile
            if restarts is not None and restarts != seen:  # a new run, perhaps over already: new lines
                seen, empty = restarts, 0
                continue
            if state == "ended":
                return
            empty = 0 if shown else empty + 1
            if empty >= EMPTY_REOPENS:
                gave_up = "(the log stream keeps ending, a line may be over its ceiling: no more lines shown)"
                self._say(job, pod, container, gave_up)
                return
            self._stop.wait(self._poll)

    def _read(self, job: Key, pod: str, container: str, position: _Position) -> int | None:
        """One stream from where ``position`` says; the number of lines shown, None past the budget."""
        shown = 0
        seen: dict[tuple[str, int], int] = {}
        try:
            for raw in self._api.follow_logs(pod, self._namespace, container, position.since(), self._stop):
                stamp, _, text = raw.partition(" ")
                at = instant(stamp)
                if at is None:
                    continue  # not a container's line: the kubelet's own text
                seen[at] = seen.get(at, 0) + 1
                if not position.is_new(at, seen[at]):
                    continue
                position.at_last = seen[at] if at == position.last else 1
                position.last = at
                position.shown_bytes += len(text)
                if position.shown_bytes > MAX_BYTES:
                    over = f"(over {size(MAX_BYTES)} of log: no more lines of this container are shown)"
                    self._say(job, pod, container, over)
                    return None
                self._say(job, pod, container, cut_line(text))
                shown += 1
        except RunnerError:
            pass  # a courtesy: opened again below, or given up with the container
        return shown

    def _state(self, pod: str, container: str) -> tuple[str, int | None]:
        """The container's state and its restart count (None when unknown). The state is ``ended`` when
        it will write no more (its pod gone or finished, or it exited and will not restart), ``waiting``
        while it is not running (created, or in a restart's back-off), ``running`` otherwise, and when the
        pod cannot be read (the stream is tried again).
        A run that starts and ends between two looks shows only in the count."""
        try:
            live = self._api.get(self._pod_res, pod, self._namespace)
        except RunnerError:
            return "running", None
        if live is None:
            return "ended", None
        status = live.get("status") or {}
        finished = status.get("phase") in ("Succeeded", "Failed")
        init = status.get("initContainerStatuses") or []
        for entry in [*init, *(status.get("containerStatuses") or [])]:
            if entry.get("name") != container:
                continue
            restarts = entry.get("restartCount")
            count = restarts if isinstance(restarts, int) else 0
            state = entry.get("state") or {}
            if finished:
                return "ended", count
            if "running" in state:
                return "running", count
            done = state.get("terminated") or {}
            if done and (done.get("exitCode") == 0 and (entry in init or _never_restarts(live))):
                return "ended", count
            return "waiting", count
        return "ended", None  # no such container any more

    def _say(self, job: Key, pod: str, container: str, line: str) -> None:
        self._emit(Log(self._step[0], self._step[1], str(job), pod, container, line))


def _never_restarts(pod: dict[str, Any]) -> bool:
    """A container of ``pod`` that exited 0 is not run again (a Job's pod: ``Never`` or ``OnFailure``)."""
    return ((pod.get("spec") or {}).get("restartPolicy") or "Always") != "Always"


def _started(pod: dict[str, Any]) -> list[str]:
    """The containers of ``pod`` that have started (running or ended), init containers first."""
    status = pod.get("status") or {}
    names = []
    for entry in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]:
        state, last = entry.get("state") or {}, entry.get("lastState") or {}
        ran = "running" in state or "terminated" in state or "terminated" in last
        if isinstance(entry.get("name"), str) and ran:
            names.append(entry["name"])
    return names
