"""The package's import graph, read from the source (every import: at module level, in a function, under
TYPE_CHECKING): no circle anywhere in krmfn/, ARCHITECTURE.md names every module, and none is over
MAX_LINES lines.

import-linter (pyproject.toml) checks the layers; a circle inside one layer or one wing, which its
contracts allow, is caught here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "krmfn"
MAX_LINES = 450  # RULES.md: small modules, each readable whole


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _target(name: str, modules: dict[str, Path]) -> str | None:
    """The module of krmfn an imported name lives in (``krmfn.a.b.c`` is module ``krmfn.a.b`` if there is
    no module ``c``), or None for another package."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    found: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            names = [f"{base}.{alias.name}" for alias in node.names]
        for name in names:
            target = _target(name, modules)
            if target is not None and target != module:
                found.add(target)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for start, edges_of_start in graph.items():
        if start in index:
            continue
        work = [(start, iter(sorted(edges_of_start)))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        circles.append(sorted(component))
    return circles


def test_the_graph_is_read_whole() -> None:
    """The reader sees lazy and TYPE_CHECKING imports (the circles of issue 31 were all of that kind)."""
    graph = _graph()
    assert "krmfn.runner.cluster.kube" in graph["krmfn.runner.commands.cli"]  # imported in a function
    assert "krmfn.runner.plan" in graph["krmfn.runner.cluster.api"]  # imported under TYPE_CHECKING


def test_the_circle_finder_finds_circles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}, "f": set()}
    assert _circles(graph) == [["a", "b", "c"]]


def test_no_import_circle_in_the_package() -> None:
    graph = _graph()
    circles = _circles(graph)
    described = ["; ".join(f"{a} -> {b}" for a in c for b in sorted(graph[a] & set(c))) for c in circles]
    assert not circles, "import circles: " + " | ".join(described)


def _blocks(text: str) -> list[str]:
    """The paragraphs and list items of a Markdown text."""
    return [b for b in re.split(r"\n\s*\n|\n(?=\s*(?:-|\d+\.) )", text) if b.strip()]


def _mentions(block: str, name: str) -> bool:
    return re.search(r"(?<![\w.])" + re.escape(name) + r"(?![\w])", block) is not None


def _named(path: Path, blocks: list[str]) -> bool:
    """A top-level module is named by its file name; any other by one paragraph or list item that names
    its folder (``runner/engine/`` or ``engine/``) and its file (``jobs.py``, or ``engine/jobs.py``); a
    package by its folder."""
    parts = path.relative_to(PACKAGE).parts
    if parts == ("__init__.py",):
        return True
    if len(parts) == 1:
        return any(_mentions(b, parts[0]) for b in blocks)
    folders = ["/".join(parts[i:-1]) + "/" for i in range(len(parts) - 1)]
    if parts[-1] == "__init__.py":
        return any(_mentions(b, f) for b in blocks for f in folders)
    return any(
        _mentions(b, f + parts[-1]) or (_mentions(b, f) and _mentions(b, parts[-1]))
        for b in blocks
        for f in folders
    )


def test_the_naming_rule() -> None:
    blocks = _blocks(
        "- **Engine** (`runner/engine/`): `jobs.py` (Job policy)\n- `cluster/api.py`\n\nsteps.py"
    )
    assert _named(PACKAGE / "runner/engine/jobs.py", blocks)
    assert _named(PACKAGE / "runner/cluster/api.py", blocks)
    assert _named(PACKAGE / "steps.py", blocks)
    assert not _named(PACKAGE / "runner/engine/waiter.py", blocks)
    assert not _named(PACKAGE / "runner/cluster/jobs.py", blocks)  # jobs.py is named with another folder


def test_architecture_names_every_module() -> None:
    blocks = _blocks((ROOT / "ARCHITECTURE.md").read_text())
    missing = [str(p.relative_to(PACKAGE)) for p in _modules().values() if not _named(p, blocks)]
    assert not missing, f"ARCHITECTURE.md does not name: {', '.join(missing)}"


def _too_long(paths: list[Path], limit: int, root: Path = PACKAGE) -> list[str]:
    """The modules of ``paths`` over ``limit`` lines, with their length."""
    found = []
    for path in paths:
        lines = len(path.read_text().splitlines())
        if lines > limit:
            found.append(f"{path.relative_to(root)} ({lines})")
    return found


def test_the_length_rule(tmp_path: Path) -> None:
    (tmp_path / "short.py").write_text("x = 1\n" * 3)
    (tmp_path / "long.py").write_text("x = 1\n" * 4)
    assert _too_long(sorted(tmp_path.glob("*.py")), 3, tmp_path) == ["long.py (4)"]


def test_no_module_is_over_the_line_limit() -> None:
    long = _too_long(list(_modules().values()), MAX_LINES)
    assert not long, f"modules over {MAX_LINES} lines (split them along a seam): {', '.join(long)}"
