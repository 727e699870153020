"""Every ``krmfn.dev/`` annotation name is spelled in one module of krmfn/ (one place for each concept).

A name written out again in a second module drifts: validate-jobs once read the step annotations from its
own copies, set-steps wrote them from others, and the Flux Operator's aliases stood in five modules. Each
string of the form ``krmfn.dev/<name>`` outside a docstring, in any module, counts; a module that needs
the name imports it from k8s/annotations.py (a name only one module reads may stay there).
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAME = re.compile(r"krmfn\.dev/[a-z0-9][a-z0-9-]*")


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def spelled(sources: dict[str, str]) -> dict[str, set[str]]:
    """Each annotation name written as a whole string (not in a docstring or a message), and the modules
    that write it."""
    where: dict[str, set[str]] = defaultdict(set)
    for module, source in sources.items():
        tree = ast.parse(source)
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            text = node.value if isinstance(node, ast.Constant) and id(node) not in docs else None
            if isinstance(text, str) and NAME.fullmatch(text):
                where[text].add(module)
    return where


def test_the_rule_finds_a_name_spelled_in_two_modules_and_skips_docstrings_and_messages() -> None:
    found = spelled(
        {
            "a.py": 'STEP = "krmfn.dev/step"\nWAIT = "krmfn.dev/wait"\n',
            "b.py": '"""Reads ``krmfn.dev/wait``."""\nX = {"krmfn.dev/step": 1}\n'
            'Y = f"set krmfn.dev/wait: {1}"\n',
        }
    )
    assert found == {"krmfn.dev/step": {"a.py", "b.py"}, "krmfn.dev/wait": {"a.py"}}


def test_every_krmfn_annotation_name_is_spelled_in_one_module() -> None:
    sources = {str(p.relative_to(ROOT)): p.read_text() for p in sorted((ROOT / "krmfn").rglob("*.py"))}
    found = spelled(sources)
    assert len(found) >= 25, sorted(found)  # the reader sees the names krmfn has (29 on 2026-12-04)
    twice = {name: sorted(modules) for name, modules in found.items() if len(modules) > 1}
    assert twice == {}
