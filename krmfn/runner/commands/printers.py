"""Turning events into output: a live view on a terminal, plain lines otherwise, or JSON lines.

Printers only format; the engine never writes to the terminal itself. ``make_printer`` picks one. Every
line of text output goes through ``terminal.write_line``: events carry cluster text (conditions, pod
termination messages and logs, API errors) and manifest text (names, step names).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TextIO

from krmfn.duration import SECOND, format_duration
from krmfn.runner.errors import Interrupted
from krmfn.runner.events import (
    Apply,
    Delete,
    Error,
    Event,
    Inventory,
    Lock,
    Log,
    Prune,
    Status,
    StepDone,
    StepStart,
    Wait,
    to_dict,
)
from krmfn.runner.plan import Plan, Step
from krmfn.terminal import clear_lines, fit, lines_text, safe_line, write_line

if TYPE_CHECKING:
    from krmfn.runner.engine.engine import Result


def seconds(value: float) -> str:
    return format_duration(round(value * SECOND))


def elapsed(value: float) -> str:
    return f"{value:.1f}s"


class Printer(Protocol):
    def __call__(self, event: Event) -> None: ...

    def summary(self, result: Result) -> None: ...

    def close(self) -> None: ...


# What a server dry run says instead of an action that would change something.
_WOULD = {"created": "would create", "configured": "would configure", "recreated": "would recreate",
          "deleted": "would delete"}  # fmt: skip


def action_text(action: str, dry_run: bool) -> str:
    return _WOULD.get(action, action) if dry_run else action


def describe(event: Event) -> str:
    """One plain line for ``event``."""
    match event:
        case Inventory():
            prune = "prunes what is no longer rendered" if event.prune else "does not prune (--no-prune)"
            return (
                f"inventory: Secret {event.namespace}/{event.name} (name from {event.source}); "
                f"this run {prune}"
            )
        case StepStart():
            waits = "waits" if event.wait else "no wait"
            timeout = seconds(event.timeout)
            return (
                f"step {event.step} {event.step_name}: {event.objects} object(s), timeout {timeout}, {waits}"
            )
        case Apply():
            action = action_text(event.action, event.dry_run)
            return f"  {event.object}: {action}" + (f" ({event.detail})" if event.detail else "")
        case Status():
            return f"  {event.object}: {event.state}: {event.message} [{elapsed(event.elapsed)}]"
        case Wait():
            return f"  waiting for {len(event.objects)} object(s), timeout {seconds(event.timeout)}"
        case Log():
            return f"  | {event.object} {event.pod}/{event.container}: {event.line}"
        case StepDone():
            return f"step {event.step} {event.step_name}: {event.result} in {elapsed(event.elapsed)}"
        case Prune():
            action = action_text(event.action, event.dry_run)
            return f"prune {event.object}: {action}" + (f" ({event.detail})" if event.detail else "")
        case Delete():
            action = "would delete" if event.dry_run and event.action == "deleted" else event.action
            detail = f" ({event.detail})" if event.detail else ""
            if event.dry_run and event.step is not None:  # no step-start lines: each names its step
                return f"step {event.step} {event.step_name}: {event.object}: {action}{detail}"
            if event.step is None:  # the inventory, and what is kept
                return f"delete {event.object}: {action}{detail}"
            return f"  {event.object}: {action}{detail}"
        case Lock():
            detail = f" ({event.detail})" if event.detail else ""
            return f"inventory lock {event.action}: {event.holder}{detail}"
        case Error():
            return f"error: {event.message}"
    raise TypeError(f"not an event: {event!r}")


def summary_line(result: Result, dry_run: bool = False) -> str:
    took = f" in {elapsed(result.elapsed)}"
    if result.ok:
        verb = "would change" if dry_run else "changed"
        pruned = f", {'would prune' if dry_run else 'pruned'} {len(result.pruned)}" if result.pruned else ""
        went_on = "".join(
            f"; step {step} timed out and the run went on (onTimeout: continue): {error}"
            for step, error in result.timed_out
        )
        on_delete = (
            f"; on-delete step(s) {', '.join(result.on_delete)} not applied (krmfn delete -f/-k runs them "
            "before the teardown)"
            if result.on_delete
            else ""
        )
        return (
            f"done{' (server dry run)' if dry_run else ''}: {result.steps_done} step(s), "
            f"{len(result.applied)} object(s) {verb}, {len(result.unchanged)} unchanged{pruned}{took}"
            + went_on
            + on_delete
        )
    message = str(result.error)
    if isinstance(result.error, Interrupted):
        return message  # it ends "run again to continue": the time would read as part of that
    if result.failed_step and not message.startswith("step "):
        message = f"step {result.failed_step_index} {result.failed_step}: {message}"
    if result.failed_step is None and result.steps_done == 0:
        return f"failed: {message}; nothing applied{took}"  # discovery, the inventory or its lock
    return f"failed: {message}; later steps not applied, nothing pruned{took}"


class PlainPrinter:
    def __init__(self, out: TextIO, dry_run: bool = False) -> None:
        self.out = out
        self.dry_run = dry_run

    def __call__(self, event: Event) -> None:
        if isinstance(event, Error):
            return  # the summary line carries it, once
        write_line(self.out, describe(event))
        self.out.flush()

    def summary(self, result: Result) -> None:
        write_line(self.out, summary_line(result, self.dry_run))
        self.out.flush()

    def close(self) -> None:
        pass


class JsonPrinter:
    """``-o json``: one event object per line; the summary is a final ``{"type": "result", ...}``."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def __call__(self, event: Event) -> None:
        self.out.write(json.dumps(to_dict(event), separators=(",", ":")) + "\n")
        self.out.flush()

    def summary(self, result: Result) -> None:
        data = {
            "type": "result",
            "ok": result.ok,
            "failedStep": result.failed_step_index,
            "failedStepName": result.failed_step,
            "error": str(result.error) if result.error else None,
            "steps": result.steps_done,
            "applied": result.applied,
            "unchanged": result.unchanged,
            "pruned": result.pruned,
            "elapsed": round(result.elapsed, 3),
        }
        if result.timed_out:  # only then: the steps that timed out and the run went on past
            data["timedOut"] = [{"stepName": step, "error": error} for step, error in result.timed_out]
        if result.on_delete:  # only then: the on-delete steps apply left for krmfn delete
            data["onDeleteNotApplied"] = result.on_delete
        self.out.write(json.dumps(data, separators=(",", ":")) + "\n")
        self.out.flush()

    def close(self) -> None:
        pass


