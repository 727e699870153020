"""The campaign's pure parts, without a cluster: the renders never bring a Job spec back (else a legitimate
re-run would count as a violation), and the exit-code invariant."""

from __future__ import annotations

import json
import random

import pytest

from .campaign import FAULTS, SURVIVABLE
from .invariants import exit_problems
from .renders import Renders


@pytest.mark.parametrize("seed", range(20))
def test_a_job_spec_never_comes_back_once_changed(seed: int) -> None:
    renders = Renders(random.Random(seed))
    seen: dict[str, list[str]] = {}  # Job name -> its distinct specs in order
    for number in range(300):
        render = renders.next(repeat=number % 5 == 0, clean=number == 299)
        for doc in render.docs:
            if doc["kind"] == "Job":
                spec = json.dumps(doc["spec"], sort_keys=True)
                specs = seen.setdefault(doc["metadata"]["name"], [])
                if not specs or specs[-1] != spec:
                    assert spec not in specs, (
                        f"seed {seed}, render {number}: {doc['metadata']['name']} came back"
                    )
                    specs.append(spec)
    hashed = [name for name in seen if name.startswith(("migrate-", "flaky-"))]
    assert len(hashed) > 50  # the renders do change
    assert len(seen["warmup"]) > 10


def test_every_fault_is_judged() -> None:
    assert set(FAULTS) > SURVIVABLE
    assert len(FAULTS) == 15


def result(ok: bool, error: str | None = None) -> list[dict[str, object]]:
    return [{"type": "apply"}, {"type": "result", "ok": ok, "error": error}]


@pytest.mark.parametrize(
    ("code", "events", "stderr", "problem"),
    [
        (0, result(True), "", ""),
        (1, result(False, "x"), "", ""),
        (143, result(False, "interrupted by SIGTERM during ..."), "", ""),
        (-9, [], "", ""),
        (0, result(False, "x"), "", "exit 0 but the result event says ok=False"),
        (1, result(True), "", "exit 1 but the result event says ok=True"),
        (143, result(False, "x"), "", "exit 143 but the error is 'x'"),
        (2, result(False, "x"), "bad input", "unexpected exit code 2: bad input"),
        (1, [{"type": "apply"}], "", "exit 1 but the last event is"),
        (1, result(False, "x"), "Traceback (most recent call last):\n  ...\nKeyError: 'x'", "traceback"),
    ],
)
def test_exit_code_must_agree_with_the_last_event(
    code: int, events: list[dict[str, object]], stderr: str, problem: str
) -> None:
    found = exit_problems(code, events, stderr)
    if problem:
        assert len(found) == 1 and found[0].startswith(problem), found
    else:
        assert found == []
