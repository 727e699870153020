"""Hostile inputs: how long and how much memory what an attacker can write costs the functions.

    python bench/hostile.py            # full sizes
    python bench/hostile.py --quick    # smoke: small sizes (the test suite runs this)

Sections: render-inputs scanning text full of ``<< `` with no `` >>`` (issue 15 item 2: linear, 1 MB in
well under a second); render-inputs expressions that would build huge values (item 3: refused before
they are built, peak RSS stays flat); peak RSS per input byte of the YAML paths, the figure behind the
default ``KRMFN_MAX_INPUT_BYTES`` (item 18, docs/limits.md).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parent))
if TYPE_CHECKING:
    from bench import gen  # mypy checks this script as bench.hostile (see bench/functions.py)
    from bench.functions import table
else:
    import gen
    from functions import table

from krmfn.yaml.io import dump_fast

BIN = Path(sys.executable).parent
GNU_TIME = "/usr/bin/time"


def run(args: list[str], stdin: bytes, env: dict[str, str] | None = None) -> tuple[float, int, int, bytes]:
    """Wall seconds, peak RSS in KiB (GNU time when installed), exit code and stderr of one child."""
    measure = os.path.exists(GNU_TIME)
    if measure:
        args = [GNU_TIME, "-f", "%M", *args]
    start = time.perf_counter()
    proc = subprocess.run(args, input=stdin, capture_output=True, env=env, check=False)
    elapsed = time.perf_counter() - start
    lines = proc.stderr.decode(errors="replace").strip().splitlines()
    rss = int(lines[-1]) if measure and lines and lines[-1].isdigit() else 0
    return elapsed, rss, proc.returncode, proc.stderr


def resource_list(value: str, inputs: dict[str, object] | None = None) -> bytes:
    return dump_fast(
        {
            "apiVersion": "config.kubernetes.io/v1",
            "kind": "ResourceList",
            "items": [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "hostile", "annotations": {"note": value}},
                }
            ],
            "functionConfig": {
                "apiVersion": "fn.krmfn.dev/v1alpha1",
                "kind": "RenderInputs",
                "metadata": {"name": "r"},
                "inputs": inputs or {"tag": "1.2.3"},
            },
        }
    ).encode()


def scanning(sizes: list[int]) -> None:
    from krmfn.functions.render_inputs.engine import Scan, render

    rows = []
    for unit in ("<< ", "<< a ", "a << b >> "):
        for size in sizes:
            text = unit * (size // len(unit))
            start = time.perf_counter()
            render(text, {"tag": "1.2.3"})
            in_process = time.perf_counter() - start
            scan = Scan(text)
            scan.spans()
            seconds, rss, code, _ = run([str(BIN / "krmfn-render-inputs")], resource_list(text))
            rows.append(
                [
                    f"`{unit!r}` x {size // len(unit):,}",
                    f"{len(text) / 1e6:.2f}",
                    f"{in_process * 1000:.1f}",
                    f"{scan.steps / len(text):.2f}",
                    f"{seconds:.2f}",
                    f"{rss / 1024:.0f}",
                    str(code),
                ]
            )
    table(
        "render-inputs: scanning text with many `<<` (in-process render, and the CLI end to end)",
        ["text", "MB", "render ms", "steps per char", "CLI seconds", "CLI peak RSS MB", "exit"],
        rows,
    )


HEAD = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n"


def shaped(shape: str, size: int) -> str:
    """About ``size`` characters of input of one shape: manifests, or the costliest per byte found."""
    if shape == "manifests":
        count = 16
        while len(gen.resource_list(count * 2)) <= size:
            count *= 2
        return gen.resource_list(count)
    body = HEAD + "items: []\nx: ["
    unit = {"empty mappings": "{}", "empty lists": "[]", "short strings": "ab"}[shape]
    return body + ",".join([unit] * ((size - len(body)) // (len(unit) + 1))) + "]\n"


def memory(sizes: dict[str, int]) -> None:
    """Peak RSS of set-steps reading, reporting on and writing back the input (it fails for want of a
    config after parsing: every byte is read and written)."""
    rows = []
    env = {**os.environ, "KRMFN_MAX_INPUT_BYTES": str(1 << 40), "KRMFN_MAX_FIDELITY_BYTES": str(1 << 40)}
    env["KRMFN_MAX_NODES"] = str(1 << 40)
    for mode, size in sizes.items():
        _, base, _, _ = run(
            [str(BIN / "krmfn-set-steps"), "--yaml", mode], (HEAD + "items: []\n").encode(), env
        )
        for shape in ("manifests", "empty mappings", "empty lists", "short strings"):
            text = shaped(shape, size).encode()
            seconds, rss, _, _ = run([str(BIN / "krmfn-set-steps"), "--yaml", mode], text, env)
            rows.append(
                [
                    mode,
                    shape,
                    f"{len(text) / 2**20:.2f}",
                    f"{rss / 1024:.0f}",
                    f"{(rss - base) * 1024 / len(text):.0f}",
                    f"{seconds:.1f}",
                ]
            )
    table(
        "Peak RSS per input byte (krmfn-set-steps, read and written back; base: an empty list's RSS)",
        ["path", "shape", "input MiB", "peak RSS MiB", "(RSS - base) / input", "seconds"],
        rows,
    )


# set-image's header patterns before issue 29 (finding 10), kept here only to show what they cost.
_OLD_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="?next"?')
_OLD_CHALLENGE_PARAM = re.compile(r'(\w+)="([^"]*)"')


def registry_headers(sizes: list[int]) -> None:
    """The registry's ``Link`` and ``WWW-Authenticate`` values an attacker would send, through the old
    patterns and through krmfn/net/headers.py (which set-image now uses, after an 8 KiB cap)."""
    from krmfn.net.headers import challenges, next_link

    def ms(call: Callable[[str], object], value: str) -> float:
        start = time.perf_counter()
        call(value)
        return (time.perf_counter() - start) * 1e3

    rows = []
    for size in sizes:
        link, challenge = "<" * size, "Bearer " + "a" * size
        old, new = ms(_OLD_NEXT.search, link), ms(next_link, link)
        rows.append([f"`Link`: `<` x {size:,}", f"{old:.1f}", f"{new:.2f}"])
        old, new = ms(_OLD_CHALLENGE_PARAM.findall, challenge), ms(challenges, challenge)
        rows.append([f"`WWW-Authenticate`: `a` x {size:,}", f"{old:.1f}", f"{new:.2f}"])
    header = ["value", "old regex", "krmfn.net.headers"]
    table("set-image's registry headers, hostile values (ms)", header, rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smoke mode: small sizes")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores")
    scanning([100_000] if args.quick else [240_000, 1_000_000, 4_000_000])
    registry_headers([2_000] if args.quick else [8_192, 20_000])
    if args.quick:
        memory({"fast": 256 * 1024, "fidelity": 64 * 1024})
    else:
        from krmfn.limits import Limits

        memory({"fast": Limits().max_bytes, "fidelity": 1024 * 1024})


if __name__ == "__main__":
    main()