_MARK = {"current": "ok", "failed": "!!", "in-progress": "..", "not-found": "??"}


def terminal_width(out: TextIO) -> int:
    """Columns of the terminal ``out`` writes to (80 when it cannot tell)."""
    try:
        return os.get_terminal_size(out.fileno()).columns or 80
    except (AttributeError, OSError, ValueError):  # not a real file, or not a terminal
        return 80


class TtyPrinter:
    """A live block for the running step (one row per object: state, message, elapsed vs timeout),
    redrawn in place; finished steps scroll up as plain lines. A row of the block is cut to the
    terminal's width: a long message (a Job's log lines, a condition) would wrap, and the redraw, which
    moves up one line per row, would leave the wrapped part behind on every tick."""

    def __init__(
        self,
        out: TextIO,
        clock: Callable[[], float] = time.monotonic,
        refresh: float = 0.25,
        dry_run: bool = False,
        width: Callable[[], int] | None = None,
    ) -> None:
        self.out = out
        self.clock = clock
        self.dry_run = dry_run
        self.width = width or (lambda: terminal_width(out))
        self._lock = threading.Lock()
        self._drawn = 0
        self._step: StepStart | None = None
        self._started = 0.0
        self._rows: dict[str, tuple[str, str]] = {}
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, args=(refresh,), daemon=True)
        self._ticker.start()

    def __call__(self, event: Event) -> None:
        with self._lock:
            self._handle(event)
            self._draw()

    def _handle(self, event: Event) -> None:
        if isinstance(event, StepStart):
            self._step, self._started, self._rows = event, self.clock(), {}
        elif isinstance(event, Apply):
            self._rows[event.object] = (action_text(event.action, event.dry_run), event.detail)
        elif isinstance(event, Delete) and self._step is not None:
            self._rows[event.object] = (event.action, event.detail)
        elif isinstance(event, Status):
            self._rows[event.object] = (event.state, event.message)
        elif isinstance(event, StepDone):
            self._clear()
            write_line(self.out, describe(event))
            for obj, (state, message) in self._rows.items():
                write_line(self.out, f"  {obj}: {state}" + (f": {message}" if message else ""))
            self._step, self._rows = None, {}
        elif isinstance(event, Prune | Lock | Inventory | Delete | Log):
            self._clear()  # a log line scrolls up above the live block, as a finished step does
            write_line(self.out, describe(event))

    def _block(self) -> list[str]:
        if self._step is None:
            return []
        step = self._step
        progress = f"{elapsed(self.clock() - self._started)} / {seconds(step.timeout)}"
        header = safe_line(f"> step {step.step} {step.step_name}   {progress}")
        names = {obj: safe_line(obj) for obj in self._rows}
        width = max((len(name) for name in names.values()), default=0)
        rows = [
            f"  {_MARK.get(state, '->')} {names[obj].ljust(width)}  {state:<11} {safe_line(message)}"
            for obj, (state, message) in self._rows.items()
        ]
        columns = max(self.width() - 1, 1)  # the last column: some terminals wrap a full line at once
        return [fit(line, columns) for line in (header, *rows)]

    def _clear(self) -> None:
        if self._drawn:
            clear_lines(self.out, self._drawn)
            self._drawn = 0

    def _draw(self) -> None:
        self._clear()
        lines = self._block()
        for line in lines:
            write_line(self.out, line)  # escaped and fitted already: the writer leaves it as it is
        self._drawn = len(lines)
        self.out.flush()

    def _tick(self, refresh: float) -> None:
        while not self._stop.wait(refresh):
            with self._lock:
                if self._step is not None:
                    self._draw()

    def summary(self, result: Result) -> None:
        with self._lock:
            self._clear()
            write_line(self.out, summary_line(result, self.dry_run))
            self.out.flush()

    def close(self) -> None:
        self._stop.set()


