"""The record of the last runs on the ApplySet parent, for ``krmfn status``: pure, no cluster access.

    krmfn.dev/runs: [{"run":"3f9a1c2e","start":"2026-12-01T18:00:00Z","end":"2026-12-01T18:00:12Z",
                      "result":"failed","failedStep":"migrate","error":"...","steps":[["pre",1.2,"healthy"],
                      ["migrate",10.9,"failed"]]}, ...]
    krmfn.dev/last-plan: 3:eJzLz8...     the last run's objects: count, then zlib+base64 of their names

Bounded: the last ``MAX_RUNS`` runs, each at most ``MAX_RUN_BYTES`` (the steps that do not fit are
counted, not listed; an error message is cut), and the plan's names only while they compress to
``MAX_PLAN_BYTES`` (else only the count). With the Job records (applyset.py: at most ~170 KiB) the
parent's annotations stay under the 256 KiB the API server allows.

The annotations are read from the cluster, so they are hostile: a value that does not parse is ignored
(an edited or truncated record hides a run, it never breaks apply or status), and a record read back is
held to the bounds a written one keeps (texts cut, finite non-negative numbers, at most ``MAX_STEPS``
steps), so ``krmfn status`` shows it in a few short lines and ``-o json`` stays JSON.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import os
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from krmfn.errors import DEBUG_ENV, RunnerError
from krmfn.numbers import whole
from krmfn.runner.cluster.api import parse_json
from krmfn.runner.errors import InternalError, Interrupted, RunTimeout, StepTimeout
from krmfn.runner.events import Event, StepDone
from krmfn.terminal import cut

MAX_RUNS = 10
MAX_RUN_BYTES = 2048
MAX_ERROR = 400
MAX_PLAN_BYTES = 16 * 1024
MAX_NAME = 253
"""Characters of a step name (a failed step's too), as a Kubernetes name."""
MAX_WORD = 64
"""Characters of the short fields: the run's id, its times, a step's result."""
MAX_STEPS = 200
"""Steps of one record read back (a written one holds fewer: ``MAX_RUN_BYTES``); the rest are counted."""
RESULTS = ("running", "succeeded", "failed", "timeout", "interrupted")
_TIME = "%Y-%m-%dT%H:%M:%SZ"


def timestamp(t: datetime) -> str:
    return t.astimezone(UTC).strftime(_TIME)


def parse_time(text: str) -> datetime | None:
    try:
        return datetime.strptime(text, _TIME).replace(tzinfo=UTC)
    except (TypeError, ValueError):
        return None


@dataclass
class StepRecord:
    name: str
    seconds: float
    result: str


@dataclass
class RunRecord:
    run: str
    start: str
    end: str | None = None
    result: str = "running"
    failed_step: str | None = None
    error: str | None = None
    steps: list[StepRecord] = field(default_factory=list)
    steps_left_out: int = 0
    """Steps that did not fit in ``MAX_RUN_BYTES``."""
    elapsed: float | None = None
    """Seconds from start to end, measured (the times are whole seconds)."""
    command: str = "apply"
    """What the run was: ``apply``, or ``delete`` (written only then: older records are apply's)."""
    timed_out: list[str] = field(default_factory=list)
    """Steps that timed out with ``onTimeout: continue``: the run went on past them."""

    @property
    def seconds(self) -> float | None:
        if self.elapsed is not None:
            return self.elapsed
        start, end = parse_time(self.start), parse_time(self.end or "")
        return None if start is None or end is None else (end - start).total_seconds()

    def data(self) -> dict[str, Any]:
        out: dict[str, Any] = {"run": self.run, "start": self.start, "end": self.end, "result": self.result}
        if self.elapsed is not None:
            out["elapsed"] = round(self.elapsed, 3)
        if self.failed_step is not None:
            out["failedStep"] = self.failed_step
        if self.error is not None:
            out["error"] = self.error
        out["steps"] = [[s.name, round(s.seconds, 3), s.result] for s in self.steps]
        if self.command != "apply":
            out["command"] = self.command
        if self.timed_out:
            out["timedOut"] = [cut(name, MAX_NAME) for name in self.timed_out[:MAX_STEPS]]
        if self.steps_left_out:
            out["stepsLeftOut"] = self.steps_left_out
        return out

    def bounded(self) -> dict[str, Any]:
        """``data()`` within ``MAX_RUN_BYTES``: an error cut to ``MAX_ERROR`` characters, then the last
        steps left out (counted) until it fits."""
        if self.error is not None:
            self.error = cut(self.error, MAX_ERROR)
        if self.failed_step is not None:
            self.failed_step = cut(self.failed_step, MAX_NAME)
        data = self.data()
        while len(json.dumps(data, separators=(",", ":"))) > MAX_RUN_BYTES and data["steps"]:
            data["steps"].pop()
            data["stepsLeftOut"] = data.get("stepsLeftOut", 0) + 1
        return data

    @classmethod
    def from_data(cls, data: Any) -> RunRecord | None:
        """The record in ``data`` (one entry of the annotation), within the bounds a written one keeps;
        None when it is not a record."""
        if not isinstance(data, dict):
            return None
        run, start, result = data.get("run"), data.get("start"), data.get("result")
        if not (isinstance(run, str) and isinstance(start, str) and result in RESULTS):
            return None
        record = cls(cut(run, MAX_WORD), cut(start, MAX_WORD), result=str(result))
        end, failed, error = data.get("end"), data.get("failedStep"), data.get("error")
        record.end = cut(end, MAX_WORD) if isinstance(end, str) else None
        record.failed_step = cut(failed, MAX_NAME) if isinstance(failed, str) else None
        record.error = cut(error, MAX_ERROR) if isinstance(error, str) else None
        steps = data.get("steps")
        found = [s for s in (_step(step) for step in (steps if isinstance(steps, list) else [])) if s]
        record.steps = found[:MAX_STEPS]
        record.elapsed = _seconds(data.get("elapsed"))
        record.command = "delete" if data.get("command") == "delete" else "apply"
        timed_out = data.get("timedOut")
        if isinstance(timed_out, list):
            record.timed_out = [cut(n, MAX_NAME) for n in timed_out[:MAX_STEPS] if isinstance(n, str)]
        left = data.get("stepsLeftOut")
        left = left if isinstance(left, int) and not isinstance(left, bool) and 0 <= left < 1 << 31 else 0
        record.steps_left_out = left + len(found) - len(record.steps)
        return record


def _seconds(value: Any) -> float | None:
    """A duration as JSON gave it: a finite, non-negative number (JSON parses ``1e999`` to infinity and
    Python's reader takes ``NaN``, neither of which ``-o json`` could write back as JSON)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    try:
        seconds = float(value)
    except OverflowError:  # an integer beyond a float's range
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _step(step: Any) -> StepRecord | None:
    """``[name, seconds, result]``."""
    if not (isinstance(step, list) and len(step) == 3 and isinstance(step[0], str)):
        return None
    seconds = _seconds(step[1])
    if seconds is None or not isinstance(step[2], str):
        return None
    return StepRecord(cut(step[0], MAX_NAME), seconds, cut(step[2], MAX_WORD))


def parse_runs(text: str) -> list[RunRecord]:
    """The runs recorded in ``text`` (the annotation), oldest first; what does not parse is left out."""
    try:
        data = parse_json(text)
    except ValueError:
        return []
    if not isinstance(data, list):
        return []
    return [r for r in (RunRecord.from_data(d) for d in data[-MAX_RUNS:]) if r is not None]


def render_runs(runs: list[RunRecord]) -> str:
    return json.dumps([r.bounded() for r in runs[-MAX_RUNS:]], separators=(",", ":"))


def encode_plan(objects: list[str]) -> str:
    """``<count>:<zlib+base64 of the sorted names>``, or ``<count>:`` when they would not fit."""
    names = sorted(set(objects))
    packed = base64.b64encode(zlib.compress("\n".join(names).encode(), 9)).decode()
    return f"{len(names)}:{packed}" if len(packed) <= MAX_PLAN_BYTES else f"{len(names)}:"


def decode_plan(text: str) -> tuple[int, set[str] | None]:
    """The count and the names of the last plan's objects (None when not recorded or unreadable)."""
    count_text, _, packed = text.partition(":")
    count = whole(count_text, 10**9 - 1) or 0  # krmfn.numbers says why not int()
    if not packed or len(packed) > MAX_PLAN_BYTES:
        return count, None
    try:
        raw = zlib.decompressobj().decompress(base64.b64decode(packed, validate=True), 1 << 24)
        names = set(raw.decode().split("\n")) if raw else set()
    except (binascii.Error, zlib.error, UnicodeDecodeError, ValueError):
        return count, None
    return count, names


class Holder(Protocol):
    """Where the records live: the ApplySet parent (applyset.Parent), named by what it holds so that
    this module, which the parent imports, does not import it back."""

    runs: list[RunRecord]
    last_plan: str


class RunLog:
    """Keeps the record of the current run on the parent the engine writes: started when the lock is
    taken (the same write), ended with the run's outcome and its steps (the last write). The steps are
    kept aside until then: written as they finish, they would make each step's record differ and cost
    an inventory write per step."""

    def __init__(
        self,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._now, self._monotonic = now, monotonic
        self._started = 0.0
        self._id = os.urandom(4).hex()
        self._steps: list[StepRecord] = []
        self._went_on: list[str] = []
        """Steps done so far: put in the record when the run ends, so a step adds no inventory write."""
        self.record: RunRecord | None = None

    def start(self, parent: Holder, objects: list[str]) -> None:
        """Adds this run's record to ``parent``, once: taking the lock may read back a parent that a
        first attempt of this very write already stored (its answer lost, the retry refused)."""
        self.record = RunRecord(self._id, timestamp(self._now()))
        self._started = self._monotonic()
        earlier = [r for r in parent.runs if r.run != self._id]
        parent.runs = [*earlier, self.record][-MAX_RUNS:]
        parent.last_plan = encode_plan(objects)

    def observing(self, emit: Callable[[Event], None]) -> Callable[[Event], None]:
        def observe(event: Event) -> None:
            if isinstance(event, StepDone) and self.record is not None:
                self._steps.append(StepRecord(event.step_name, event.elapsed, event.result))
            emit(event)

        return observe

    def went_on(self, step: str) -> None:
        """The step timed out and, by its ``onTimeout: continue``, the run goes on."""
        self._went_on.append(step)

    def ends(
        self,
        body: Callable[[], None],
        *,
        failed_step: Callable[[], str | None],
        during: Callable[[], str],
        release: Callable[[], None],
    ) -> None:
        """Runs ``body``, a whole apply or delete: a runner error, or a bug (then an InternalError, exit
        70, unless KRMFN_DEBUG asks for its traceback), ends the record with the step it stopped in, and
        ``release`` (the lock) runs whatever happened. A run that succeeds is ended by ``body`` itself."""
        try:
            body()
        except RunnerError as err:
            self.end(err, failed_step())
            raise
        except Exception as err:  # a bug: the run still ends as a failure, recorded, its lock released
            internal = InternalError(err, during())
            self.end(internal, failed_step())
            if os.environ.get(DEBUG_ENV):
                raise
            raise internal from err
        finally:
            release()

    def end(self, error: RunnerError | None, failed_step: str | None) -> None:
        record = self.record
        if record is None:
            return
        record.timed_out = list(self._went_on)
        record.end = timestamp(self._now())
        record.elapsed = self._monotonic() - self._started
        record.steps = list(self._steps)
        record.failed_step = failed_step
        if error is None:
            record.result = "succeeded"
            return
        record.error = str(error)
        if isinstance(error, Interrupted):
            record.result = "interrupted"
        elif isinstance(error, StepTimeout | RunTimeout):
            record.result = "timeout"
        else:
            record.result = "failed"
