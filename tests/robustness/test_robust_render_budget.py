"""One budget for a whole render: what render-inputs' expressions build in total is bounded, in output
characters (KRMFN_MAX_RENDER_BYTES, 16 MiB) and in work, so a small manifest cannot produce gigabytes.

Each expression was bounded on its own (256 KiB) and their sum was not: ``<< 'x' * 87000 * 3 >>`` (21
characters, no inputs) builds 261 KB, and a 32 KB manifest produced 261 MB in 40 s at 773 MB of RSS.
Generated renders whose total would pass the budget (repetition, concatenation, filters, astral
characters, whole values, keys, many resources, nested packages under ``krmfn render``) run in a child
process whose peak RSS is read from ``wait4``: each must end with the budget's error (exit 1, one
stderr line naming the limit), no partial output, and a peak under the 1 GiB ceiling of docs/limits.md.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from krmfn.functions.render_inputs import FUNCTION
from krmfn.limits import Limits
from krmfn.yaml.io import dump_all_fast, dump_fast, load_all_fast
from robustness.budget import PROFILE_ENV, examples
from robustness.harness import ONE_GIB, PYTHON, ROOT, cli_env

BUDGET = 8 * 1024 * 1024  # KRMFN_MAX_RENDER_BYTES' default (test_the_budget_is_documented checks it)
WORK = BUDGET * 1024  # steps: Limits.RENDER_STEPS_PER_BYTE per character
BIG = "a" * 200_000  # an input within every per-expression bound
# (expression, characters it puts into the manifest)
SHAPES = {
    "repetition": ("<< 'x' * 87000 * 3 >>", 261_000),
    "astral": ("<< '\U0001f600' * 87000 * 3 >>", 261_000),  # four bytes a character, in Python and UTF-8
    "concatenation": ("<< inputs.big ~ inputs.big[:50000] >>", 250_000),
    "replace": ("<< inputs.big[:120000] | replace('a', 'ab') >>", 240_000),
    "base64": ("<< inputs.big[:190000] | b64enc >>", 253_336),
    "toYaml": ("<< inputs.items | toYaml >>", 0),  # measured below
    "whole value": ("<< inputs.items >>", 0),
}
ITEMS = ["b" * 60_000] * 4  # 240 KB as a value


@dataclass(frozen=True)
class Case:
    shape: str
    where: str  # data, annotation, key, env, secret
    stream: bool


def expression_size(shape: str) -> int:
    size = SHAPES[shape][1]
    if size:
        return size
    return sum(map(len, ITEMS)) + 8 * len(ITEMS)


def resource(case: Case, index: int) -> dict[str, object]:
    text = SHAPES[case.shape][0]
    meta: dict[str, object] = {"name": f"r{index}"}
    if case.where == "annotation" and case.shape != "whole value":
        meta["annotations"] = {"example.com/a": text}
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}
    if case.where == "key" and case.shape not in ("whole value", "toYaml"):
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {text: "v"}}
    if case.where == "env":
        container = {"name": "c", "image": "i", "env": [{"name": "E", "value": text}]}
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": [container]}}
    if case.where == "secret":
        return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "stringData": {"a": text}}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"a": text}}


def config(render_secrets: bool = False) -> dict[str, object]:
    return {"apiVersion": "fn.krmfn.dev/v1alpha1", "kind": "RenderInputs", "metadata": {"name": "r"},
            "inputs": {"big": BIG, "items": ITEMS}, "renderSecrets": render_secrets}  # fmt: skip


def over_budget(case: Case) -> list[dict[str, object]]:
    count = BUDGET // expression_size(case.shape) + 2  # just past the budget, however it is counted
    return [resource(case, i) for i in range(count)]


@dataclass(frozen=True)
class Measured:
    code: int
    out: bytes
    err: bytes
    peak: int
    """Peak RSS of the child, bytes."""


def run_measured(args: list[str], data: bytes = b"", env: dict[str, str] | None = None) -> Measured:
    """Run ``python -m krmfn.cli ARGS`` and read the child's own peak RSS from wait4 (not
    RUSAGE_CHILDREN, which is the largest of every child this test process ever had)."""
    with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        stdin.write(data)
        stdin.seek(0)
        proc = subprocess.Popen(
            [PYTHON, "-m", "krmfn.cli", *args],
            stdin=stdin,
            stdout=out,
            stderr=err,
            cwd=ROOT,
            env=cli_env(env),
        )
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
        out.seek(0)
        err.seek(0)
        return Measured(proc.returncode, out.read(), err.read(), usage.ru_maxrss * 1024)


def check_budget_error(run: Measured, stream: bool) -> None:
    lines = run.err.decode().splitlines()
    assert run.code == 1, (run.code, run.err[-500:])
    assert len(lines) == 1 and "KRMFN_MAX_RENDER_BYTES" in lines[0], lines[:3]
    assert run.peak < ONE_GIB, f"peak RSS {run.peak >> 20} MiB"
    if stream:
        assert run.out == b"", "a stream that fails writes nothing"
    else:
        (rl,) = list(load_all_fast(run.out.decode(), Limits(max_bytes=1 << 30)))
        assert rl["items"] == [], (
            "no partial output: the items rendered before the budget ran out are dropped"
        )


def document(case: Case, directory: Path) -> tuple[bytes, list[str]]:
    """The input and the arguments of ``krmfn fn render-inputs``: a plain stream takes its functionConfig
    from ``--fn-config``."""
    items = over_budget(case)
    render_secrets = case.where == "secret"
    if case.stream:
        path = directory / "fn.yaml"
        path.write_text(dump_fast(config(render_secrets)))
        return dump_all_fast(items).encode(), ["--fn-config", str(path)]
    rl = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": items,
          "functionConfig": config(render_secrets)}  # fmt: skip
    return dump_fast(rl).encode(), []


cases = st.builds(
    Case,
    st.sampled_from(sorted(SHAPES)),
    st.sampled_from(("data", "annotation", "key", "env", "secret")),
    st.booleans(),
)


@settings(max_examples=examples(4), deadline=None)
@given(cases)
@example(Case("repetition", "data", False))  # the finding
@example(Case("astral", "annotation", True))
def test_a_render_past_its_budget_is_one_error_within_the_memory_ceiling(case: Case) -> None:
    with tempfile.TemporaryDirectory() as directory:
        data, args = document(case, Path(directory))
        run = run_measured(["fn", "render-inputs", *args], data)
    check_budget_error(run, case.stream)


COSTLY = ("\U0001f600", "\x01", "\U000e0001", "\x85")
"""Characters that cost the most per character rendered: four bytes in Python and UTF-8, or escaped by
the YAML writers (``\\x01``, ``\\U000E0001``: ten characters for one)."""


def maximal(char: str, count: int) -> bytes:
    """A ResourceList at the input limit: ``count`` ConfigMaps rendering 261,000 ``char`` each, the rest
    of the room the costliest shape to read (a flow list of empty mappings, docs/limits.md)."""
    expression = f"<< {char!r} * 87000 * 3 >>"  # Jinja reads Python's escapes: \\x01 is one character
    items = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"r{i}"},
              "data": {"a": expression}} for i in range(count)]  # fmt: skip
    text = dump_fast({"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": items,
                      "functionConfig": config()})  # fmt: skip
    room = Limits().max_bytes - len(text) - 16
    return (text + "extra: [" + "{}," * (room // 3 - 1) + "{}]\n").encode()


# Each run reads 12 MiB at the input limit (tens of seconds): the quick profile runs the costliest case,
# within the budget; KRMFN_HYPOTHESIS_PROFILE=long runs every character on both paths, within and past.
CEILING = (
    list(itertools.product(COSTLY, ("fast", "fidelity"), (True, False)))
    if os.environ.get(PROFILE_ENV) == "long"
    else [("\U0001f600", "fidelity", True)]  # 912 MiB, the costliest measured
)


@pytest.mark.parametrize(("char", "mode", "within"), CEILING)
def test_a_maximal_input_rendering_its_whole_budget_stays_under_1_gib(
    char: str, mode: str, within: bool
) -> None:
    """The ceiling of docs/limits.md with the budget spent: just within it (rendered and written, exit 0)
    or just past it (the budget's error), beside an input at its own limit."""
    count = BUDGET // 261_000 + (-1 if within else 2)
    run = run_measured(["fn", "render-inputs", "--yaml", mode], maximal(char, count))
    assert run.peak < ONE_GIB, f"peak RSS {run.peak >> 20} MiB"
    if within:
        assert run.code == 0, run.err[-300:]
    else:
        check_budget_error(run, stream=False)


def test_the_work_of_a_render_is_bounded_even_when_it_outputs_little() -> None:
    """Expressions that build a lot and keep a character each: the output budget never fills, the work
    budget does (KRMFN_MAX_RENDER_BYTES set small, so the test spends a second, not ten)."""
    text = "<< (inputs.big | replace('a', 'b') | upper) | trunc(1) >>"
    items = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}"}, "data": {"a": text}}
             for i in range(3000)]  # fmt: skip
    rl = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": items,
          "functionConfig": config()}  # fmt: skip
    run = run_measured(["fn", "render-inputs"], dump_fast(rl).encode(), {"KRMFN_MAX_RENDER_BYTES": "262144"})
    check_budget_error(run, stream=False)
    assert b"steps of work" in run.err


