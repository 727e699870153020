"""The functions' command line (krmfn/sdk/cliargs.py, argparse): FILE arguments instead of stdin, --quiet,
usage errors as one line, and the pre-commit hook this repository offers (.pre-commit-hooks.yaml)."""

from __future__ import annotations

import io
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from krmfn.functions.validate_jobs import FUNCTION as VALIDATE_JOBS
from krmfn.registry import CANONICAL_ORDER, load
from krmfn.yaml.io import dump_all_fast

ROOT = Path(__file__).resolve().parent.parent


def job(name: str, restart_policy: str = "Never") -> dict[str, object]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "backoffLimit": 1,
            "template": {
                "spec": {"restartPolicy": restart_policy, "containers": [{"name": "c", "image": "x:1"}]}
            },
        },
    }


def run(argv: list[str], stdin: str = "") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = VALIDATE_JOBS.main(argv, stdin=io.StringIO(stdin), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_files_are_read_as_one_stream_instead_of_stdin(tmp_path: Path) -> None:
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text(dump_all_fast([job("one")]))
    second.write_text(dump_all_fast([job("two")]).rstrip("\n"))  # no final newline
    code, out, _ = run([str(first), str(second)], stdin="not: read")
    assert code == 0
    assert [d["metadata"]["name"] for d in yaml.safe_load_all(out) if d] == ["one", "two"]


def test_quiet_reports_on_stderr_and_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(dump_all_fast([job("broken", restart_policy="Always")]))
    code, out, err = run(["--quiet", str(bad)])
    assert (code, out) == (1, "")
    assert "Job broken" in err and "restartPolicy" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--frobnicate"], "unknown argument '--frobnicate'"),
        (["--yaml"], "argument --yaml: expected one argument"),
        (["--fn"], "unknown argument '--fn'"),  # no abbreviations: --fn is not --fn-config
        (["/nonexistent/x.yaml"], "/nonexistent/x.yaml: cannot read"),
        (["--frob\x1b[31m"], "\\x1b"),  # a terminal escape in an argument is shown, not sent
    ],
)
def test_usage_errors_are_one_line_and_exit_2(argv: list[str], message: str) -> None:
    code, out, err = run(argv)
    assert (code, out) == (2, "")
    assert message in err
    assert err.count("\n") == 1 and "\x1b" not in err


@pytest.mark.parametrize("name", list(CANONICAL_ORDER))
def test_every_function_takes_the_same_arguments(name: str, tmp_path: Path) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(dump_all_fast([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}]))
    out, err = io.StringIO(), io.StringIO()
    code = load(name).main(["--quiet", "--yaml", "fidelity", str(path)], stdin=io.StringIO(""), stdout=out,
                           stderr=err)  # fmt: skip
    assert code in (0, 1), err.getvalue()  # some need a config; none may call it a usage error
    assert out.getvalue() == ""


def test_the_pre_commit_hook_runs_the_installed_console_script(tmp_path: Path) -> None:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert [h["id"] for h in hooks] == ["krmfn-validate-jobs"]
    hook = hooks[0]
    assert hook["language"] == "python" and hook["entry"] in scripts
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text(dump_all_fast([job("fine")]))
    bad.write_text(dump_all_fast([job("broken", restart_policy="Always")]))
    entry = str(Path(sys.executable).parent / hook["entry"])
    # pre-commit appends the staged files to entry + args
    passed = subprocess.run([entry, *hook["args"], str(good)], capture_output=True, text=True, check=False)
    assert (passed.returncode, passed.stdout, passed.stderr) == (0, "", "")
    failed = subprocess.run([entry, *hook["args"], str(good), str(bad)], capture_output=True, text=True,
                            check=False)  # fmt: skip
    assert failed.returncode == 1 and failed.stdout == ""
    assert "Job broken" in failed.stderr and "fine" not in failed.stderr


@pytest.mark.parametrize("name", ["function", "render"])
def test_no_arguments_parse_as_argparse_parses_them(name: str) -> None:
    """Without arguments (how kpt starts a function) argparse is not built: each destination takes its
    default, exactly what argparse would have given."""
    from krmfn import render
    from krmfn.sdk.function import parser_of

    parser = parser_of("set-image") if name == "function" else render.parser()
    assert vars(parser.parse([])) == vars(parser.argparse().parse_args([]))
    assert vars(parser.parse(["--help"]))["help"] is True


def test_a_function_run_without_arguments_does_not_import_argparse() -> None:
    code = (
        "import io, sys; from krmfn.functions.validate_jobs import FUNCTION; "
        "FUNCTION.main([], io.StringIO(''), io.StringIO(), io.StringIO()); "
        "print('argparse' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
