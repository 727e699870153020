"""krmfn/errors.py's tree holds every error krmfn defines, each under its real base class.

Every class deriving from an exception anywhere in krmfn/ is read from the source (AST): one that
derives from ``KrmfnError`` must stand in the tree under its own base; any other must be listed, with
the reason it is not a ``KrmfnError``, in the docstring's list of errors caught where they are raised.
A new error class, a moved one or a renamed base fails here until the tree says so.
"""

from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass
from pathlib import Path

import krmfn.errors

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "krmfn"
TREE_LINE = re.compile(r"^(?P<indent>[ │]*(?:├── |└── )?)(?P<name>[A-Z]\w*)\s")
CAUGHT_HEADER = "Not KrmfnError, on purpose"
CAUGHT_LINE = re.compile(r"^    (?P<name>_?[A-Z]\w*) +\((?P<where>[\w/.]+)\) +(?P<reason>\S.*)$")


@dataclass(frozen=True)
class Defined:
    name: str
    where: str
    bases: tuple[str, ...]


def _defined() -> list[Defined]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef):
                bases = tuple(
                    b.id if isinstance(b, ast.Name) else b.attr
                    for b in node.bases
                    if isinstance(b, ast.Name | ast.Attribute)
                )
                found.append(Defined(node.name, str(path.relative_to(PACKAGE)), bases))
    return found


def _builtin_exception(name: str) -> bool:
    value = getattr(builtins, name, None)
    return isinstance(value, type) and issubclass(value, BaseException)


def _exceptions() -> dict[str, Defined]:
    """Every exception class of krmfn by name; its base, for one with several, is the exception one."""
    classes = _defined()
    by_name: dict[str, list[Defined]] = {}
    for c in classes:
        by_name.setdefault(c.name, []).append(c)
    errors: dict[str, Defined] = {}
    changed = True
    while changed:
        changed = False
        for c in classes:
            if c.name not in errors and any(_builtin_exception(b) or b in errors for b in c.bases):
                errors[c.name] = c
                changed = True
    clashes = [n for n in errors if len(by_name[n]) > 1]
    assert not clashes, f"error classes defined twice under one name (the tree names each once): {clashes}"
    return errors


def _base(c: Defined, errors: dict[str, Defined]) -> str:
    return next(b for b in c.bases if b in errors or _builtin_exception(b))


def _derives_from_krmfn_error(name: str, errors: dict[str, Defined]) -> bool:
    while name in errors:
        if name == "KrmfnError":
            return True
        name = _base(errors[name], errors)
    return False


def _tree(doc: str) -> dict[str, str | None]:
    """Each name of the docstring's tree with its parent (None for the root)."""
    lines = doc.split("\n\n")[1].splitlines()  # the tree is the paragraph after the summary line
    parents: dict[str, str | None] = {}
    stack: list[tuple[int, str]] = []
    for line in lines:
        m = TREE_LINE.match(line)
        assert m, f"not a line of the tree: {line!r}"
        depth = len(m["indent"])
        while stack and stack[-1][0] >= depth:
            stack.pop()
        assert m["name"] not in parents, f"{m['name']} stands twice in the tree"
        parents[m["name"]] = stack[-1][1] if stack else None
        stack.append((depth, m["name"]))
    return parents


def _caught(doc: str) -> dict[str, tuple[str, str]]:
    """The names the docstring lists as deliberately not KrmfnError: name -> (where, reason)."""
    part = doc[doc.index(CAUGHT_HEADER) :].split("\n\n")[1]
    found = {}
    for line in part.splitlines():
        m = CAUGHT_LINE.match(line)
        assert m, f"not a line of the list: {line!r}"
        found[m["name"]] = (m["where"], m["reason"])
    return found


DOC = krmfn.errors.__doc__ or ""


def test_the_reader_sees_errors_the_grep_would_miss() -> None:
    errors = _exceptions()
    assert "HealthCheckError" in errors  # a subclass of SourceError, two modules away from Exception
    assert errors["StreamError"].bases == ("InputError",)
    assert "Interrupted" in errors and "Budget" not in errors


def test_the_tree_parser_reads_parents() -> None:
    doc = "summary\n\n    A   root\n    ├── B   b\n    │   └── C   c\n    └── D   d\n\nrest"
    assert _tree(doc) == {"A": None, "B": "A", "C": "B", "D": "A"}


def test_every_krmfn_error_stands_in_the_tree_under_its_base() -> None:
    errors = _exceptions()
    tree = _tree(DOC)
    ours = {n for n in errors if _derives_from_krmfn_error(n, errors)}
    assert sorted(ours - set(tree)) == [], "KrmfnError classes missing from krmfn/errors.py's tree"
    assert sorted(set(tree) - ours) == [], "names in the tree that are no KrmfnError class of krmfn"
    wrong = {
        n: (tree[n], _base(errors[n], errors))
        for n in ours
        if n != "KrmfnError" and tree[n] != _base(errors[n], errors)
    }
    assert not wrong, f"under the wrong parent in the tree (tree, class): {wrong}"


def test_every_other_error_is_listed_with_its_reason() -> None:
    errors = _exceptions()
    caught = _caught(DOC)
    others = {n for n in errors if not _derives_from_krmfn_error(n, errors)}
    assert sorted(others - set(caught)) == [], "errors neither KrmfnError nor listed as caught where raised"
    assert sorted(set(caught) - others) == [], "listed as not KrmfnError, but no such class (or it is one)"
    misplaced = {n: (where, errors[n].where) for n, (where, _) in caught.items() if where != errors[n].where}
    assert not misplaced, f"listed in the wrong module (list, source): {misplaced}"