def make_printer(output: str, out: TextIO, dry_run: bool = False) -> Printer:
    if output == "json":
        return JsonPrinter(out)
    if out.isatty():
        return TtyPrinter(out, dry_run=dry_run)
    return PlainPrinter(out, dry_run)


def plan_data(plan: Plan) -> dict[str, Any]:
    def data(step: Step) -> dict[str, Any]:
        return {"index": step.index, "name": step.name, "timeout": step.timeout, "wait": step.wait,
                "objects": [str(item.key) for item in step.items]}  # fmt: skip

    return {
        "type": "plan",
        "steps": [data(step) for step in plan.steps],
        "onFailure": [data(step) for step in plan.on_failure],
        "onDelete": [data(step) for step in plan.on_delete],
    }


def format_plan(plan: Plan) -> str:
    return lines_text(plan_lines(plan))


def plan_lines(plan: Plan) -> list[str]:
    """The plan as lines of text, unescaped (the writer escapes them)."""
    lines = []
    for step in plan.steps:
        wait = "waits for health" if step.wait else "does not wait"
        went_on = ", on timeout: continue" if step.on_timeout == "continue" else ""
        lines.append(f"step {step.index} {step.name} (timeout {step.timeout_text}, {wait}{went_on})")
        lines.extend(f"  {n}. {item.key}" for n, item in enumerate(step.items, 1))
    for step in plan.on_failure:
        lines.append(
            f"on failure: step {step.index} {step.name} (timeout {step.timeout_text}, waits for health)"
        )
        lines.extend(f"  {n}. {item.key}" for n, item in enumerate(step.items, 1))
    for step in plan.on_delete:
        lines.append(
            f"on delete: step {step.index} {step.name} (timeout {step.timeout_text}, waits for health; "
            "not applied by krmfn apply: krmfn delete -f/-k runs it before the teardown)"
        )
        lines.extend(f"  {n}. {item.key}" for n, item in enumerate(step.items, 1))
    if not lines:
        lines.append("nothing to apply")
    return lines
