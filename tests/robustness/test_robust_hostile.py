"""The standing hostile-input suite, functions' side: generated hostile values through every entry point.

Values: nesting past the depth limit (lists, mappings, both, through aliases and merge keys), integers
past go-yaml's 64 bits, duplicate keys, text that is not UTF-8, raw control characters; and, as data,
control, bidi and zero-width characters with CI workflow command lines (``::add-mask::``,
``##vso[...]``) and forged lines, huge strings and numbers held as strings. Each goes into a slot of a
real package (a name, a key, an annotation, a label, a data value, the functionConfig) and through each
entry point: every function's ResourceList and plain stream (its CLI edge, in process), ``krmfn fn
NAME`` and ``krmfn-NAME`` (child processes), ``krmfn render`` and ``krmfn render --in-place`` (a package
with symlinks to outside, watched by inotify), ``krmfn export argocd`` and ``resourceset``.

Every run: no traceback and no internal error; every line on stderr inert (no control, format or
separator character, no ``::`` or ``##``); an input error is exit 1 with exactly one stderr line naming
it, and a failed plain stream writes nothing on stdout; a ResourceList output keeps its contract
(``harness.output_problems``); nothing outside the package is opened, read or written. The quick
profile takes seconds; ``KRMFN_HYPOTHESIS_PROFILE=long`` runs forty times the examples and every
function and hostile value through the child-process entry points.
"""

from __future__ import annotations

import contextlib
import copy
import io
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cli_run import krmfn_cli
from fswatch import Watch
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from krmfn.limits import Limits
from krmfn.registry import CANONICAL_ORDER, load
from krmfn.yaml.io import dump_all_fast, dump_fast
from robustness.budget import PROFILE_ENV, examples
from robustness.fuzzing import seed_config, seed_items
from robustness.harness import PYTHON, ROOT, cli_env, inert, output_problems

FUNCTIONS = list(CANONICAL_ORDER)
LONG = os.environ.get(PROFILE_ENV) == "long"
SLOT = "HOSTILE-SLOT-7f3a"
HOSTILE_CHARS = (
    *("\x1b]0;PWNED\x07", "\x1b[2J", "\r", "\n", "\t", "\x00", "\x7f", "\x9b31m", "\x85"),
    *("\u202e", "\u2066", "\u200b", "\u2028", "\ufeff", "::add-mask::", "::stop-commands::x"),
    *("##vso[task.setvariable variable=a]b", "##teamcity[", "step 1 deploy: ok", "a", " ", ":", "#"),
    *("é", "\U0001f600"),
)


@dataclass(frozen=True)
class Hostile:
    kind: str
    """What it is; ``error`` says which words the one stderr line must hold (empty: data, not an error)."""
    yaml: str
    """The value as YAML text (flow style), put where the slot's value was."""
    error: tuple[str, ...] = ()


def nest(depth: int, shape: str, core: str) -> str:
    text = core
    for level in range(depth):
        as_map = shape == "map" or (shape == "mixed" and level % 2)
        text = f"{{k: {text}}}" if as_map else f"[{text}]"
    return text


DEPTH = ("KRMFN_MAX_DEPTH", "recursive YAML alias")


def input_errors() -> st.SearchStrategy[Hostile]:
    deep = st.builds(
        lambda depth, shape: Hostile("deep", nest(depth, shape, "x"), DEPTH),
        st.sampled_from((101, 150, 999, 1001, 20_000)),
        st.sampled_from(("list", "map", "mixed")),
    )
    # The anchor is defined where the slot is, so it is within reach of the alias in the same value.
    aliased = st.builds(
        lambda half, shape: Hostile(
            "deep alias", f"[&h {nest(half, shape, 'x')}, {nest(half, shape, '*h')}]", DEPTH
        ),
        st.sampled_from((52, 60, 500)),
        st.sampled_from(("list", "map", "mixed")),
    )
    merged = st.sampled_from((55, 80)).map(
        lambda half: Hostile(
            "deep merge", f"[&m {nest(half, 'map', 'x')}, {nest(half, 'map', '{<<: *m}')}]", DEPTH
        )
    )
    past_64_bits = (
        "18446744073709551616",
        "-9223372036854775809",
        "9" * 5000,
        "0x1" + "0" * 40,
        "0b1" + "0" * 70,
    )
    numbers = st.sampled_from(past_64_bits).map(lambda n: Hostile("huge integer", n, ("64-bit",)))
    duplicate = st.just(Hostile("duplicate key", "{a: 1, a: 2}", ("duplicate key",)))
    recursive = st.just(Hostile("recursive alias", "&r [1, *r]", DEPTH))
    not_utf8 = st.just(Hostile("not UTF-8", '"\udcff"', ("UTF-8",)))
    raw_control = st.sampled_from(("\x00", "\x01", "\x1b", "\x7f", "\x9b")).map(
        lambda c: Hostile("raw control character", f"a{c}b", ("control characters are not allowed",))
    )
    return st.one_of(deep, aliased, merged, numbers, duplicate, recursive, not_utf8, raw_control)


