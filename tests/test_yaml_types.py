# ruff: noqa: E501  (the corpus reads best one case per line)
"""Every output path writes every string so that every reader in the chain reads it back as that string
(issue 16 item 4), and other scalars keep their types.

A generated corpus of awkward scalars (YAML 1.1 and 1.2 booleans, nulls, octal, hex, sexagesimal,
floats, .inf/.nan, timestamps, ``=``, ``<<``, leading zeros, underscores, unicode look-alikes, and
random strings over the characters numbers are made of) is written through each output path: the fast
dumper (pipes and large lists), a function process on a stream and on a kpt ResourceList, the fidelity
dumper with new text, after a round trip of quoted input and after a function rewrote the values, and
``krmfn render`` to stdout and ``--in-place``. Each output is read by PyYAML (YAML 1.1), ruamel (safe
and round-trip), krmfn's own two loaders, and the Go readers of the chain (gopkg.in/yaml.v2 as kubectl
reads through sigs.k8s.io/yaml, gopkg.in/yaml.v3 as kyaml reads, sigs.k8s.io/yaml itself), built from
the Go module proxy by tests/goyaml/build.sh. KRMFN_CONFORMANCE=full widens the random part.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import random
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml as pyyaml
from e2e import ROOT, env
from ruamel.yaml import YAML

from krmfn.k8s.kobj import set_scalar
from krmfn.limits import Limits
from krmfn.yaml import rt as yamlrt
from krmfn.yaml.io import dump_fast, load, load_all_fast

pytestmark = pytest.mark.e2e
FULL = os.environ.get("KRMFN_CONFORMANCE") == "full"

WORDS = ["y", "yes", "n", "no", "true", "false", "on", "off", "null", "nil", "none", "inf", "nan", "infinity"]
HAND = [
    *(w for word in WORDS for w in {word, word.upper(), word.capitalize()}),
    "~",
    "",
    " ",
    "=",
    "<<",
    "<",
    ">",
    "!",
    "&",
    "*",
    "%",
    "@",
    "`",
    "|",
    "-",
    "?",
    ":",
    ",",
    "[",
    "]",
    "{",
    "}",
    "#",
    "- a",
    "a: b",
    ": a",
    "#a",
    "a #b",
    " leading",
    "trailing ",
    "tab\there",
    "multi\nline",
    "'",
    '"',
    "\\",
    "0",
    "00",
    "07",
    "08",
    "09",
    "0755",
    "0o755",
    "0O755",
    "0x1F",
    "0X1F",
    "0b101",
    "0B101",
    "+0x1",
    "-0b1",
    "1_000",
    "1__0",
    "1_",
    "_1",
    "0x_1F",
    "1:20",
    "190:20:30",
    "-1:20",
    "1:20.5",
    "1.5",
    "-1.5",
    ".5",
    "1.",
    "+.5",
    "1e3",
    "1E3",
    "1e+3",
    "1e-3",
    "-1.5e-3",
    "1e1_0",
    "1_000.5",
    "6.8523015e+5",
    "685.230_15e+03",
    "0x1p-2",
    ".inf",
    "-.inf",
    "+.inf",
    ".Inf",
    ".INF",
    ".nan",
    ".NaN",
    ".NAN",
    "-.5e3",
    "99999999999999999999",
    "2024-01-01",
    "2024-1-2",
    "2001-12-14t21:59:43.10-05:00",
    "2001-12-14 21:59:43.10 -5",
    "2024-01-01 1:2:3",
    "2001-12-15T02:59:43.1Z",
    "12:30",
    "12:30:45",
    "1.0.0",
    "v1",
    "1.2.3-rc1",
    "0.0.0.0",
    "127.0.0.1",
    "\uff59",
    "\uff54\uff52\uff55\uff45",
    "\uff2e",
    "\uff11\uff12\uff13",
    "1\u066b5",
    "\u0443",
    "\u00a0",  # unicode look-alikes of letters, digits and separators, and invisible characters
    "\u200b",
    "\u2170",
    "½",
    "\u0661",
    "\uff10x1F",
]


def corpus() -> list[str]:
    rnd = random.Random(16)
    alphabet = "0123456789+-._:eExXoObBaAfFyYnN~ "
    generated = {
        "".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, 6))) for _ in range(4000 if FULL else 400)
    }
    cases = [
        w
        for word in ("yes", "no", "on", "off", "true", "null")
        for w in map("".join, itertools.product(*zip(word, word.upper(), strict=True)))
    ]
    return list(dict.fromkeys([*HAND, *cases, *sorted(generated)]))


TYPED = {"int": 3, "negative": -5, "zero": 0, "float": 1.5, "bool": True, "nothing": None, "big": 2**40}


def probe(values: list[str]) -> dict[str, Any]:
    """A custom resource no function acts on: its values and keys only travel through the writers."""
    return {
        "apiVersion": "example.com/v1",
        "kind": "Probe",
        "metadata": {"name": "probe"},
        "spec": {
            "values": {f"k{i}": v for i, v in enumerate(values)},
            "keys": dict.fromkeys(values, "v"),
            "typed": dict(TYPED),
        },
    }


# --- writers ----------------------------------------------------------------------------------------


def _quoted_source(values: list[str]) -> str:
    """The probe as a person writes it: every string double-quoted (JSON strings are YAML)."""
    doc = probe(values)
    spec = doc["spec"]
    lines = ["apiVersion: example.com/v1", "kind: Probe", "metadata:", "  name: probe", "spec:", "  values:"]
    lines += [f"    k{i}: {json.dumps(v)}" for i, v in enumerate(values)]
    lines += ["  keys:"] + [f"    {json.dumps(v)}: v" for v in values]
    lines += ["  typed:"] + [f"    {k}: {json.dumps(v)}" for k, v in spec["typed"].items()]
    return "\n".join(lines) + "\n"


def _run(argv: list[str], text: str | None = None) -> str:
    """The standard output of a krmfn command that must succeed (``text``: its standard input)."""
    proc = subprocess.run(
        argv, input=text, capture_output=True, text=True, env=env(), timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _cli(name: str, text: str) -> str:
    return _run([f"krmfn-{name}"], text)


def write_fast(values: list[str], tmp: Path) -> str:
    return dump_fast(probe(values))


def write_fast_fallback(values: list[str], tmp: Path) -> str:
    """A document holding a type only PyYAML's dumper writes (``!!binary`` bytes) takes the fallback
    dumper, which must quote as the fast one does."""
    doc = probe(values)
    doc["metadata"]["blob"] = b"\x00"
    return dump_fast(doc)


def write_stream_cli(values: list[str], tmp: Path) -> str:
    return _cli("set-config-checksum", dump_fast(probe(values)))


def write_kpt_resource_list(values: list[str], tmp: Path) -> str:
    source = _quoted_source(values).replace(
        "metadata:\n  name: probe",
        "metadata:\n  name: probe\n  annotations:\n    internal.config.kubernetes.io/seqindent: compact",
    )
    items = "\n".join("  " + line if line else line for line in source.splitlines())
    text = f"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n-{items[1:]}\n"
    return _cli("hash-job-names", text)


def write_fidelity_new(values: list[str], tmp: Path) -> str:
    return yamlrt.dump(probe(values))


def write_fidelity_round_trip(values: list[str], tmp: Path) -> str:
    return yamlrt.dump(load(_quoted_source(values), "fidelity", Limits()))


def write_fidelity_rewritten(values: list[str], tmp: Path) -> str:
    doc = load(_quoted_source(values), "fidelity", Limits())
    spec = doc["spec"]
    for key in list(spec["values"]):
        set_scalar(spec["values"], key, str(spec["values"][key]))  # as a function writes a value back
    fresh = type(spec["keys"])()  # and keys it builds anew
    for key in spec["keys"]:
        fresh[str(key)] = "v"
    spec["keys"] = fresh
    return yamlrt.dump(doc)


def _package(values: list[str], tmp: Path) -> Path:
    (tmp / "Kptfile").write_text(
        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: p}\npipeline:\n  mutators:\n  - exec: krmfn-set-config-checksum\n"
    )
    (tmp / "probe.yaml").write_text(_quoted_source(values))
    return tmp


def write_render_stdout(values: list[str], tmp: Path) -> str:
    return _run(["krmfn", "render", str(_package(values, tmp))])


def write_render_in_place(values: list[str], tmp: Path) -> str:
    directory = _package(values, tmp)
    _run(["krmfn", "render", "--in-place", str(directory)])
    return (directory / "probe.yaml").read_text()


WRITERS: dict[str, Callable[[list[str], Path], str]] = {
    "fast": write_fast,
    "fast-fallback": write_fast_fallback,
    "stream-cli": write_stream_cli,
    "kpt-resource-list-cli": write_kpt_resource_list,
    "fidelity-new-text": write_fidelity_new,
    "fidelity-round-trip": write_fidelity_round_trip,
    "fidelity-rewritten": write_fidelity_rewritten,
    "render-stdout": write_render_stdout,
    "render-in-place": write_render_in_place,
}

# --- readers ----------------------------------------------------------------------------------------


def _probes(docs: list[Any]) -> list[dict[str, Any]]:
    found = []
    for doc in docs:
        if isinstance(doc, dict) and doc.get("kind") == "ResourceList":
            found += [i for i in doc["items"] if i.get("kind") == "Probe"]
        elif isinstance(doc, dict) and doc.get("kind") == "Probe":
            found.append(doc)
    assert len(found) == 1, f"expected one Probe, got {len(found)}"
    return found


def _python_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    return type(value).__name__


def _leaves(doc: dict[str, Any]) -> dict[str, tuple[str, str]]:
    spec = doc["spec"]
    out = {f"spec.values.{k}": (_python_kind(v), str(v)) for k, v in spec["values"].items()}
    out.update({f"spec.keys.{k}": (_python_kind(k), str(v)) for k, v in spec["keys"].items()})
    out.update({f"spec.typed.{k}": (_python_kind(v), str(v)) for k, v in spec["typed"].items()})
    return out


def read_python(text: str) -> dict[str, dict[str, tuple[str, str]]]:
    readers: dict[str, Callable[[str], list[Any]]] = {
        "PyYAML (YAML 1.1)": lambda t: list(pyyaml.safe_load_all(t)),
        "ruamel safe (YAML 1.2)": lambda t: list(YAML(typ="safe", pure=True).load_all(t)),
        "ruamel round-trip": lambda t: list(YAML(typ="rt").load_all(t)),
        "krmfn fast": lambda t: list(load_all_fast(t)),
        "krmfn fidelity": lambda t: [load(d, "fidelity", Limits()) for d in t.split("\n---\n")],
    }
    found = {}
    for name, reader in readers.items():
        try:
            found[name] = _leaves(_probes(reader(text))[0])
        except Exception as err:  # a reader that cannot read the output at all is a finding too
            found[name] = {"<unreadable>": ("error", f"{type(err).__name__}: {err}")}
    return found


@functools.cache
def yaml_types() -> str:
    proc = subprocess.run(
        ["bash", str(ROOT / "tests/goyaml/build.sh")],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if proc.returncode != 0:
        raise AssertionError(
            f"tests/goyaml/build.sh failed (it needs Go and the module proxy):\n{proc.stderr}"
        )
    return proc.stdout.strip()


def read_go(text: str) -> dict[str, dict[str, tuple[str, str]]]:
    proc = subprocess.run(
        [yaml_types()], input=text, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert "errors" not in report, report["errors"]
    found = {}
    for reader in ("yaml.v2", "yaml.v3", "sigs.k8s.io/yaml"):
        docs = [
            d for d in report[reader] if any(k.startswith("spec.values.") or ".spec.values." in k for k in d)
        ]
        assert docs, f"{reader}: no Probe in the output"
        leaves = docs[0]
        prefix = next(k for k in leaves if "spec.values." in k).partition("spec.values.")[0]
        found[reader] = {
            k[len(prefix) :]: tuple(v) for k, v in leaves.items() if k.startswith(prefix + "spec.")
        }
    return found


GO = ("yaml.v2", "yaml.v3", "sigs.k8s.io/yaml")
# How each reader shows the typed values: Python readers as str() of the value; Go readers as Go
# formats it (sigs.k8s.io/yaml goes through JSON, where every number is a float64).
TYPED_PYTHON = {k: (_python_kind(v), str(v)) for k, v in TYPED.items()}
TYPED_GO = {
    "int": ("int", "3"),
    "negative": ("int", "-5"),
    "zero": ("int", "0"),
    "float": ("float", "1.5"),
    "bool": ("bool", "true"),
    "nothing": ("null", ""),
    "big": ("int", "1099511627776"),
}
TYPED_JSON = {
    **TYPED_GO,
    **{k: ("float", v) for k, (t, v) in TYPED_GO.items() if t == "int"},
    "big": ("float", "1.099511627776e+12"),
}


def expected(values: list[str], reader: str) -> dict[str, tuple[str, str]]:
    want = {f"spec.values.k{i}": ("string", v) for i, v in enumerate(values)}
    want.update({f"spec.keys.{v}": ("string", "v") for v in values})
    typed = TYPED_JSON if reader == "sigs.k8s.io/yaml" else TYPED_GO if reader in GO else TYPED_PYTHON
    want.update({f"spec.typed.{k}": v for k, v in typed.items()})
    return want


@pytest.mark.parametrize("writer", list(WRITERS))
def test_every_reader_reads_every_value_as_written(writer: str, tmp_path: Path) -> None:
    values = corpus()
    text = WRITERS[writer](values, tmp_path)
    seen = {**read_python(text), **read_go(text)}
    problems = []
    for reader, leaves in seen.items():
        want = expected(values, reader)
        if "<unreadable>" in leaves:
            problems.append(f"{reader}: cannot read the output: {leaves['<unreadable>'][1][:300]}")
            continue
        wrong = {k: (leaves.get(k), v) for k, v in want.items() if leaves.get(k) != v}
        extra = sorted(set(leaves) - set(want))
        if wrong or extra:
            sample = dict(itertools.islice(wrong.items(), 8))
            problems.append(
                f"{reader}: {len(wrong)} value(s) read otherwise, e.g. {sample}; unexpected keys {extra[:8]}"
            )
    assert not problems, f"{writer} ({len(values)} values):\n" + "\n".join(problems)


def test_the_corpus_has_what_the_issue_lists() -> None:
    values = set(corpus())
    for needed in (
        "y",
        "Y",
        "n",
        "N",
        "yes",
        "on",
        "off",
        "~",
        "0755",
        "0x1F",
        "1:20",
        "1.5",
        ".inf",
        ".nan",
        "2024-01-01",
        "=",
        "<<",
        "007"[1:],
    ):
        assert needed in values, needed
    assert len(values) > 400
