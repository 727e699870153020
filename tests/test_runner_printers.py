"""Events and the three printers: JSON lines, plain lines, and the live terminal view."""

from __future__ import annotations

import io
import json

import pytest

from krmfn.runner.commands.printers import (
    JsonPrinter,
    PlainPrinter,
    TtyPrinter,
    format_plan,
    make_printer,
    plan_data,
)
from krmfn.runner.engine.engine import Result
from krmfn.runner.errors import StepFailed
from krmfn.runner.events import (
    Apply,
    Error,
    Event,
    Inventory,
    Prune,
    Status,
    StepDone,
    StepStart,
    Wait,
    from_dict,
    to_dict,
)
from krmfn.runner.plan import build_plan

EVENTS: list[Event] = [
    Inventory("shop", "apps", "krmfn.dev/app", True),
    StepStart(0, "pre-deploy", 1, 300.0, True),
    Apply(0, "pre-deploy", "Job.batch apps/migrate", "created"),
    Wait(0, "pre-deploy", ["Job.batch apps/migrate"], 300.0),
    Status(0, "pre-deploy", "Job.batch apps/migrate", "current", "complete (1 succeeded)", 1.25),
    StepDone(0, "pre-deploy", "healthy", 1.3),
    Prune("ConfigMap apps/old", "deleted"),
    Error("step deploy: Deployment.apps apps/web failed: stalled", 1, "deploy", "Deployment.apps apps/web"),
]
STEP_EVENTS = (StepStart, Apply, Wait, Status, StepDone, Error)


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: e.type)
def test_every_event_round_trips_through_its_json_form(event: Event) -> None:
    data = to_dict(event)
    assert data["type"] == event.type
    assert from_dict(json.loads(json.dumps(data))) == event


def test_every_event_about_a_step_names_it_one_way() -> None:
    for event in EVENTS:
        data = to_dict(event)
        if isinstance(event, STEP_EVENTS):
            assert (data["step"], data["stepName"]) in {(0, "pre-deploy"), (1, "deploy")}, data
        assert "name" not in data or isinstance(event, Inventory)


def test_unknown_event_type_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown event type 'bogus'"):
        from_dict({"type": "bogus"})


def test_json_printer_writes_one_event_per_line_and_a_result() -> None:
    out = io.StringIO()
    printer = JsonPrinter(out)
    for event in EVENTS:
        printer(event)
    printer.summary(
        Result(ok=True, steps_done=1, applied=["Job.batch apps/migrate"], unchanged=["ConfigMap apps/c"],
               pruned=["ConfigMap apps/old"], elapsed=2.5)
    )  # fmt: skip
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["type"] for line in lines] == [
        "inventory", "step-start", "apply", "wait", "status", "step-done", "prune", "error", "result",
    ]  # fmt: skip
    assert lines[0] == {"type": "inventory", "name": "shop", "namespace": "apps", "source": "krmfn.dev/app",
                        "prune": True}  # fmt: skip
    assert lines[2] == {"type": "apply", "step": 0, "stepName": "pre-deploy",
                        "object": "Job.batch apps/migrate", "action": "created", "detail": "",
                        "dryRun": False}  # fmt: skip
    assert lines[-1] == {"type": "result", "ok": True, "failedStep": None, "failedStepName": None,
                         "error": None, "steps": 1, "applied": ["Job.batch apps/migrate"],
                         "unchanged": ["ConfigMap apps/c"], "pruned": ["ConfigMap apps/old"],
                         "elapsed": 2.5}  # fmt: skip


def test_json_result_of_a_failed_run_carries_the_failed_steps_index_and_name() -> None:
    out = io.StringIO()
    error = StepFailed("deploy", "Deployment.apps apps/web", "ProgressDeadlineExceeded")
    JsonPrinter(out).summary(Result(ok=False, error=error, failed_step="deploy", failed_step_index=1))
    result = json.loads(out.getvalue())
    assert (result["failedStep"], result["failedStepName"]) == (1, "deploy")


