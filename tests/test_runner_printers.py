"""Events and the three printers: JSON lines, plain lines, and the live terminal view."""

from __future__ import annotations

import io
import json

import pytest

from krmfn.runner.engine import Result
from krmfn.runner.errors import StepFailed
from krmfn.runner.events import (
    Apply,
    Error,
    Event,
    Prune,
    Status,
    StepDone,
    StepStart,
    Wait,
    from_dict,
    to_dict,
)
from krmfn.runner.plan import build_plan
from krmfn.runner.printers import JsonPrinter, PlainPrinter, TtyPrinter, format_plan, make_printer, plan_data

EVENTS: list[Event] = [
    StepStart(0, "pre-deploy", 1, 300.0, True),
    Apply(0, "Job.batch apps/migrate", "created"),
    Wait(0, ["Job.batch apps/migrate"], 300.0),
    Status(0, "Job.batch apps/migrate", "current", "complete (1 succeeded)", 1.25),
    StepDone(0, "pre-deploy", "healthy", 1.3),
    Prune("ConfigMap apps/old", "deleted"),
    Error("step deploy: Deployment.apps apps/web failed: stalled", 1, "Deployment.apps apps/web"),
]


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: e.type)
def test_every_event_round_trips_through_its_json_form(event: Event) -> None:
    data = to_dict(event)
    assert data["type"] == event.type
    assert from_dict(json.loads(json.dumps(data))) == event


def test_unknown_event_type_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown event type 'bogus'"):
        from_dict({"type": "bogus"})


def test_json_printer_writes_one_event_per_line_and_a_result() -> None:
    out = io.StringIO()
    printer = JsonPrinter(out)
    for event in EVENTS:
        printer(event)
    printer.summary(
        Result(ok=True, steps_done=1, applied=["Job.batch apps/migrate"], pruned=["ConfigMap apps/old"])
    )
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["type"] for line in lines] == [
        "step-start", "apply", "wait", "status", "step-done", "prune", "error", "result",
    ]  # fmt: skip
    assert lines[1] == {"type": "apply", "step": 0, "object": "Job.batch apps/migrate", "action": "created",
                        "detail": ""}  # fmt: skip
    assert lines[-1]["ok"] is True
    assert lines[-1]["pruned"] == ["ConfigMap apps/old"]


def test_plain_printer_lines_and_failure_summary_name_the_object() -> None:
    out = io.StringIO()
    printer = PlainPrinter(out)
    for event in EVENTS:
        printer(event)
    error = StepFailed("deploy", "Deployment.apps apps/web", "ProgressDeadlineExceeded")
    printer.summary(Result(ok=False, error=error, failed_step="deploy"))
    assert out.getvalue().splitlines() == [
        "step 0 pre-deploy: 1 object(s), timeout 5m0s, waits",
        "  Job.batch apps/migrate: created",
        "  waiting for 1 object(s), timeout 5m0s",
        "  Job.batch apps/migrate: current: complete (1 succeeded) [1.2s]",
        "step 0 pre-deploy: healthy in 1.3s",
        "prune ConfigMap apps/old: deleted",
        "failed: step deploy: Deployment.apps apps/web failed: ProgressDeadlineExceeded; "
        "later steps not applied, nothing pruned",
    ]


def test_failure_before_any_step_gets_the_step_prefix_only_when_known() -> None:
    out = io.StringIO()
    PlainPrinter(out).summary(
        Result(ok=False, error=StepFailed("x", "ConfigMap a/b", "boom"), failed_step=None)
    )
    assert out.getvalue().startswith("failed: step x: ConfigMap a/b failed: boom;")


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_tty_printer_redraws_the_running_step_in_place() -> None:
    out = io.StringIO()
    clock = FakeClock()
    printer = TtyPrinter(out, clock=clock, refresh=3600)
    try:
        printer(StepStart(1, "deploy", 2, 600.0, True))
        printer(Apply(1, "Deployment.apps apps/web", "created"))
        clock.now += 2.5
        printer(
            Status(1, "Deployment.apps apps/web", "in-progress", "1 of 2 updated replicas available", 2.5)
        )
        first_block = out.getvalue()
        printer(StepDone(1, "deploy", "healthy", 3.0))
    finally:
        printer.close()
    assert "> step 1 deploy   0.0s / 10m0s\n" in first_block
    assert (
        "> step 1 deploy   2.5s / 10m0s\n  .. Deployment.apps apps/web  in-progress 1 of 2 updated"
        in first_block
    )
    # Each redraw moves the cursor back over the lines drawn before and clears them.
    assert "\x1b[2F\x1b[J" in first_block
    tail = out.getvalue()[len(first_block) :]
    assert tail.startswith("\x1b[2F\x1b[J")
    assert tail.endswith(
        "step 1 deploy: healthy in 3.0s\n"
        "  Deployment.apps apps/web: in-progress: 1 of 2 updated replicas available\n"
    )


def test_make_printer_picks_plain_lines_when_not_a_terminal() -> None:
    assert isinstance(make_printer("text", io.StringIO()), PlainPrinter)
    assert isinstance(make_printer("json", io.StringIO()), JsonPrinter)


def test_plan_is_printed_step_by_step_and_as_json() -> None:
    docs = [
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "migrate", "annotations": {
            "krmfn.dev/step": "pre-deploy", "krmfn.dev/step-index": "0", "krmfn.dev/step-timeout": "5m"}}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "annotations": {
            "krmfn.dev/step": "deploy", "krmfn.dev/step-index": "1"}}},
    ]  # fmt: skip
    plan = build_plan(docs, namespace="apps", default_timeout=600)
    assert format_plan(plan) == (
        "step 0 pre-deploy (timeout 5m0s, waits for health)\n"
        "  1. Job.batch apps/migrate\n"
        "step 1 deploy (timeout 10m0s, does not wait)\n"
        "  1. Deployment.apps apps/web\n"
    )
    assert plan_data(plan)["steps"][1] == {
        "index": 1, "name": "deploy", "timeout": 600, "wait": False, "objects": ["Deployment.apps apps/web"],
    }  # fmt: skip
    assert format_plan(build_plan([], namespace="n", default_timeout=1)) == "nothing to apply\n"
