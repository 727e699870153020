"""The faithful writer against its anchor; prints Markdown tables (medians, ratios from the same run).

    python bench/fidelity.py                 # full: 3,000 and 10,000 items; 1,800 and 300-object packages
    python bench/fidelity.py --quick         # smoke: tiny sizes, one repeat (the test suite runs this)
    python bench/fidelity.py --baseline-venv DIR   # also time the 300-object render with another install

Sections: krmfn-set-image (faithful, the default, and ``--yaml fast``) beside a minimal set-image on the
Go KRM SDK (bench/go-set-image, built by scripts/install-go-set-image.sh) on one ResourceList as kpt sends
it; a one-image bump on a package of one object per file under real ``kpt fn render`` and under
``krmfn render --in-place`` (lines changed, against the lines that hold the image); a package with four
functions under ``kpt fn render``, with the installation in ``--baseline-venv`` (say, the previous
release) on the same package for the before/after ratio.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
if TYPE_CHECKING:
    from bench import functions, gen
else:
    import functions
    import gen

from krmfn.yaml.io import dump_fast

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def go_set_image() -> str:
    out = subprocess.run(
        [str(ROOT / "scripts" / "install-go-set-image.sh")], capture_output=True, text=True, check=True
    )
    return out.stdout.strip().splitlines()[-1]


def cpu_timed(args: list[str], stdin: bytes) -> tuple[float, float, int, int]:
    """(wall seconds, CPU seconds user+system, peak RSS KiB, exit code) of one child, from GNU time: CPU
    time shows the work done even when other jobs share the machine's cores."""
    proc = subprocess.run(
        [functions.GNU_TIME, "-f", "%e %U %S %M", *args],
        input=stdin,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=False,
    )
    wall, user, system, rss = proc.stderr.decode().strip().splitlines()[-1].split()
    return float(wall), float(user) + float(system), int(rss), proc.returncode


def ratio(value: float, base: float) -> str:
    """``value / base`` for a table cell; GNU time counts in 10 ms steps, so a quick profile's Go run
    can measure 0.00 s, which is below what the table can compare, not a division to make."""
    return f"{value / base:.2f}" if base > 0 else "n/a (< 10 ms)"


def anchor(sizes: list[int], repeats: int) -> None:
    go = go_set_image()
    config = functions.function_config("set-image")
    rows = []
    for size in sizes:
        data = gen.resource_list(size, config, kpt=True).encode()
        commands = {
            "Go KRM SDK set-image": [go],
            "krmfn-set-image (faithful, default)": [str(BIN / "krmfn-set-image")],
            "krmfn-set-image --yaml fast": [str(BIN / "krmfn-set-image"), "--yaml", "fast"],
        }
        results: dict[str, list[tuple[float, float, int, int]]] = {label: [] for label in commands}
        for _ in range(repeats):  # interleaved, so load on the machine hits every row alike
            for label, args in commands.items():
                results[label].append(cpu_timed(args, data))
        go_runs = results["Go KRM SDK set-image"]
        go_seconds = statistics.median(r[0] for r in go_runs)
        go_cpu = statistics.median(r[1] for r in go_runs)
        for label, runs in results.items():
            seconds = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            rss = max(r[2] for r in runs)
            assert all(r[3] == 0 for r in runs), f"{label} failed"
            rows.append(
                [
                    f"{size:,}",
                    label,
                    str(repeats),
                    f"{seconds:.3f}",
                    f"{size / seconds:,.0f}" if seconds > 0 else "n/a (< 10 ms)",
                    ratio(seconds, go_seconds),
                    f"{cpu:.3f}",
                    ratio(cpu, go_cpu),
                    f"{rss / 1024:.0f}",
                ]
            )
    functions.table(
        "set-image on one ResourceList as kpt sends it (median seconds; ratio to the Go SDK function)",
        [
            "items",
            "function",
            "runs",
            "seconds",
            "items/s",
            "ratio to Go",
            "CPU s",
            "CPU ratio",
            "peak RSS MB",
        ],
        rows,
    )


def package(directory: Path, count: int, mutators: list[dict[str, Any]], configs: dict[str, Any]) -> Path:
    """A kpt package of ``count`` objects, one per file, with comments and quoted values kpt keeps."""
    directory.mkdir(parents=True)
    kptfile = {
        "apiVersion": "kpt.dev/v1",
        "kind": "Kptfile",
        "metadata": {"name": directory.name, "annotations": {"config.kubernetes.io/local-config": "true"}},
        "pipeline": {"mutators": mutators},
    }
    (directory / "Kptfile").write_text(dump_fast(kptfile))
    for name, raw in configs.items():
        config = {
            **raw,
            "metadata": {
                **raw.get("metadata", {}),
                "annotations": {"config.kubernetes.io/local-config": "true"},
            },
        }
        (directory / name).write_text(dump_fast(config))
    for obj in gen.objects(count):
        text = dump_fast(obj).replace("replicas: 2\n", "replicas: 2 # scaled by the HPA\n")
        text = text.replace("level: info", 'level: "info"')
        (directory / f"{obj['kind'].lower()}-{obj['metadata']['name']}.yaml").write_text(
            f"# {obj['kind']} {obj['metadata']['name']}, owned by team {obj['metadata']['namespace']}\n"
            + text
        )
    return directory


