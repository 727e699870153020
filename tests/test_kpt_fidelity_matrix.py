"""Under kpt, every krmfn function changes only what its job changes; ``krmfn render --in-place`` writes
kpt's bytes (issue 30).

Each case (tests/kpt_fidelity_cases.py) is a package in some styles, one function and one way of passing
its config. The package is rendered three times:

1. by kpt with the function replaced by ``cat`` (a ``krmfn-<name>`` earlier on PATH that copies its
   input), under the same Kptfile or ``kpt fn eval`` command: kpt's own re-emit of the package, the
   baseline;
2. by kpt with the function: it must differ from the baseline only in the lines the function's job
   changes (``Job`` in the cases module says which, per function), never in a local-config document
   (the Kptfile, the function's config file, local-config ConfigMaps), and the function must have done
   its job; a document the writer had to write anew (its warning, "written anew") fails the case;
3. by ``krmfn render --in-place`` with the same pipeline (for a ``kpt fn eval`` case, the same function
   and config in the Kptfile): every file must be kpt's bytes, except the differences listed in
   ``KNOWN`` (docs/fidelity.md says why), each asserted to be exactly that difference.

The quick profile is a covering array (every pair of values of any two dimensions in some case);
``KRMFN_CONFORMANCE=full`` runs the whole product.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from covering import uncovered_pairs
from e2e import env, tool
from kpt_fidelity_cases import (
    CHOICES,
    MATRIX,
    QUICK,
    Case,
    Job,
    configmap_data,
    job_of,
    package_files,
    typed_text,
    valid,
)

pytestmark = pytest.mark.e2e
FULL = os.environ.get("KRMFN_CONFORMANCE") == "full"
CASES = MATRIX if FULL else QUICK
FALLBACK = "written anew"


def write(directory: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode())
    return directory


def read(directory: Path) -> dict[str, str]:
    return {
        str(p.relative_to(directory)): p.read_bytes().decode()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def _run(args: list[str], cwd: Path, path_first: Path | None = None) -> str:
    environment = env()
    if path_first is not None:
        environment["PATH"] = f"{path_first}{os.pathsep}{environment['PATH']}"
    proc = subprocess.run(
        args, cwd=cwd, env=environment, capture_output=True, text=True, timeout=300, check=False
    )
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {proc.returncode}:\n{output}")
    return output


@pytest.fixture(scope="module")
def noop_functions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory of ``krmfn-<name>`` scripts that copy stdin to stdout: kpt's no-op render."""
    directory = tmp_path_factory.mktemp("noop")
    for name in CHOICES["function"]:
        script = directory / f"krmfn-{name}"
        script.write_text(f"#!/bin/sh\nexec {shutil.which('cat')}\n")
        script.chmod(0o755)
    return directory


def kpt(case: Case, directory: Path, path_first: Path | None = None) -> str:
    if not case.by_eval:
        return _run(
            [tool("kpt"), "fn", "render", "--allow-exec", str(directory)], directory.parent, path_first
        )
    command = [tool("kpt"), "fn", "eval", "--exec", f"krmfn-{case.function}"]
    if case.config == "typed":
        config = directory.parent / f"{directory.name}-fn-config.yaml"
        config.write_text(typed_text(case, local=False))
        command += ["--fn-config", str(config), str(directory)]
    else:
        command += [str(directory), "--", *(f"{k}={v}" for k, v in configmap_data(case).items())]
    return _run(command, directory.parent, path_first)


# --- what may change ---------------------------------------------------------------------------------------

_VALUE = r"""(?:'(?:[^']|'')*'|"(?:[^"\\]|\\.)*"|[^,}\]\n]*)"""


def _documents(text: str) -> list[str]:
    return re.split(r"(?m)^---[^\n]*\n", text)


def _is_local(document: str) -> bool:
    return bool(re.search(r"(?m)^kind: Kptfile\b", document)) or (
        re.search(r"config\.kubernetes\.io/local-config: ['\"]?true", document) is not None
    )


def _strip_added_flow_entries(line: str, keys: set[str]) -> str:
    for key in keys:
        escaped = re.escape(key)
        line = re.sub(rf", {escaped}: {_VALUE}(?=[,}}])", "", line)
        line = re.sub(rf"{{{escaped}: {_VALUE}, ", "{", line)
        line = re.sub(rf"{{{escaped}: {_VALUE}}}", "{}", line)
    return line.replace(", annotations: {}", "").replace("{annotations: {}}", "{}")


def unexplained(job: Job, before: str, after: str) -> list[str]:
    """The lines of ``after`` (the function's render of one document) that its job does not explain,
    against ``before`` (the no-op render), as diff lines."""
    for old, new in job.before:
        before = before.replace(old, new)
    for pattern, replacement in job.rewrites:
        after = re.sub(pattern, replacement, after)
    added = re.compile(
        r"^\s*(?:- )?(?:annotations:|(?:" + "|".join(re.escape(k) for k in sorted(job.adds)) + r"): \S.*)$"
        if job.adds
        else r"(?!)"
    )
    old_lines = before.splitlines()
    new_lines = [_strip_added_flow_entries(line, job.adds) for line in after.splitlines()]
    problems = []
    for tag, a0, a1, b0, b1 in difflib.SequenceMatcher(
        None, old_lines, new_lines, autojunk=False
    ).get_opcodes():
        if tag == "equal":
            continue
        problems += [f"- {line}" for line in old_lines[a0:a1]]
        problems += [f"+ {line}" for line in new_lines[b0:b1] if tag != "insert" or not added.match(line)]
    return problems


