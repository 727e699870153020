"""A function's start imports only what its work needs (issue 30: at most 40 ms over ``python -c pass``).

Deterministic, not timed: each function runs in a fresh interpreter, as kpt starts it (its console
script, and ``krmfn fn NAME``), on bench/coldstart.py's 10-item ResourceList, under ``-X importtime``;
the modules it imports beyond ``python -c pass``'s must be in the committed list below. A module that
is not is a start-up cost to justify: import it where it is used (krmfn/patterns.py for patterns,
krmfn/records.py for value classes), or add it here with the function that needs it for this input.
The figures themselves are bench/coldstart.py's, in BENCHMARKS.md.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

# What every function's start may import beyond the interpreter's own start: the standard library the
# YAML layers and typed configs use, and PyYAML (its C parser and emitter need its Python package).
COMMON = frozenset(
    """
    __future__ _bisect _collections _datetime _functools _operator _sre _struct _typing _weakrefset array
    base64 binascii bisect collections collections.abc contextlib copy copyreg dataclasses datetime enum
    functools importlib importlib.machinery itertools keyword math operator org org.python org.python.core
    re re._casefix re._compiler re._constants re._parser reprlib struct types typing unicodedata warnings
    weakref yaml yaml._yaml yaml.composer yaml.constructor yaml.cyaml yaml.dumper yaml.emitter yaml.error
    yaml.events yaml.loader yaml.nodes yaml.parser yaml.reader yaml.representer yaml.resolver yaml.scanner
    yaml.serializer yaml.tokens
    """.split()  # noqa: SIM905  # a list to read, not a literal to scroll
)
HASHING = frozenset("_blake2 _hashlib _json hashlib json json.decoder json.encoder json.scanner".split())  # noqa: SIM905
EXTRA = {
    "render-inputs": frozenset({"contextvars", "_contextvars"}),  # values.py: the render's one budget
    "set-image": frozenset(),
    "set-config-checksum": HASHING,  # the checksum: sha256 over sorted-key JSON
    "hash-job-names": HASHING,  # the name: sha256 over the spec's sorted-key JSON
    # ordering.py imports these at module level (its suggestions, its messages)
    "set-steps": frozenset(
        {"difflib", "heapq", "_heapq", "json", "json.decoder", "json.encoder", "json.scanner", "_json"}
    ),
    "validate-jobs": frozenset(),
}
EXTRA["render"] = frozenset().union(*EXTRA.values())  # it runs them all
# Never on a start, whatever the list above says: these are what issue 30 found there.
FORBIDDEN = frozenset(
    """
    inspect ast dis tokenize argparse gettext locale shutil bz2 lzma zoneinfo sysconfig hmac
    ruamel.yaml jinja2 httpx httpx2 lightkube jsonpatch
    """.split()  # noqa: SIM905
)


@cache
def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_coldstart", ROOT / "bench" / "coldstart.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def imported(argv: list[str], stdin: bytes | None = None) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", *argv],
        input=stdin,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    lines = [ln for ln in proc.stderr.decode().splitlines() if ln.startswith("import time:")]
    return [ln.rsplit("|", 1)[1].strip() for ln in lines[1:]]


@cache
def interpreter_start() -> frozenset[str]:
    return frozenset(imported(["-c", "pass"]))


NAMES = sorted(EXTRA)
ENTRIES = [(name, "script") for name in NAMES] + [(n, "krmfn fn") for n in NAMES if n != "render"]


@pytest.mark.parametrize(("name", "entry"), ENTRIES, ids=[f"{n}-{e.replace(' ', '-')}" for n, e in ENTRIES])
def test_a_function_starts_with_only_the_modules_it_needs(name: str, entry: str) -> None:
    argv = [str(BIN / f"krmfn-{name}")] if entry == "script" else [str(BIN / "krmfn"), "fn", name]
    found = [m for m in imported(argv, _bench()._input(name)) if m not in interpreter_start()]
    assert any(m.startswith("krmfn.functions.") for m in found), found  # it did run the function
    outside = [m for m in found if not m.startswith("krmfn")]
    assert sorted(set(outside) & FORBIDDEN) == []
    assert sorted(set(outside) - COMMON - EXTRA[name]) == [], "new on the start path (see the module doc)"


def test_the_deferred_modules_still_work_when_used() -> None:
    """inspect and PyYAML's reader pattern wait for a use (krmfn/__init__.py, krmfn/yaml/__init__.py):
    the use gets the real thing."""
    code = (
        "import sys, krmfn.functions.set_image, yaml\n"
        "assert type(sys.modules['inspect']).__name__ == '_DeferredModule'\n"
        "assert type(yaml.reader.Reader.NON_PRINTABLE).__name__ == 'Deferred'\n"
        "import inspect\n"
        "assert str(inspect.signature(lambda a, b=1: 0)) == '(a, b=1)'\n"
        "assert sys.modules['inspect'].__file__.endswith('inspect.py')\n"
        "try:\n"
        "    yaml.safe_load('a: \\x01')\n"
        "except yaml.reader.ReaderError as err:\n"
        "    print(err.character == 1)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert (done.returncode, done.stdout.strip()) == (0, "True"), done.stderr
