"""Function-side benchmarks; prints Markdown tables (medians of repeated runs, ratios from the same run).

    python bench/functions.py            # full: 300, 3,000 and 10,000 resources
    python bench/functions.py --quick    # smoke: tiny sizes, one repeat (the test suite runs this)

Sections: cold start vs ``python -c pass``; each function alone on a ResourceList (fast and fidelity
paths: items/s, peak RSS); kustomize build with its built-in ``images:`` vs the combined function piped
after ``kustomize build``, as an exec transformer, a no-op exec transformer and the six functions as
separate exec transformers; ``krmfn render`` vs ``kpt fn render`` on the staged-deploy example.
"""

from __future__ import annotations

import argparse
import functools
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
if TYPE_CHECKING:
    # mypy checks this script as bench.functions (a plain `functions` would clash with the functions
    # package), so it finds gen.py as bench.gen; at run time bench/ is on sys.path and it is `gen`.
    from bench import gen
else:
    import gen

from krmfn.yaml.io import dump_fast

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
API = "fn.krmfn.dev/v1alpha1"
CONFIGS: dict[str, dict[str, Any]] = {
    "render-inputs": {"kind": "RenderInputs", "inputs": {"tag": "1.2.3"}},
    "set-image": {
        "kind": "SetImage",
        "images": [
            {"name": "nginx", "newTag": "1.27.0"},
            {"name": "ghcr.io/acme/app", "newName": "ghcr.io/acme/app2"},
        ],
    },
    "set-config-checksum": {"kind": "SetConfigChecksum"},
    "hash-job-names": {"kind": "HashJobNames"},
    "set-steps": {
        "kind": "SetSteps",
        "defaultStep": "deploy",
        "steps": [
            # The Jobs read their ConfigMaps, so both go first (set-steps checks that order).
            {"name": "migrate", "timeout": "5m", "selectors": [{"kind": "Job"}, {"kind": "ConfigMap"}]},
            {"name": "deploy", "timeout": "10m"},
        ],
    },
    "validate-jobs": {"kind": "ValidateJobs"},
}
RENDER_KEYS = {
    "render-inputs": "renderInputs",
    "set-image": "setImage",
    "set-config-checksum": "setConfigChecksum",
    "hash-job-names": "hashJobNames",
    "set-steps": "setSteps",
    "validate-jobs": "validateJobs",
}


def function_config(name: str) -> dict[str, Any]:
    return {"apiVersion": API, "metadata": {"name": "bench"}, **CONFIGS[name]}


def render_config() -> dict[str, Any]:
    body = {RENDER_KEYS[n]: {k: v for k, v in c.items() if k != "kind"} for n, c in CONFIGS.items()}
    return {"apiVersion": API, "kind": "Render", "metadata": {"name": "bench"}, **body}


GNU_TIME = "/usr/bin/time"


def timed(
    args: list[str], stdin: bytes | None = None, cwd: Path | None = None, env: dict[str, str] | None = None
) -> tuple[float, int, int]:
    """Wall seconds, peak RSS in KiB and exit code of one child process.

    The peak RSS comes from GNU time when it is installed: a child forked straight from this process
    starts its high-water mark at this process's size (the generated lists), which would inflate it.
    """
    measure = os.path.exists(GNU_TIME)
    if measure:
        args = [GNU_TIME, "-f", "%M", *args]
    start = time.perf_counter()
    proc = subprocess.Popen(
        args, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=cwd, env=env
    )
    assert proc.stdin is not None and proc.stderr is not None
    if stdin:
        proc.stdin.write(stdin)
    proc.stdin.close()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(args)} failed ({proc.returncode}): {err.decode()[-2000:]}")
    lines = err.decode().strip().splitlines()
    rss = int(lines[-1]) if measure and lines and lines[-1].isdigit() else usage.ru_maxrss
    return elapsed, rss, proc.returncode


def median_of(repeats: int, run: Callable[[], tuple[float, int, int]]) -> tuple[float, int]:
    runs = [run() for _ in range(repeats)]
    return statistics.median(r[0] for r in runs), max(r[1] for r in runs)


