"""The suite's children start with SIGINT at its default however the suite was started (tests/conftest.py):
a test that interrupts a tool mid-wait must not depend on whether ``./scripts/test.sh`` ran at a terminal
or in the background of a script, which ignores SIGINT."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from dispositions import IGNORING, signals
from e2e import env

HERE = Path(__file__)


def test_a_child_of_the_suite_starts_with_sigint_at_its_default() -> None:
    child = subprocess.run(["cat", "/proc/self/status"], capture_output=True, text=True, check=True)
    assert signal.SIGINT not in signals(child.stdout, "SigIgn"), child.stdout


def test_a_suite_started_with_sigint_ignored_still_starts_its_children_with_the_default() -> None:
    test = f"{HERE}::test_a_child_of_the_suite_starts_with_sigint_at_its_default"
    # the check itself: the same child started straight from an ignoring parent has it ignored
    ignoring = subprocess.run(
        [*IGNORING, "cat", "/proc/self/status"], capture_output=True, text=True, check=True
    )
    assert signal.SIGINT in signals(ignoring.stdout, "SigIgn")
    suite = subprocess.run(
        [*IGNORING, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test],
        capture_output=True, text=True, env=env(), cwd=HERE.parent.parent, timeout=300, check=False,
    )  # fmt: skip
    assert suite.returncode == 0 and "1 passed" in suite.stdout, suite.stdout + suite.stderr
