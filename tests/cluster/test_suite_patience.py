"""The control-plane tests give every step they expect to end by itself at least patience.STEP_TIMEOUT.

On a busy machine (issue 30) a 30 s step budget made a test that waits for a Job's failure see a step
timeout instead. The class is every short budget whose timeout is not the subject of its test; this
check reads every step budget written in tests/cluster/ (a ``timeout=`` or ``default_timeout=`` argument, a
``krmfn.dev/step-timeout`` value, a ``--step-timeout`` flag) and requires each one under STEP_TIMEOUT to
carry the marker that says its timeout is under test.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from krmfn.duration import parse_duration

from .patience import MARKER, STEP_TIMEOUT_SECONDS

CLUSTER_TESTS = Path(__file__).parent
NANOS = 1_000_000_000
STEP_MAKERS = frozenset({"job", "deployment", "configmap", "runs", "_meta", "until", "finish"})
"""What writes a step's budget (runner_fixtures), or a test's wait for a run's next event or its end."""


def budgets(tree: ast.AST) -> Iterator[tuple[ast.AST, ast.expr]]:
    """(the statement's node, the budget's expression) for each step budget written in ``tree``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in STEP_MAKERS:  # ``def job(..., timeout="30s")``
            arguments = node.args
            named = [*arguments.posonlyargs, *arguments.args]
            pairs = [*zip(named[len(named) - len(arguments.defaults) :], arguments.defaults, strict=True),
                     *zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)]  # fmt: skip
            for arg, default in pairs:
                if arg.arg in ("timeout", "default_timeout") and default is not None:
                    yield node, default
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg in ("timeout", "default_timeout") and _is_step_budget(node, keyword.arg):
                    yield node, keyword.value
            args = node.args
            if isinstance(node.func, ast.Name) and node.func.id == "_meta" and len(args) == 4:
                yield node, args[3]  # runner_fixtures' _meta(name, step, annotations, timeout)
            for i, flag in enumerate(args[:-1]):
                if isinstance(flag, ast.Constant) and flag.value == "--step-timeout":
                    yield node, args[i + 1]
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "krmfn.dev/step-timeout":
                    yield node, value
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if (
                    isinstance(target, ast.Subscript)
                    and isinstance(target.slice, ast.Constant)
                    and target.slice.value == "krmfn.dev/step-timeout"
                ):
                    yield node, node.value


def _is_step_budget(call: ast.Call, arg: str) -> bool:
    if arg == "default_timeout":
        return True
    name = call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, "attr", "")
    return name in STEP_MAKERS


def seconds(value: ast.expr) -> float | None:
    """The budget in seconds when it is written as a literal; None for a name (patience's, or computed)."""
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return parse_duration(value.value) / NANOS
    if isinstance(value, ast.Constant) and isinstance(value.value, int | float):
        return float(value.value)
    return None


def short_unmarked(path: Path) -> list[str]:
    source = path.read_text()
    lines = source.splitlines()
    found = []
    for node, value in budgets(ast.parse(source)):
        budget = seconds(value)
        if budget is None or budget >= STEP_TIMEOUT_SECONDS:
            continue
        first, last = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
        if not any(MARKER in line for line in lines[first - 1 : last]):
            found.append(f"{path.name}:{first}: a {budget:g}s step budget without {MARKER!r}")
    return found


def test_every_short_step_budget_in_the_control_plane_tests_is_the_subject_of_its_test() -> None:
    files = sorted(CLUSTER_TESTS.glob("*.py"))
    assert len(files) > 20, "tests/cluster/ moved: point this check at it"
    found = [problem for path in files for problem in short_unmarked(path)]
    assert not found, "\n".join(found)


def test_the_check_sees_each_way_a_budget_is_written(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "job('a', 0, timeout='30s')\n"
        "build_plan(docs, namespace=ns, default_timeout=30)\n"
        "x = {'krmfn.dev/step-timeout': '20s'}\n"
        "notes['krmfn.dev/step-timeout'] = '15s'\n"
        "krmfn('apply', docs, '--step-timeout', '60s')\n"
        f"job('b', 0, timeout='2s')  {MARKER}\n"
        "job('c', 0, timeout='10m')\n"
        "job('d', 0, timeout=STEP_TIMEOUT)\n"
        "def job(name, step=None, *, timeout='30s'): ...\n"
        "_meta(name, step, None, '30s')\n"
    )
    assert sorted(int(line.split(":")[1]) for line in short_unmarked(sample)) == [1, 2, 3, 4, 5, 9, 10]
