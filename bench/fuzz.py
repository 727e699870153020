"""Long fuzz runs of the ResourceList parser and every krmfn function (the suite runs a short one).

    .venv/bin/python bench/fuzz.py --seconds 600                   # all targets, structured mutations
    .venv/bin/python bench/fuzz.py --seconds 600 --engine atheris  # coverage-guided (libFuzzer), if installed
    .venv/bin/python bench/fuzz.py --targets render-inputs,parser --seconds 60 --seed 7
    .venv/bin/python bench/fuzz.py --findings                      # open known findings, still present?

The oracle is tests/robustness/fuzzing.py ``check``: bounded time, a valid ResourceList out, exit code
agreeing with the results, no traceback, no "internal error". Findings are de-duplicated by target, kind
and message, and the first input of each is written to --out. Prints a table of executions and findings.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# bench/functions.py would shadow the functions package: search the repository and tests/ instead.
sys.path[:] = [str(ROOT), str(ROOT / "tests")] + [
    p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"
]

from robustness.fuzzing import Finding, check, mutate, seed_text, targets  # noqa: E402

MODES = (None, "fast", "fidelity")
ATHERIS_OUT = Path("/tmp/krmfn-fuzz-atheris")


class Tally:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.runs: Counter[str] = Counter()
        self.findings: dict[tuple[str, str, str], tuple[Finding, int]] = {}

    def record(self, found: list[Finding]) -> None:
        for finding in found:
            key = (finding.target, finding.kind, re.sub(r"\d+", "N", finding.detail)[:120])
            if key in self.findings:
                first, count = self.findings[key]
                self.findings[key] = (first, count + 1)
                continue
            self.findings[key] = (finding, 1)
            self.out.mkdir(parents=True, exist_ok=True)
            name = hashlib.sha256(finding.data).hexdigest()[:12]
            path = self.out / f"{finding.target}-{finding.kind}-{name}.bin"
            path.write_bytes(finding.data)
            print(
                f"finding: {finding.target}: {finding.kind}: {finding.detail[:200]} (input: {path})",
                flush=True,
            )

    def table(self, seconds: float, engine: str) -> str:
        per_target = Counter(f.target for f, _ in self.findings.values())
        lines = [f"engine {engine}, {seconds:.0f} s", "", f"{'target':<22}{'executions':>12}{'findings':>10}"]
        for target, runs in sorted(self.runs.items()):
            lines.append(f"{target:<22}{runs:>12}{per_target.get(target, 0):>10}")
        lines.append(f"{'total':<22}{sum(self.runs.values()):>12}{len(self.findings):>10}")
        if self.findings:
            lines += ["", "findings (target, kind, message, count):"]
            for (target, kind, _), (finding, count) in sorted(self.findings.items()):
                lines.append(f"  {target}  {kind}  {finding.detail[:160]!r}  x{count}")
        return "\n".join(lines)


def run_random(names: list[str], seconds: float, seed: int, tally: Tally) -> None:
    """Structured mutations of seed ResourceLists; inputs a function accepts join its corpus."""
    rnd = random.Random(seed)
    functions = targets()
    corpus = {name: [seed_text(functions[name]).encode()] for name in names}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        name = names[tally.runs.total() % len(names)]
        data, _ = mutate(rnd, rnd.choice(corpus[name]))
        mode = rnd.choice(MODES)
        found = check(name, functions[name], data, mode)
        tally.runs[name] += 1
        tally.record(found)
        if not found and len(data) < 64_000 and len(corpus[name]) < 500 and rnd.random() < 0.05:
            corpus[name].append(data)


def run_atheris(names: list[str], seconds: float, tally: Tally) -> None:
    """One libFuzzer process per target; our mutations as its custom mutator, coverage picks inputs."""
    each = max(int(seconds / len(names)), 1)
    for name in names:
        proc = subprocess.run(
            [
                sys.executable,
                __file__,
                "--atheris-worker",
                name,
                f"-max_total_time={each}",
                "-rss_limit_mb=2048",
                "-timeout=10",
                f"-artifact_prefix={ATHERIS_OUT}/",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        done = re.search(r"Done (\d+) runs", proc.stderr) or re.findall(r"#(\d+)\s", proc.stderr)
        runs = int(done.group(1)) if isinstance(done, re.Match) else int(done[-1]) if done else 0
        tally.runs[name] += runs
        for line in proc.stdout.splitlines():
            if line.startswith("FINDING\t"):
                _, kind, detail, path = line.split("\t", 3)
                tally.record([Finding(name, kind, detail, Path(path).read_bytes())])
        # libFuzzer's own verdicts (timeout, out of memory, uncaught exception), with its saved input;
        # other non-zero exits are interpreter teardown noise after max_total_time.
        verdict = re.search(r"ERROR: libFuzzer: (.*)|Uncaught Python exception: (.*)", proc.stderr)
        if verdict and "FINDING" not in proc.stdout:
            saved = re.search(r"Test unit written to (\S+)", proc.stderr)
            data = Path(saved.group(1)).read_bytes() if saved and Path(saved.group(1)).exists() else b""
            tally.record([Finding(name, "libfuzzer", (verdict.group(1) or verdict.group(2)).strip(), data)])


def atheris_worker(name: str, argv: list[str]) -> None:
    import atheris  # type: ignore[import-untyped]  # optional: pip install atheris

    function = targets()[name]  # imports every function module, so that instrument_all() sees them
    atheris.instrument_all()
    seed = seed_text(function).encode()
    out = ATHERIS_OUT
    out.mkdir(parents=True, exist_ok=True)

    def mutator(data: bytes, max_size: int, seed_value: int) -> bytes:
        rnd = random.Random(seed_value)
        base = data if data and rnd.random() < 0.8 else seed
        mutated, _ = mutate(rnd, base)
        return mutated[:max_size] if len(mutated) > max_size and rnd.random() < 0.5 else mutated

    def one_input(data: bytes) -> None:
        for finding in check(name, function, data, MODES[len(data) % 3], bounded=False):
            path = out / f"{name}-{hashlib.sha256(data).hexdigest()[:12]}.bin"
            path.write_bytes(data)
            detail = finding.detail.replace("\t", " ").replace("\n", " ")
            print(f"FINDING\t{finding.kind}\t{detail}\t{path}", flush=True)

    atheris.Setup([sys.argv[0], "-max_len=4000000", *argv], one_input, custom_mutator=mutator)
    atheris.Fuzz()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--engine", choices=("random", "atheris"), default="random")
    parser.add_argument(
        "--targets", default="", help="comma-separated: parser and function names (default: all)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("/tmp/krmfn-fuzz"), help="where finding inputs go")
    parser.add_argument("--findings", action="store_true", help="check the known open findings and exit")
    parser.add_argument("--atheris-worker", default="", help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args()
    if args.atheris_worker:
        atheris_worker(args.atheris_worker, rest)
        return 0
    if args.findings:
        from robustness.known_findings import main as findings_main

        return findings_main()
    names = [n for n in args.targets.split(",") if n] or list(targets())
    unknown = set(names) - set(targets())
    if unknown:
        parser.error(f"unknown targets {sorted(unknown)}; known: {', '.join(targets())}")
    tally = Tally(args.out)
    started = time.monotonic()
    if args.engine == "atheris":
        try:
            import atheris  # noqa: F401
        except ImportError:
            parser.error("atheris is not installed (pip install atheris); use --engine random")
        run_atheris(names, args.seconds, tally)
    else:
        run_random(names, args.seconds, args.seed, tally)
    print(tally.table(time.monotonic() - started, args.engine))
    return 1 if tally.findings else 0


if __name__ == "__main__":
    raise SystemExit(main())
