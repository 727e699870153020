"""The benchmarks run (quick mode). No timing is asserted here: figures live in BENCHMARKS.md."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from e2e import env

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.e2e
def test_function_benchmarks_run_and_print_tables() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "functions.py"), "--quick"],
        capture_output=True,
        text=True,
        env=env(),
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for title in ("Cold start", "Each function alone", "kustomize build", "Rendering examples/staged-deploy"):
        assert f"### {title}" in proc.stdout
    assert "| `krmfn-hash-job-names` |" in proc.stdout
    assert "| 30 | kustomize build \\| krmfn-render --fn-config (pipe) | 1 |" in proc.stdout


@pytest.mark.cluster
def test_runner_benchmarks_run_and_print_tables() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "runner_gap.py"), "--quick"],
        capture_output=True,
        text=True,
        env=env(),
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for title in ("### Step gap", "### 3-step sequence", "ConfigMaps in one step"):
        assert title in proc.stdout
    assert proc.stdout.count("ratio krmfn / kubectl (medians):") == 2
