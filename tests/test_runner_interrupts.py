"""A SIGTERM or SIGINT that arrives while ``krmfn apply`` starts (imports, reading the input) is not lost:
the run stops before its first request, with the exit code and the JSON result of an interrupted run."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_kube import FakeApi

from krmfn import interrupts
from krmfn.runner.commands.cli import main


@pytest.fixture
def restored_handlers() -> Iterator[None]:
    saved = {sig: signal.getsignal(sig) for sig in interrupts.SIGNALS}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)
    interrupts.take()


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_during_start_up_stops_the_run_before_any_request(
    restored_handlers: None, tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    manifest = tmp_path / "m.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n")
    api = FakeApi("apps")

    def factory(args: argparse.Namespace) -> FakeApi:
        return api

    interrupts.record()
    os.kill(os.getpid(), sig)  # delivered now: recorded, not acted on
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        exit_code = main(["apply", "-f", str(manifest), "-n", "apps", "--applyset", "app", "-o", "json"],
                         api_factory=factory)  # type: ignore[arg-type]  # fmt: skip
    assert exit_code == code
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    assert events[-1]["type"] == "result" and events[-1]["ok"] is False
    assert not any(verb in ("apply", "create", "replace", "delete") for verb, _ in api.requests), api.requests
    assert interrupts.take() == []


def test_nothing_is_recorded_without_record(restored_handlers: None) -> None:
    assert interrupts.take() == []