def quoted(text: str) -> str:
    """``text`` as a YAML double-quoted scalar, every character YAML would refuse raw escaped."""
    return dump_fast({"v": text}, explicit_start=False).partition(": ")[2].rstrip("\n") if text else '""'


def data_values() -> st.SearchStrategy[Hostile]:
    text = st.lists(st.sampled_from(HOSTILE_CHARS), min_size=1, max_size=12).map("".join)
    strings = text.map(lambda t: Hostile("hostile text", quoted(t)))
    huge = st.sampled_from((100_000, 1_000_000, 4_000_000)).map(lambda n: Hostile("huge string", "x" * n))
    numbers = st.sampled_from(('"' + "9" * 5000 + '"', "1e400", "-.inf", ".nan", "9223372036854775807")).map(
        lambda n: Hostile("number", n)
    )
    return st.one_of(strings, huge, numbers)


# Where a value goes: (item index or "config", path of keys; the last may be "<key>": the value becomes a key)
SLOTS = (
    (0, ("metadata", "name")),
    (0, ("data", "level")),
    (0, ("data", "<key>")),
    (2, ("metadata", "annotations", "krmfn.dev/step")),
    (2, ("metadata", "labels", "app")),
    (3, ("metadata", "annotations", "example.com/note")),
    (3, ("spec", "template", "spec", "containers", 0, "image")),
    ("config", ("metadata", "name")),
)


def as_placed(hostile: Hostile, slot: tuple[Any, tuple[Any, ...]]) -> Hostile:
    """Where a key goes, a collection is refused as one at its first event (before its depth counts), and
    a scalar of over 1024 characters as a syntax error."""
    if slot[1][-1] != "<key>" or not hostile.error:
        return hostile
    words = hostile.error
    if hostile.yaml.startswith(("[", "{", "&")):
        words += ("unhashable key",)
    if len(hostile.yaml) > 1024:  # YAML's bound on an implicit key: a syntax error before the value is read
        words += ("could not find expected ':'",)
    return Hostile(hostile.kind, hostile.yaml, words)


def place(root: dict[str, Any], slot: tuple[Any, tuple[Any, ...]]) -> None:
    where, path = slot
    node = root.setdefault(
        "functionConfig", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "f"}}
    )
    if where != "config":
        node = root["items"][where]
    for key in path[:-1]:
        node = node.setdefault(key, {}) if isinstance(node, dict) else node[key]
    if path[-1] == "<key>":
        node[SLOT] = "v"
    else:
        node[path[-1]] = SLOT


def document(name: str, hostile: Hostile, slot: tuple[Any, tuple[Any, ...]], stream: bool) -> tuple[str, str]:
    """(input text, functionConfig text for --fn-config or "") with the hostile value in the slot."""
    root: dict[str, Any] = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
                            "items": copy.deepcopy(seed_items())}  # fmt: skip
    config = seed_config(load(name))
    if config is not None:
        root["functionConfig"] = config
    place(root, slot)
    if stream:
        config_text = dump_fast(root.pop("functionConfig")) if "functionConfig" in root else ""
        text = dump_all_fast(root["items"])
    else:
        text, config_text = dump_fast(root), ""
    return text.replace(SLOT, hostile.yaml), config_text.replace(SLOT, hostile.yaml)


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str


def run_function(name: str, text: str, config: str, mode: str, tmp: Path) -> Ran:
    args = ["--yaml", mode]
    if config:
        (tmp / "fn.yaml").write_text(config, encoding="utf-8", errors="surrogateescape")
        args += ["--fn-config", str(tmp / "fn.yaml")]
    out, err = io.StringIO(), io.StringIO()
    code = load(name).main(args, io.StringIO(text), out, err)
    return Ran(code, out.getvalue(), err.getvalue())