def test_compiling_many_distinct_expressions_is_work_too() -> None:
    sums = ["<< " + " + ".join(["1"] * 120) + f" + {i} >>" for i in range(2000)]  # each compiled anew
    items = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}"}, "data": {"a": text}}
             for i, text in enumerate(sums)]  # fmt: skip
    rl = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": items,
          "functionConfig": config()}  # fmt: skip
    run = run_measured(["fn", "render-inputs"], dump_fast(rl).encode(), {"KRMFN_MAX_RENDER_BYTES": "65536"})
    check_budget_error(run, stream=False)


def test_one_budget_for_every_pipeline_of_a_krmfn_render(tmp_path: Path) -> None:
    """Three nested packages, each rendering 3/8 of the budget (within it on its own): together past it."""
    kptfile = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: {name}\npipeline:\n  mutators:\n" \
              "  - exec: krmfn-render-inputs\n    configPath: fn.yaml\n"  # fmt: skip
    fn = dump_fast({**config(), "metadata": {"name": "r", "annotations": {
        "config.kubernetes.io/local-config": "true"}}})  # fmt: skip
    per_package = BUDGET * 3 // 8 // 261_000 + 1
    for name in ("a", "b", "c"):
        package = tmp_path / "root" / name
        package.mkdir(parents=True)
        (package / "Kptfile").write_text(kptfile.format(name=name))
        (package / "fn.yaml").write_text(fn)
        case = Case("repetition", "data", True)
        (package / "cms.yaml").write_text(dump_all_fast([resource(case, i) for i in range(per_package)]))
    (tmp_path / "root" / "Kptfile").write_text(kptfile.format(name="root").split("pipeline:")[0])
    run = run_measured(["render", str(tmp_path / "root")])
    assert run.code == 1 and run.out == b"", run.err[-300:]
    lines = run.err.decode().splitlines()
    assert len(lines) == 1 and "KRMFN_MAX_RENDER_BYTES" in lines[0], lines
    assert run.peak < ONE_GIB


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_render_within_the_budget_still_renders(shape: str) -> None:
    """Half the output budget (in process): every expression rendered, no error. toYaml's emitter is
    pure Python (2,500 steps a character): a tenth of the work budget's worth of it."""
    case = Case(shape, "data", False)
    size = BUDGET // 2 if shape != "toYaml" else WORK // 10 // 2500
    items = [resource(case, i) for i in range(size // expression_size(shape))]
    rl = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": items,
          "functionConfig": config()}  # fmt: skip
    out, code = FUNCTION.process(dump_fast(rl), "fast")
    assert code == 0, out[-500:]


def test_the_budget_is_documented() -> None:
    limits = Limits()
    assert (
        limits.max_render_bytes == BUDGET and limits.max_render_bytes * Limits.RENDER_STEPS_PER_BYTE == WORK
    )
    text = (ROOT / "docs" / "limits.md").read_text()
    assert "KRMFN_MAX_RENDER_BYTES" in text and str(BUDGET) in text
