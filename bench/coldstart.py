"""Cold start of every function on a 10-item ResourceList: a table of medians, runs interleaved.

    python bench/coldstart.py             # 21 runs of each command
    python bench/coldstart.py --quick     # 3 runs (the suite's smoke mode)
    python bench/coldstart.py --imports   # also the modules each function's cold path imports
    python bench/coldstart.py --before OLD/bin   # also another install's console scripts, interleaved

Rows: ``python -c pass`` (the interpreter's own start, the floor), each function as its console script
``krmfn-<name>`` and as ``krmfn fn <name>``, set-image without pip's console-script wrapper (``python
-c`` calling its ``main``: the wrapper's own cost is the difference), and a Go KRM function (the Go KRM
SDK's set-image, bench/go-set-image, built by scripts/install-go-set-image.sh) for scale. Measure a
non-editable install (``pip install .`` writes the ``.pyc`` files; an editable install adds its import
hook to every start, and ``PYTHONDONTWRITEBYTECODE`` compiles every module on every start).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parent))
if TYPE_CHECKING:
    from bench import functions, gen
else:
    import functions
    import gen

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
NAMES = (*functions.CONFIGS, "render")
TARGET_MS = 40.0
"""Issue 30: at most this over ``python -c pass`` for every function."""


def _input(name: str) -> bytes:
    config = functions.render_config() if name == "render" else functions.function_config(name)
    return gen.resource_list(10, config).encode()


def _go_set_image() -> str | None:
    script = ROOT / "scripts" / "install-go-set-image.sh"
    proc = subprocess.run([str(script)], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        print(f"(no Go row: {script.name} failed: {proc.stderr.strip()[-300:]})", file=sys.stderr)
        return None
    return proc.stdout.strip().splitlines()[-1]


def commands(go: str | None, before: Path | None = None) -> list[tuple[str, list[str], bytes | None]]:
    """(label, argv, stdin) of every row; ``before``: another install's bin directory, for its rows."""
    python = sys.executable
    rows: list[tuple[str, list[str], bytes | None]] = [("`python -c pass`", [python, "-c", "pass"], None)]
    for name in NAMES:
        rows.append((f"`krmfn-{name}`", [str(BIN / f"krmfn-{name}")], _input(name)))
        if before is not None:
            rows.append((f"`krmfn-{name}` (before)", [str(before / f"krmfn-{name}")], _input(name)))
    for name in functions.CONFIGS:  # krmfn fn runs the six (render is krmfn render's in-process pipeline)
        rows.append((f"`krmfn fn {name}`", [str(BIN / "krmfn"), "fn", name], _input(name)))
    body = "import sys; from krmfn.functions.set_image import main; sys.exit(main())"
    rows.append(("set-image without the console-script wrapper", [python, "-c", body], _input("set-image")))
    if go:
        rows.append(("Go KRM SDK set-image (bench/go-set-image)", [go], _input("set-image")))
    return rows


def _run(argv: list[str], stdin: bytes | None) -> tuple[float, float]:
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None
    if stdin:
        proc.stdin.write(stdin)
    proc.stdin.close()
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}")
    return elapsed, usage.ru_utime + usage.ru_stime


def cold_start(runs: int, before: Path | None = None) -> None:
    """The table. CPU time (user + system) moves much less than wall time when other work shares the
    cores, so it is printed beside it; the target is read on the wall medians of a quiet machine."""
    rows = commands(_go_set_image(), before)
    walls: dict[str, list[float]] = {label: [] for label, _, _ in rows}
    cpus: dict[str, list[float]] = {label: [] for label, _, _ in rows}
    for _ in range(runs):  # interleaved: a burst of load on the machine hits every row alike
        for label, argv, stdin in rows:
            seconds, cpu_seconds = _run(argv, stdin)
            walls[label].append(seconds)
            cpus[label].append(cpu_seconds)
    wall = {label: statistics.median(values) * 1000 for label, values in walls.items()}
    cpu = {label: statistics.median(values) * 1000 for label, values in cpus.items()}
    floor, cpu_floor = wall["`python -c pass`"], cpu["`python -c pass`"]
    go = next((wall[label] for label in wall if label.startswith("Go ")), None)
    out = []
    for label, _, _ in rows:
        base = label == "`python -c pass`"
        out.append(
            [
                label,
                f"{wall[label]:.1f}",
                "-" if base else f"{wall[label] - floor:.1f}",
                f"{cpu[label]:.1f}",
                "-" if base else f"{cpu[label] - cpu_floor:.1f}",
                f"{wall[label] / go:.2f}" if go else "-",
            ]
        )
    functions.table(
        f"Cold start on a 10-item ResourceList (median of {runs} runs, ms)",
        ["command", "wall", "wall over python", "CPU", "CPU over python", "wall ratio to Go"],
        out,
    )
    print(f"\nTarget (issue 30): at most {TARGET_MS:.0f} ms over `python -c pass` for every function.")


def imports(name: str) -> list[str]:
    """The modules ``krmfn-<name>`` imports on its cold path (``-X importtime``), in import order."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", str(BIN / f"krmfn-{name}")],
        input=_input(name),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""},
        check=True,
    )
    lines = [ln for ln in proc.stderr.decode().splitlines() if ln.startswith("import time:")]
    return [ln.rsplit("|", 1)[1].strip() for ln in lines[1:]]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smoke mode: 3 runs")
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--imports", action="store_true", help="also list each function's imports")
    parser.add_argument("--before", type=Path, metavar="BIN", help="another install's bin directory")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]} ({sys.executable}), {os.cpu_count()} cores")
    cold_start(3 if args.quick else args.runs, args.before)
    if args.imports:
        for name in NAMES:
            found = imports(name)
            print(f"\n{name}: {len(found)} modules: {' '.join(found)}")


if __name__ == "__main__":
    main()