def test_plain_printer_lines_and_failure_summary_name_the_object() -> None:
    out = io.StringIO()
    printer = PlainPrinter(out)
    for event in EVENTS:
        printer(event)
    error = StepFailed("deploy", "Deployment.apps apps/web", "ProgressDeadlineExceeded")
    printer.summary(Result(ok=False, error=error, failed_step="deploy", failed_step_index=1, elapsed=4.25))
    assert out.getvalue().splitlines() == [
        "inventory: Secret apps/shop (name from krmfn.dev/app); this run prunes what is no longer rendered",
        "step 0 pre-deploy: 1 object(s), timeout 5m0s, waits",
        "  Job.batch apps/migrate: created",
        "  waiting for 1 object(s), timeout 5m0s",
        "  Job.batch apps/migrate: current: complete (1 succeeded) [1.2s]",
        "step 0 pre-deploy: healthy in 1.3s",
        "prune ConfigMap apps/old: deleted",
        "failed: step deploy: Deployment.apps apps/web failed: ProgressDeadlineExceeded; "
        "later steps not applied, nothing pruned in 4.2s",
    ]


@pytest.mark.parametrize(
    ("dry_run", "result", "summary"),
    [
        (False, Result(ok=True, steps_done=2, applied=["a", "b"], unchanged=["c"], pruned=["d"],
                       elapsed=12.34),
         "done: 2 step(s), 2 object(s) changed, 1 unchanged, pruned 1 in 12.3s"),
        (True, Result(ok=True, steps_done=2, applied=["a"], unchanged=["b", "c"], elapsed=0.5),
         "done (server dry run): 2 step(s), 1 object(s) would change, 2 unchanged in 0.5s"),
    ],
)  # fmt: skip
def test_summary_counts_changed_and_unchanged_objects_and_gives_the_total_time(
    dry_run: bool, result: Result, summary: str
) -> None:
    out = io.StringIO()
    PlainPrinter(out, dry_run).summary(result)
    assert out.getvalue() == summary + "\n"


def test_server_dry_run_says_what_would_happen_to_each_object() -> None:
    out = io.StringIO()
    printer = PlainPrinter(out, dry_run=True)
    for action in ("created", "configured", "unchanged", "recreated", "skipped"):
        printer(Apply(0, "deploy", f"ConfigMap apps/{action}", action, dry_run=True))  # type: ignore[arg-type]
    printer(Prune("ConfigMap apps/old", "deleted", dry_run=True))
    assert out.getvalue().splitlines() == [
        "  ConfigMap apps/created: would create",
        "  ConfigMap apps/configured: would configure",
        "  ConfigMap apps/unchanged: unchanged",
        "  ConfigMap apps/recreated: would recreate",
        "  ConfigMap apps/skipped: skipped",
        "prune ConfigMap apps/old: would delete",
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
        printer(Apply(1, "deploy", "Deployment.apps apps/web", "created"))
        clock.now += 2.5
        printer(
            Status(
                1,
                "deploy",
                "Deployment.apps apps/web",
                "in-progress",
                "1 of 2 updated replicas available",
                2.5,
            )
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


def test_live_view_of_a_new_job_never_shows_zero_counts_before_complete() -> None:
    from krmfn.runner.health.status import health

    out = io.StringIO()
    printer = TtyPrinter(out, clock=FakeClock(), refresh=3600)
    new_job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "m"}, "spec": {}}
    running = {**new_job, "status": {"active": 1}}
    done = {**new_job, "status": {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}}
    try:
        printer(StepStart(0, "pre-deploy", 1, 300.0, True))
        printer(Apply(0, "pre-deploy", "Job.batch apps/m", "created"))
        for obj in (new_job, running, done):
            state = health(obj)
            printer(Status(0, "pre-deploy", "Job.batch apps/m", state.state, state.message, 0.1))
        printer(StepDone(0, "pre-deploy", "healthy", 1.0))
    finally:
        printer.close()
    text = out.getvalue()
    assert "0 active" not in text and "0 succeeded" not in text and "0 failed" not in text
    assert "waiting for its first pod" in text and "running: 1 active" in text
    assert text.endswith("  Job.batch apps/m: current: complete (1 succeeded)\n")


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
