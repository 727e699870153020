"""Running functions in-process and through the CLI, and the checks every output must pass."""

from __future__ import annotations

import functools
import os
import re
import resource
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from krmfn.k8s.kobj import is_kustomization
from krmfn.limits import Limits
from krmfn.sdk.resourcelist import item_problem, parse
from krmfn.yaml.io import Mode, load, plain

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable


class Hang(BaseException):
    """A call ran past its time bound (a BaseException, so the runtime's catch-all cannot swallow it)."""


@contextmanager
def time_bound(seconds: float) -> Iterator[None]:
    """Interrupt the block with Hang after ``seconds`` of this process's CPU time (SIGPROF; the main thread
    only). CPU time, not wall time: a busy machine must not turn a slow but finite call into a "hang",
    while a runaway loop burns CPU and is still caught."""

    def expire(signum: int, frame: Any) -> None:
        raise Hang(f"did not finish within {seconds} s of CPU time")

    previous = signal.signal(signal.SIGPROF, expire)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def output_problems(
    text: str, code: int, mode: Mode = "fast", source: str | bytes | None = None
) -> list[str]:
    """Why an output breaks the contract: it must be a ResourceList of valid items, and the exit code must
    agree with its results (1 exactly when there is an error result). Empty when it is fine. Given the
    ``source`` it read, an input that never mentions a ResourceList is a plain stream: when it cannot be
    read, nothing at all on stdout and exit code 1 is the contract.

    ``mode`` is the path that wrote the output: the fidelity path keeps custom tags (``!custom``) that
    kpt accepts and the fast reader refuses."""
    if code not in (0, 1):
        return [f"exit code {code}"]
    if source is not None and text == "" and code == 1:
        mentions = b"ResourceList" in source if isinstance(source, bytes) else "ResourceList" in source
        return ["a ResourceList input got no ResourceList back"] if mentions else []
    try:
        root = load(text, mode, Limits())
        raw = root.get("results") if isinstance(root, dict) else None
        rl = parse(text, mode, Limits())
    except Exception as err:
        return [f"output is not a valid ResourceList: {err}"]
    problems = [
        f"items[{i}]: {p}"
        for i, item in enumerate(rl.items)
        if not is_kustomization(item) and (p := item_problem(item))
    ]
    if raw is not None and not isinstance(raw, list):
        problems.append("results is not a list")
    results = raw if isinstance(raw, list) else []
    severities = [r.get("severity") for r in results if isinstance(r, dict)]
    if any(s not in ("error", "warning", "info") for s in severities):
        problems.append(f"bad severities {severities}")
    if code == 1 and "error" not in severities:
        problems.append("exit code 1 without an error result")
    if code == 0 and "error" in severities:
        problems.append("exit code 0 with an error result")
    for result in results:
        message = str(result.get("message", "")) if isinstance(result, dict) else ""
        if "internal error" in message:
            problems.append(f"a bug surfaced as an internal error: {message}")
        if "Traceback" in message:
            problems.append(f"a traceback in a result: {message}")
    return problems


def items_of(text: str) -> list[Any]:
    return [plain(item) for item in parse(text, "fast", Limits()).items]


@dataclass(frozen=True)
class CliRun:
    code: int
    stdout: bytes
    stderr: bytes


def cli_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KRMFN_")}
    env.update(extra or {})
    return env


ONE_GIB = 1 << 30


def start_cli(
    name: str, args: Sequence[str] = (), env: dict[str, str] | None = None, memory: int | None = None
) -> subprocess.Popen[bytes]:
    """``krmfn fn NAME``; ``memory`` caps the child's address space (bytes), so a bomb fails inside it."""

    return subprocess.Popen(
        [PYTHON, "-m", "krmfn.cli", "fn", name, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=cli_env(env),
        # Runs in the forked child before exec; these tests start no threads that could hold locks then.
        preexec_fn=None if memory is None else functools.partial(_cap_memory, memory),  # noqa: PLW1509
    )


def _cap_memory(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def run_cli(  # noqa: PLR0917
    name: str,
    data: bytes,
    args: Sequence[str] = (),
    env: dict[str, str] | None = None,
    timeout: float = 30,
    memory: int | None = None,
) -> CliRun:
    proc = start_cli(name, args, env, memory)
    out, err = proc.communicate(data, timeout=timeout)
    return CliRun(proc.returncode, out, err)


def run_cli_many(
    jobs: Sequence[tuple[str, bytes, Sequence[str], dict[str, str]]], timeout: float = 60
) -> list[CliRun]:
    """Run CLI invocations concurrently (each costs ~0.1 s of interpreter start-up)."""
    procs = [(start_cli(name, args, env), data) for name, data, args, env in jobs]
    runs = []
    for proc, data in procs:
        out, err = proc.communicate(data, timeout=timeout)
        runs.append(CliRun(proc.returncode, out, err))
    return runs


# What may not reach a terminal: C0 but the line feed, DEL, C1 (UTF-8 C2 80..9F), U+2028/2029, bidi
# embeddings, overrides, isolates and marks, zero-width characters, a BOM, and CI workflow command marks.
UNSAFE_BYTES = re.compile(
    rb"[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|\xe2\x80[\x8b-\x8f\xa8-\xae]|\xe2\x81[\xa0-\xaf]"
    rb"|\xef\xbb\xbf|::|##"
)


def inert(text: str | bytes, where: str) -> None:
    """Fails unless ``text`` (lines for a terminal) holds nothing a terminal or a CI runner acts on."""
    data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogateescape")
    found = UNSAFE_BYTES.search(data)
    if found is not None:
        context = data[max(found.start() - 40, 0) : found.start() + 20]
        raise AssertionError(f"{where}: {found.group()!r} at byte {found.start()}: {context!r}")