def git(directory: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=b", "-c", "user.email=b@b", *args],
        cwd=directory,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def changed_lines(directory: Path) -> tuple[int, int]:
    """(lines changed, files changed) since the last commit."""
    lines = files = 0
    for row in git(directory, "diff", "--numstat").splitlines():
        added, removed, _ = row.split("\t", 2)
        lines += max(int(added), int(removed))
        files += 1
    return lines, files


def bump(count: int, env: dict[str, str]) -> None:
    rows = []
    images = {
        "apiVersion": functions.API,
        "kind": "SetImage",
        "metadata": {"name": "bump"},
        "images": [{"name": "nginx", "newTag": "1.27.0"}],
    }
    mutators = [{"exec": str(BIN / "krmfn-set-image"), "configPath": "fn-set-image.yaml"}]
    with tempfile.TemporaryDirectory() as tmp:
        for tool in ("kpt fn render", "krmfn render --in-place"):
            directory = package(Path(tmp) / tool.split()[0], count, mutators, {"fn-set-image.yaml": images})
            git(directory, "init", "-q")
            render = (
                ["kpt", "fn", "render", "--allow-exec", "--truncate-output=false", str(directory)]
                if tool.startswith("kpt")
                else [str(BIN / "krmfn"), "render", str(directory), "--in-place"]
            )
            subprocess.run(render, env=env, capture_output=True, check=True)  # the package as it renders
            git(directory, "add", "-A")
            git(directory, "commit", "-qm", "rendered")
            config = directory / "fn-set-image.yaml"
            config.write_text(config.read_text().replace("1.27.0", "1.27.1"))
            seconds, _, code = functions.timed(render, env=env)
            assert code == 0, tool
            lines, files = changed_lines(directory)
            expected = (
                sum(
                    1
                    for path in directory.glob("*.yaml")
                    for line in path.read_text().splitlines()
                    if "image: nginx:" in line
                )
                + 1
            )  # the config line itself
            rows.append([f"{count:,}", tool, f"{seconds:.2f}", str(files), str(lines), str(expected)])
    functions.table(
        "One image bump on a package of one object per file (lines changed)",
        [
            "objects",
            "render",
            "seconds",
            "files changed",
            "lines changed",
            "lines holding the image (+ config)",
        ],
        rows,
    )


def four_functions(count: int, repeats: int, env: dict[str, str], baseline: Path | None) -> None:
    configs = {
        "fn-render-inputs.yaml": functions.function_config("render-inputs"),
        "fn-set-image.yaml": functions.function_config("set-image"),
        "fn-set-config-checksum.yaml": functions.function_config("set-config-checksum"),
        "fn-set-steps.yaml": functions.function_config("set-steps"),
    }
    names = ["render-inputs", "set-image", "set-config-checksum", "set-steps"]
    mutators = [{"exec": f"krmfn-{n}", "configPath": f"fn-{n}.yaml"} for n in names]
    installs = {"this version": BIN}
    if baseline is not None:
        installs = {"baseline (--baseline-venv)": baseline / "bin", **installs}
    rows = []
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        source = package(Path(tmp) / "source", count, mutators, configs)
        for label, bin_dir in installs.items():
            runs = []
            for number in range(repeats):
                directory = Path(tmp) / f"run-{len(results)}-{number}"
                shutil.copytree(source, directory)
                run_env = {**env, "PATH": f"{bin_dir}{os.pathsep}{env['PATH']}"}
                runs.append(
                    functions.timed(
                        ["kpt", "fn", "render", "--allow-exec", "--truncate-output=false", str(directory)],
                        env=run_env,
                    )
                )
                assert runs[-1][2] == 0, label
            results[label] = statistics.median(r[0] for r in runs)
            rows.append([f"{count:,}", label, str(repeats), f"{results[label]:.2f}"])
    first = next(iter(results.values()))
    for row, seconds in zip(rows, results.values(), strict=True):
        row.append(f"{first / seconds:.2f}")
    functions.table(
        "kpt fn render, four krmfn functions (median seconds; speed-up over the first row)",
        ["objects", "install", "runs", "seconds", "speed-up"],
        rows,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--baseline-venv", type=Path)
    parser.add_argument("--only", choices=("anchor", "bump", "render"), help="one section")
    args = parser.parse_args()
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    if args.quick:
        anchor([40], 1)
        bump(20, env)
        four_functions(8, 1, env, args.baseline_venv)
        return
    if args.only in (None, "anchor"):
        anchor([3000, 10000], 5)
    if args.only in (None, "bump"):
        bump(1800, env)
    if args.only in (None, "render"):
        four_functions(300, 3, env, args.baseline_venv)


if __name__ == "__main__":
    main()
