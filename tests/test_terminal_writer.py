"""Every line krmfn writes for a person goes through one writer, ``krmfn.terminal`` (docs/security.md R5).

A scan of every module's syntax tree finds each write to a stream that can be a terminal or a CI log
(``sys.stdout``/``sys.stderr`` and the names the commands give them: ``stdout``, ``stderr``, ``out``,
``err``, ``stream``, ``self.out``), every ``print`` and ``os.write``, and every ``logging`` or ``warnings``
call. Outside ``krmfn/terminal.py`` the only raw writes allowed are the machine-readable outputs and
constant texts listed in ``RAW`` with the reason each is safe; anything else, or a listed write that is
gone, fails. So a new message cannot skip the escape (``krmfn export``'s warning and the functions'
results on stderr once did: ``error: Job j\\x1b]0;PWNED\\x07`` changed the terminal's title).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STREAMS = re.compile(r"^(sys\.(stdout|stderr)(\..*)?|stdout|stderr|out|err|stream|self\.out|self\.stream)$")

# (module, enclosing function, start of the call as written) -> why the raw write is safe
RAW = {
    ("krmfn/cli.py", "main", "sys.stdout.write(USAGE.format("): "constant help page (command names)",
    ("krmfn/cli.py", "main", "sys.stderr.write(USAGE.format("): "constant usage block",
    ("krmfn/cli.py", "_fn", 'sys.stdout.write(f"usage: krmfn fn NAME'): "constant help page",
    ("krmfn/sdk/function.py", "run_cli", "stdout.write(help_text)"): "constant help page (config field docs)",
    ("krmfn/sdk/function.py", "run_cli", "stdout.write(outcome.text)"): "the YAML output, escaped by YAML",
    ("krmfn/render.py", "main", "out.write(HELP)"): "constant help page",
    ("krmfn/render.py", "main", "err.write(USAGE)"): "constant usage block",
    ("krmfn/render.py", "main", "out.write(stream("): "the rendered YAML stream, escaped by YAML",
    ("krmfn/export/__init__.py", "main", "sys.stdout.write(text)"): "the exported YAML, escaped by YAML",
    (
        "krmfn/runner/commands/cli.py",
        "_plan",
        "sys.stdout.write(json.dumps(",
    ): "-o json: JSON escapes, ASCII only",
    ("krmfn/runner/commands/diff_cmd.py", "_json_event", "out.write(json.dumps("): "-o json line",
    ("krmfn/runner/commands/diff_cmd.py", "_result", "out.write(json.dumps("): "-o json result line",
    ("krmfn/runner/commands/printers.py", "__call__", "self.out.write(json.dumps("): "-o json event line",
    ("krmfn/runner/commands/printers.py", "summary", "self.out.write(json.dumps("): "-o json result line",
    ("krmfn/runner/commands/status_cmd.py", "main", "sys.stdout.write(json.dumps("): "-o json report line",
    ("krmfn/runner/commands/delete_cmd.py", "main", "sys.stdout.write(json.dumps("): "-o json result line",
}


def _calls(path: Path) -> list[tuple[str, ast.Call]]:
    """(enclosing function, call) of every call in a module."""
    found: list[tuple[str, ast.Call]] = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if isinstance(child, ast.Call):
                found.append((function, child))
            visit(child, name)

    visit(ast.parse(path.read_text(encoding="utf-8")), "<module>")
    return found


_LOUD = ("warn", "debug", "info", "warning", "error", "exception", "critical", "log", "showwarning")


def raw_writes() -> tuple[dict[tuple[str, str, str], str], list[str]]:
    """The raw writes found, keyed as RAW is, and the forbidden ones, described."""
    found: dict[tuple[str, str, str], str] = {}
    forbidden: list[str] = []
    for path in sorted((ROOT / "krmfn").rglob("*.py")):
        module = path.relative_to(ROOT).as_posix()
        for function, call in _calls(path):
            func = call.func
            if not (isinstance(func, ast.Name) and func.id == "print") and not (
                isinstance(func, ast.Attribute) and func.attr in ("write", "writelines", *_LOUD)
            ):
                continue
            text = ast.unparse(call)
            where = f"{module}:{call.lineno} ({function}): {text[:90]}"
            if isinstance(func, ast.Name):
                forbidden.append(f"print: {where}")
            elif isinstance(func, ast.Attribute):
                receiver = ast.unparse(func.value)
                if receiver in ("logging", "warnings") and func.attr not in (
                    "catch_warnings",
                    "simplefilter",
                ):
                    forbidden.append(f"{receiver} writes its own lines: {where}")
                elif receiver == "os" and func.attr == "write":
                    forbidden.append(f"os.write: {where}")
                elif func.attr in ("write", "writelines") and STREAMS.match(receiver):
                    if module == "krmfn/terminal.py":
                        continue
                    key = next(
                        (k for k in RAW if k[:2] == (module, function) and text.startswith(k[2])), None
                    )
                    if key is None:
                        forbidden.append(f"a raw write to a terminal stream: {where}")
                    else:
                        found[key] = where
    return found, forbidden


def test_every_line_for_a_person_goes_through_the_one_writer() -> None:
    found, forbidden = raw_writes()
    assert forbidden == [], "write these lines with krmfn.terminal.write_line/write_lines:\n" + "\n".join(
        forbidden
    )
    stale = sorted(set(RAW) - set(found))
    assert stale == [], f"RAW lists writes that are gone: {stale}"


def test_the_scan_sees_a_raw_write(tmp_path: Path) -> None:
    """The scan is not vacuous: the sort of write the findings were is reported."""
    module = tmp_path / "m.py"
    module.write_text("import sys\ndef f(ref):\n    sys.stderr.write(f'warning: {ref}\\n')\n    print(ref)\n")
    calls = [(f, ast.unparse(c)) for f, c in _calls(module)]
    assert ("f", "sys.stderr.write(f'warning: {ref}\\n')") in calls
    assert STREAMS.match("sys.stderr") and STREAMS.match("sys.stderr.buffer") and STREAMS.match("err")