def check_changes(case: Case, noop: dict[str, str], done: dict[str, str]) -> None:
    assert sorted(done) == sorted(noop), "the function created or removed files"
    job = job_of(case)
    problems = []
    for name in sorted(noop):
        before, after = _documents(noop[name]), _documents(done[name])
        assert len(before) == len(after), f"{name}: {len(before)} documents became {len(after)}"
        for number, (old, new) in enumerate(zip(before, after, strict=True)):
            where = f"{name} document {number}"
            if _is_local(old):
                if old != new:
                    problems.append(f"{where} (local config) changed:\n{_diff(old, new)}")
                continue
            lines = unexplained(job, old, new)
            if lines:
                problems.append(f"{where}: lines its job does not explain:\n" + "\n".join(lines))
    text = "".join(done[name] for name in sorted(done))
    problems += [p for p in (check(text) for check in job.done) if p]
    assert not problems, "\n".join(problems)


def _diff(a: str, b: str) -> str:
    return "\n".join(difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm="", n=1))


# --- krmfn render --in-place against kpt ------------------------------------------------------------------


def _foot_comment_twice(kpts: str, mine: str) -> tuple[str, str]:
    """kpt (go-yaml v3, when a function ran) writes a document's foot comment twice: once under the
    last node, at its indentation, then at the document's end. krmfn writes it once."""
    return re.sub(r"(?m)^ +(#[^\n]*)\n\1\n(?=---\n|\Z)", r"\1\n", kpts), mine


def _comment_in_flow(kpts: str, mine: str) -> tuple[str, str]:
    """A comment inside a flow collection written over several lines: kpt keeps it and breaks the line
    after it (``[a, # c`` / ``b]``); krmfn's emitter writes the collection on one line without it."""
    return re.sub(r", #[^\n]*\n *", ", ", kpts), mine


def _comment_after_anchor(kpts: str, mine: str) -> tuple[str, str]:
    """A comment after an anchor that opens a block mapping (``labels: &l  # c``): kpt copies it onto
    every entry of the mapping; krmfn's emitter writes it on a line of its own below the key."""
    found = re.findall(r"(?m)&\w+\n +(#[^\n]*)\n", mine)
    mine = re.sub(r"(?m)(&\w+\n) +#[^\n]*\n", r"\1", mine)
    for comment in set(found):
        kpts = kpts.replace(" " + comment + "\n", "\n")
    return kpts, mine


KNOWN = (_foot_comment_twice, _comment_in_flow, _comment_after_anchor)
"""The differences left between ``krmfn render --in-place`` and ``kpt fn render`` (docs/fidelity.md,
"Known differences"): each rewrites exactly that difference away, on kpt's side or krmfn's."""


def compare_with_kpt(case: Case, mine: dict[str, str], kpts: dict[str, str]) -> None:
    skip = {"Kptfile", "fn-config.yaml"} if case.by_eval else set()  # the pipeline krmfn ran instead
    differ = []
    for name in sorted((set(mine) | set(kpts)) - skip):
        theirs, ours = kpts.get(name, ""), mine.get(name, "")
        for known in KNOWN:
            theirs, ours = known(theirs, ours)
        if theirs != ours:
            differ.append(f"{name}:\n{_diff(theirs, ours)}")
    assert not differ, "krmfn render --in-place differs from kpt fn render:\n" + "\n".join(differ)


# --- the matrix -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_under_kpt_a_function_changes_only_its_lines(
    case: Case, tmp_path: Path, noop_functions: Path
) -> None:
    source = package_files(case)
    noop = write(tmp_path / "noop", source)
    kpt(case, noop, path_first=noop_functions)
    done = write(tmp_path / "done", source)
    output = kpt(case, done)
    assert FALLBACK not in output, output
    check_changes(case, read(noop), read(done))

    mine = write(tmp_path / "krmfn", package_files(case, eval_as_render=True))
    output = _run(["krmfn", "render", "--in-place", str(mine)], tmp_path)
    assert output == "", output  # no warning, no error
    compare_with_kpt(case, read(mine), read(done))


def test_the_quick_profile_covers_every_pair() -> None:
    assert uncovered_pairs([dataclasses.asdict(c) for c in QUICK], CHOICES, valid) == set()
    for name, values in CHOICES.items():
        assert {getattr(c, name) for c in QUICK} == set(values), name
    assert len(QUICK) == 35 and len(MATRIX) == 6656


@pytest.mark.parametrize(
    ("known", "kpts", "mine"),
    [
        (_foot_comment_twice, "a: 1\nb:\n  c: 2\n  # end\n# end\n", "a: 1\nb:\n  c: 2\n# end\n"),
        (_comment_in_flow, "args: [--a, # first\n  --b]\n", "args: [--a, --b]\n"),
        (
            _comment_after_anchor,
            "labels: &l\n  app: web # which\n  tier: x # which\n",
            "labels: &l\n           # which\n  app: web\n  tier: x\n",
        ),
    ],
)
def test_each_known_difference_is_rewritten_exactly(known: Any, kpts: str, mine: str) -> None:
    theirs, ours = known(kpts, mine)
    assert theirs == ours
    assert known("a: 1  # kept\n", "a: 1  # kept\n") == ("a: 1  # kept\n", "a: 1  # kept\n")
    changed = known(kpts, mine.replace("a", "z"))  # a value that differs still differs
    assert changed[0] != changed[1]