def check(ran: Ran, hostile: Hostile, stream: bool, usage_code: int = 1) -> None:
    """The contract every entry point keeps, whatever the value."""
    inert(ran.err, "stderr")
    assert "Traceback" not in ran.err and "internal error" not in ran.err + ran.out, ran.err[-500:]
    lines = ran.err.splitlines()
    if hostile.error:
        assert ran.code in (1, usage_code), (ran.code, ran.err[-300:])
        assert len(lines) == 1 and any(word.lower() in lines[0].lower() for word in hostile.error), lines[:3]
    else:
        assert ran.code in (0, 1), (ran.code, ran.err[-300:])
    if stream and ran.code:
        assert ran.out == "", "a plain stream that fails writes nothing"


CHILD_VALUES = [
    Hostile("deep alias", f"[&h {nest(60, 'mixed', 'x')}, {nest(60, 'mixed', '*h')}]", DEPTH),
    Hostile("hostile text", quoted("j\x1b]0;PWNED\x07\r\n::add-mask::x\n##vso[task.complete]\u202e\x9b")),
    Hostile("huge integer", "9" * 5000, ("64-bit",)),
]


values = st.one_of(input_errors(), data_values())


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(FUNCTIONS),
    values,
    st.sampled_from(SLOTS),
    st.booleans(),
    st.sampled_from(("fast", "fidelity")),
)
@example("set-image", CHILD_VALUES[0], SLOTS[1], False, "fidelity")  # 120 levels through an alias
@example("validate-jobs", CHILD_VALUES[1], SLOTS[0], False, "fidelity")  # finding 13's Job name
def test_every_function_takes_any_hostile_value(
    name: str, hostile: Hostile, slot: tuple[Any, tuple[Any, ...]], stream: bool, mode: str
) -> None:
    hostile = as_placed(hostile, slot)
    with tempfile.TemporaryDirectory() as tmp:
        text, config = document(name, hostile, slot, stream)
        ran = run_function(name, text, config, mode, Path(tmp))
    # --fn-config that cannot be read is a usage error (exit 2), reported on one line too
    check(ran, hostile, stream, usage_code=2 if config and slot[0] == "config" else 1)
    if not stream and ran.out:
        reader = mode if len(ran.out) < Limits().max_fidelity_bytes else "fast"  # ruamel reads 1 MiB at most
        assert output_problems(ran.out, ran.code, reader, text) == []  # type: ignore[arg-type]


# --- child processes: `krmfn fn NAME` and `krmfn-NAME` -----------------------------------------------------


def child_runs() -> list[tuple[str, str, Hostile]]:
    functions = FUNCTIONS if LONG else FUNCTIONS[:1] + FUNCTIONS[-1:]
    values = CHILD_VALUES if LONG else CHILD_VALUES[:2]
    return [
        (name, how, value) for name in functions for how in ("krmfn fn", "console script") for value in values
    ]


def test_the_console_scripts_and_krmfn_fn_take_hostile_values_in_child_processes() -> None:
    """The real edges: stdin bytes in, stdout and stderr bytes out, the process's exit code."""
    started = []
    for name, how, value in child_runs():
        text, _ = document(name, value, SLOTS[0], stream=False)
        command = [PYTHON, "-m", "krmfn.cli", "fn", name] if how == "krmfn fn" else [
            str(Path(sys.executable).parent / f"krmfn-{name}")]  # fmt: skip
        pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
        proc = subprocess.Popen(command, cwd=ROOT, env=cli_env(), **pipes)  # type: ignore[call-overload]
        started.append((name, how, value, text, proc))
    for name, how, value, text, proc in started:
        out, err = proc.communicate(text.encode("utf-8", "surrogateescape"), timeout=120)
        ran = Ran(proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "surrogateescape"))
        inert(err, f"{how} {name} stderr")
        check(ran, value, stream=False)


# --- krmfn render and --in-place: a package holding the value, beside symlinks to outside -------------------


def pipeline_files() -> dict[str, str]:
    """A Kptfile running every function, each with its documented example config (local config)."""
    files, entries = {}, []
    for name in FUNCTIONS:
        config = seed_config(load(name)) or {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name},
        }
        config.pop("inputsFrom", None)  # the example's ConfigMap is not in the package
        if name == "set-steps":  # one step: the example's ordering rules would fail the seed package
            config = {"apiVersion": config["apiVersion"], "kind": "SetSteps", "metadata": {"name": "steps"},
                      "steps": [{"name": "deploy"}], "defaultStep": "deploy"}  # fmt: skip
        config["metadata"]["annotations"] = {"config.kubernetes.io/local-config": "true"}
        files[f"fn-{name}.yaml"] = dump_fast(config)
        entries.append((name, f"  - exec: krmfn-{name}\n    configPath: fn-{name}.yaml\n"))
    mutators = "".join(e for n, e in entries if n != "validate-jobs")
    validators = "".join(e for n, e in entries if n == "validate-jobs")
    files["Kptfile"] = ("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: pkg\npipeline:\n"
                        f"  mutators:\n{mutators}  validators:\n{validators}")  # fmt: skip
    return files