def table(title: str, header: list[str], rows: list[list[str]]) -> None:
    print(f"\n### {title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join(" --- " for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    sys.stdout.flush()


def cold_start(repeats: int) -> None:
    """bench/coldstart.py's table (the one cold-start measurement)."""
    if TYPE_CHECKING:
        from bench import coldstart
    else:
        import coldstart

    coldstart.cold_start(repeats)


def throughput(sizes: list[int], repeats: int) -> None:
    rows = []
    for name in CONFIGS:
        for size in sizes:
            for mode in ("fast", "fidelity"):
                data = gen.resource_list(size, function_config(name)).encode()
                seconds, rss = median_of(
                    repeats, functools.partial(timed, [str(BIN / f"krmfn-{name}"), "--yaml", mode], data)
                )
                rows.append(
                    [name, f"{size:,}", mode, f"{seconds:.3f}", f"{size / seconds:,.0f}", f"{rss / 1024:.0f}"]
                )
    table(
        "Each function alone (median of runs, end to end incl. start-up)",
        ["function", "items", "path", "seconds", "items/s", "peak RSS MB"],
        rows,
    )


BASELINE = "kustomize `images:` only"
PIPE = "kustomize build \\| krmfn-render --fn-config (pipe)"
RENDER_EXEC = "krmfn-render as an exec transformer"
NOOP_EXEC = "no-op exec transformer (`cat`), for reference"
SIX_EXEC = "six separate exec transformers"
# Each exec transformer costs kustomize about as much as the no-op one (quadratic bookkeeping per
# transformer), so at 10,000 six of them would take most of an hour: that row stops at 3,000.
SIX_EXEC_MAX = 3_000


def kustomize_dirs(workdir: Path, size: int, binary: str) -> dict[str, tuple[Path, list[str]]]:
    """Per variant: the kustomization directory and the command to time (run with ``cwd`` there)."""
    gen.write_tree(workdir / "base", size)
    variants: dict[str, tuple[Path, list[str]]] = {}
    build = [binary, "build", "--enable-alpha-plugins", "--enable-exec", "."]

    def variant(
        label: str, extra: dict[str, Any], files: dict[str, dict[str, Any]], command: list[str]
    ) -> None:
        target = workdir / f"v{len(variants)}"
        target.mkdir()
        shutil.copy(workdir / "base" / "all.yaml", target / "all.yaml")
        for file_name, body in files.items():
            (target / file_name).write_text(dump_fast(body))
        (target / "kustomization.yaml").write_text(dump_fast({"resources": ["all.yaml"], **extra}))
        variants[label] = (target, command)

    def exec_config(body: dict[str, Any], script: str) -> dict[str, Any]:
        body["metadata"]["annotations"] = {
            "config.kubernetes.io/function": dump_fast({"exec": {"path": script}})
        }
        return body

    images = CONFIGS["set-image"]["images"]
    variant(BASELINE, {"images": images}, {}, [binary, "build", "."])
    variant(
        PIPE,
        {},
        {"render.yaml": render_config()},
        [
            "bash",
            "-o",
            "pipefail",
            "-c",
            f"{shlex.quote(binary)} build . | {shlex.quote(str(BIN / 'krmfn-render'))} "
            "--fn-config render.yaml",
        ],
    )
    variant(
        RENDER_EXEC,
        {"transformers": ["render.yaml"]},
        {"render.yaml": exec_config(render_config(), str(BIN / "krmfn-render"))},
        build,
    )
    noop = workdir / "noop.sh"
    noop.write_text("#!/bin/sh\nexec cat\n")
    noop.chmod(0o755)
    variant(
        NOOP_EXEC,
        {"transformers": ["noop.yaml"]},
        {
            "noop.yaml": exec_config(
                {"apiVersion": API, "kind": "Noop", "metadata": {"name": "noop"}}, str(noop)
            )
        },
        build,
    )
    if size <= SIX_EXEC_MAX:
        files = {f"{n}.yaml": exec_config(function_config(n), str(BIN / f"krmfn-{n}")) for n in CONFIGS}
        variant(SIX_EXEC, {"transformers": list(files)}, files, build)
    return variants


def succeeded(args: list[str], cwd: Path) -> tuple[float, int, int]:
    """``timed``, for a kustomize variant that must exit 0."""
    run = timed(args, cwd=cwd)
    if run[2] != 0:
        raise SystemExit(f"a kustomize variant exited {run[2]}: its time would mean nothing")
    return run


def kustomize(sizes: list[int], repeats: dict[int, int], binary: str) -> None:
    rows = []
    for size in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            variants = kustomize_dirs(Path(tmp), size, binary)
            measured = {
                label: median_of(repeats[size], functools.partial(succeeded, command, directory))
                for label, (directory, command) in variants.items()
            }
        base = measured[BASELINE][0]
        for label, (seconds, rss) in measured.items():
            rows.append(
                [
                    f"{size:,}",
                    label,
                    str(repeats[size]),
                    f"{seconds:.3f}",
                    f"{seconds / base:.2f}",
                    f"{(seconds - base) / base:+.0%}",
                    f"{rss / 1024:.0f}",
                ]
            )
    table(
        "kustomize build (median seconds; ratio to kustomize's own `images:` build in the same run)",
        ["resources", "variant", "runs", "seconds", "ratio", "added", "peak RSS MB (largest process)"],
        rows,
    )


def render_vs_kpt(repeats: int, kpt: str | None) -> None:
    example = ROOT / "examples" / "staged-deploy"
    if not (example / "Kptfile").exists():
        raise SystemExit("examples/staged-deploy is missing")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        # The committed example is rendered; its source (templates, unhashed names) is the patch reversed.
        sys.path.insert(0, str(ROOT / "tests"))
        from e2e import derive_source

        copy = derive_source(example, Path(tmp) / "repo")
        env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
        krmfn_s, _ = median_of(repeats, lambda: timed([str(BIN / "krmfn"), "render", str(copy)], env=env))
        # kpt renders in place: from the second run on it re-renders rendered files, as krmfn does above.
        rows.append(["`krmfn render`", f"{krmfn_s * 1000:.0f}", "1.00"])
        if kpt:
            kpt_s, _ = median_of(
                repeats, lambda: timed([kpt, "fn", "render", "--allow-exec", str(copy)], env=env)
            )
            rows.append(["`kpt fn render --allow-exec`", f"{kpt_s * 1000:.0f}", f"{kpt_s / krmfn_s:.2f}"])
    table("Rendering examples/staged-deploy (median ms)", ["command", "ms", "ratio"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smoke mode: tiny sizes, one repeat")
    parser.add_argument("--only", choices=["cold", "throughput", "kustomize", "render"], action="append")
    parser.add_argument("--sizes", help="comma-separated resource counts (default 300,3000,10000)")
    args = parser.parse_args()
    sizes = [30] if args.quick else [300, 3_000, 10_000]
    if args.sizes:
        sizes = [int(size) for size in args.sizes.split(",")]
    repeats = 1 if args.quick else 5
    # kustomize takes minutes per build at 10,000 resources (it is quadratic, exec functions or not).
    kustomize_repeats = {
        size: 1 if args.quick or size > 3_000 else 3 if size > 300 else repeats for size in sizes
    }
    sections = args.only or ["cold", "throughput", "kustomize", "render"]
    kustomize_bin = (
        os.environ.get("KRMFN_KUSTOMIZE")
        or shutil.which("kustomize")
        or str(Path.home() / ".cache/krmfn/bin/kustomize")
    )
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, sizes {sizes}, repeats {repeats}")
    if "cold" in sections:
        cold_start(3 if args.quick else 21)
    if "throughput" in sections:
        throughput(sizes, 1 if args.quick else 3)
    if "kustomize" in sections:
        kustomize(sizes, kustomize_repeats, kustomize_bin)
    if "render" in sections:
        render_vs_kpt(repeats, shutil.which("kpt"))


if __name__ == "__main__":
    main()
