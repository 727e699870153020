"""The benchmarks run (quick mode). No timing is asserted here: figures live in BENCHMARKS.md."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest
from container_support import images
from e2e import by_identity, env, tool

from krmfn.yaml.io import load_all_fast

ROOT = Path(__file__).resolve().parent.parent


def quick(script: str) -> str:
    """The benchmark script's output in its smoke mode; it must exit 0."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), "--quick"],
        capture_output=True,
        text=True,
        env=env(),
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.mark.e2e
def test_function_benchmarks_run_and_print_tables() -> None:
    stdout = quick("functions.py")
    for title in ("Cold start", "Each function alone", "kustomize build", "Rendering examples/staged-deploy"):
        assert f"### {title}" in stdout
    assert "| `krmfn-hash-job-names` |" in stdout
    assert "| 30 | kustomize build \\| krmfn-render --fn-config (pipe) | 1 |" in stdout


@pytest.mark.e2e
@pytest.mark.container
@pytest.mark.timeout(1800)  # builds the images first when scripts/test.sh has not
def test_container_benchmarks_run_and_print_tables() -> None:
    images()  # the build, under this test's timeout rather than quick()'s
    stdout = quick("container.py")
    for title in ("### Image size", "### Cold start on a 10-item ResourceList, exec vs image"):
        assert title in stdout
    assert "| `set-image` |" in stdout and "| `podman run` of `true` |" in stdout
    assert "| `kpt fn render` |" in stdout and "| `kustomize build --enable-alpha-plugins` |" in stdout


@pytest.mark.e2e
def test_the_pipe_and_the_exec_transformer_variants_render_the_same_objects(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("bench_functions", ROOT / "bench" / "functions.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    variants = bench.kustomize_dirs(tmp_path, 40, tool("kustomize"))
    rendered = {}
    for label in (bench.PIPE, bench.RENDER_EXEC, bench.SIX_EXEC):
        directory, command = variants[label]
        proc = subprocess.run(
            command,
            cwd=directory,
            env=env(),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        rendered[label] = by_identity([o for o in load_all_fast(proc.stdout) if o])
    assert len(rendered[bench.PIPE]) == 40
    assert rendered[bench.PIPE] == rendered[bench.RENDER_EXEC] == rendered[bench.SIX_EXEC]
    jobs = [name for kind, _, name in rendered[bench.PIPE] if kind == "Job"]
    assert jobs and all(re.fullmatch(r"migrate-\d+-[0-9a-f]{8}", name) for name in jobs)


@pytest.mark.cluster
def test_runner_benchmarks_run_and_print_tables() -> None:
    stdout = quick("runner_gap.py")
    for title in ("### Step gap", "### 3-step sequence", "### ConfigMaps in one step", "### Deployments"):
        assert title in stdout
    assert stdout.count("ratio krmfn / kubectl (medians):") == 1
    assert re.search(r"^\| 20 \| [\d.]+ \| [\d.]+ \| [\d.]+ \| \d+ MB \|$", stdout, re.MULTILINE), stdout
    assert re.search(r"^\| 5 \| [\d.]+ \| [\d.]+ \| [\d.]+ \| \d+ MB \|$", stdout, re.MULTILINE), stdout


@pytest.mark.e2e
def test_fidelity_benchmark_runs_and_a_bump_changes_only_image_lines() -> None:
    stdout = quick("fidelity.py")
    for title in ("set-image on one ResourceList", "One image bump", "kpt fn render, four krmfn functions"):
        assert f"### {title}" in stdout
    bumps = [
        line.split("|")[1:-1] for line in stdout.splitlines() if "render" in line and line.startswith("| 20 ")
    ]
    assert len(bumps) == 2, stdout
    for cells in bumps:
        assert cells[4].strip() == cells[5].strip(), f"{cells[1].strip()} changed other lines: {stdout}"


@pytest.mark.cluster
def test_engines_benchmark_runs_and_prints_one_table() -> None:
    stdout = quick("engines.py")
    assert "### Staged deploy (3 steps), 6 engines, median of 1 run(s)" in stdout
    rows = [line for line in stdout.splitlines() if line.startswith("| ") and "engine" not in line]
    engines = [
        "| krmfn apply",
        "| krmfn apply, settle 0s",
        "| Flux Operator",
        "| kpt live apply",
        "| Helm upgrade",
        "| kapp deploy",
    ]
    assert [row.split(" | ")[0] for row in rows] == engines


@pytest.mark.cluster
def test_upgrades_benchmark_times_an_upgrade_through_four_engines() -> None:
    stdout = quick("upgrades.py")
    assert "### The staged deploy upgraded, 4 engines, median of 1 run(s)" in stdout
    rows = [line.split(" | ") for line in stdout.splitlines() if line.startswith("| new ")]
    engines = ["krmfn apply", "krmfn apply, settle 0s", "Helm upgrade", "kapp deploy"]
    assert [(r[0].lstrip("| "), r[1]) for r in rows] == [
        ("new image everywhere", engine) for engine in engines
    ]
    assert {r[4] for r in rows if r[1] == "Helm upgrade"} == {"1.00x"}  # each ratio is against Helm's row


def test_hostile_input_benchmarks_run_and_print_tables() -> None:
    stdout = quick("hostile.py")
    assert "### render-inputs: scanning text with many `<<`" in stdout
    assert "| `'<< '` x 33,333 | 0.10 |" in stdout
    assert "### set-image's registry headers, hostile values (ms)" in stdout
    assert "| `Link`: `<` x 2,000 |" in stdout


def test_http_stacks_benchmark_compares_the_four_stacks() -> None:
    stdout = quick("http_stacks.py")
    assert "### HTTP stacks on loopback" in stdout
    rows = {row.split(" | ")[0].lstrip("| "): row for row in stdout.splitlines() if row.startswith("| `")}
    assert sorted(rows) == ["`http.client`", "`httpx2`", "`httpx`", "`krmfn.net`"]
    assert "(TimedOut)" in rows["`krmfn.net`"]  # the only one that bounds a whole request


def test_cel_library_benchmark_runs_and_prints_its_table() -> None:
    stdout = quick("cel_libraries.py")
    assert "### CEL libraries on Flux's health check features" in stdout
    # The chosen library (docs/runner.md#health-checks-in-cel): all of Flux's cases but the sets extension.
    assert "| cel-expr-python | 12/13 (not: sets extension) | 3/3 |" in stdout