@contextlib.contextmanager
def hostile_package(hostile: Hostile, slot: tuple[Any, tuple[Any, ...]]) -> Iterator[tuple[Path, Path]]:
    base = Path(tempfile.mkdtemp(prefix="krmfn-hostile-"))
    try:
        outside, root = base / "outside", base / "pkg"
        outside.mkdir()
        (outside / "secret.yaml").write_text("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n")
        root.mkdir()
        for name, text in pipeline_files().items():
            (root / name).write_text(text)
        text, _ = document("set-image", hostile, slot if slot[0] != "config" else SLOTS[0], stream=True)
        (root / "app.yaml").write_text(text, encoding="utf-8", errors="surrogateescape")
        links = {"link": "..", "out": str(outside), "file.yaml": str(outside / "secret.yaml"), "loop": "loop"}
        for name, target in links.items():
            (root / name).symlink_to(target)
        yield base, root
    finally:
        shutil.rmtree(base)


def run_command(argv: list[str]) -> Ran:
    return Ran(*krmfn_cli(argv))


def tree(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*"))
            if p.is_file() and not any(part.is_symlink() for part in [p, *p.parents])}  # fmt: skip


@settings(max_examples=examples(10), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values, st.sampled_from(SLOTS[:-1]), st.booleans())
def test_krmfn_render_takes_any_hostile_value_and_stays_in_the_package(
    hostile: Hostile, slot: tuple[Any, tuple[Any, ...]], in_place: bool
) -> None:
    hostile = as_placed(hostile, slot)
    with hostile_package(hostile, slot) as (base, root):
        before, package_before = tree(base / "outside"), tree(root)
        with Watch([base, base / "outside"]) as watch:
            ran = run_command(["render", str(root), *(["--in-place"] if in_place else [])])
            seen = [e for e in watch.events() if not (e[0] == base and e[1] == "pkg")]
        assert seen == [] and tree(base / "outside") == before, seen
        inert(ran.err, "stderr")
        assert "Traceback" not in ran.err and "internal error" not in ran.err, ran.err[-500:]
        assert ran.code in (0, 1), ran.err[-300:]
        if hostile.error:
            lines = ran.err.splitlines()
            assert ran.code == 1 and len(lines) == 1 and any(w in lines[0] for w in hostile.error), lines[:3]
        if ran.code:
            assert ran.out == "" and tree(root) == package_before, (
                "a failed render printed or wrote something"
            )


# --- krmfn export -----------------------------------------------------------------------------------------


@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values, st.sampled_from(SLOTS[:-1]), st.sampled_from(("argocd", "resourceset")))
def test_krmfn_export_takes_any_hostile_value(
    hostile: Hostile, slot: tuple[Any, tuple[Any, ...]], engine: str
) -> None:
    hostile = as_placed(hostile, slot)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rendered.yaml"
        text, _ = document("set-steps", hostile, slot, stream=True)
        path.write_text(text, encoding="utf-8", errors="surrogateescape")
        extra = ["--name", "shop", "-n", "apps", "--allow-secrets"] if engine == "resourceset" else []
        ran = run_command(["export", engine, "-f", str(path), *extra])
    inert(ran.err, "stderr")
    assert "Traceback" not in ran.err, ran.err[-500:]
    assert ran.code in (0, 1), ran.err[-300:]
    lines = ran.err.splitlines()
    if hostile.error:
        assert ran.code == 1 and len(lines) == 1 and any(w in lines[0] for w in hostile.error), lines[:3]
    if ran.code:
        assert ran.out == "" and len(lines) == 1, "a failed export prints nothing and says why on one line"


@pytest.mark.parametrize("name", FUNCTIONS)
def test_an_input_over_the_size_limit_is_one_line_for_every_function(name: str) -> None:
    hostile = Hostile("huge string", "x" * (13 * 1024 * 1024), ("KRMFN_MAX_INPUT_BYTES",))
    with tempfile.TemporaryDirectory() as tmp:
        for stream in (False, True):
            text, config = document(name, hostile, SLOTS[1], stream)
            check(run_function(name, text, config, "fidelity", Path(tmp)), hostile, stream)
