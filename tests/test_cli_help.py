"""Every command's --help: each flag described, the exit codes, two examples and where the docs are."""

from __future__ import annotations

import argparse
import contextlib
import io
import re

import pytest

from krmfn.cli import main as krmfn_main
from krmfn.registry import CANONICAL_ORDER, load

COMMANDS = [
    [], ["fn"], ["render"], ["plan"], ["apply"], ["diff"], ["status"], ["export"], ["export", "resourceset"],
    ["export", "argocd"],
    *(["fn", name] for name in CANONICAL_ORDER),
]  # fmt: skip


def help_of(command: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        code = krmfn_main([*command, "--help"])
        assert code == 0
    return out.getvalue()


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(["krmfn", *c]))
def test_help_lists_exit_codes_two_examples_and_the_docs(command: list[str]) -> None:
    text = help_of(command)
    codes = text.split("exit codes:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert len(codes) >= 2 and all(re.match(r"  \d", line) for line in codes), codes
    examples = text.split("examples:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert len(examples) == 4 and examples[0].startswith("  # ") and examples[2].startswith("  # "), examples
    docs = re.search(r"^docs: (\S+) in the krmfn repository$", text, re.MULTILINE)
    assert docs is not None, text
    from pathlib import Path

    page = Path(__file__).resolve().parent.parent / docs.group(1).partition("#")[0]
    assert page.is_file(), page


def _parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    from krmfn.export import _parser as export_parser
    from krmfn.runner.commands.cli import parser
    from krmfn.runner.commands.status_cmd import parser as status_parser

    found = [("plan", parser("plan")), ("apply", parser("apply")), ("diff", parser("diff")),
             ("status", status_parser()), ("export", export_parser())]  # fmt: skip
    for action in found[-1][1]._actions:
        if isinstance(action, argparse._SubParsersAction):
            found += [(f"export {name}", sub) for name, sub in action.choices.items()]
    return found


@pytest.mark.parametrize(("name", "p"), _parsers(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_flag_is_described(name: str, p: argparse.ArgumentParser) -> None:
    undescribed = [
        a.option_strings or a.dest for a in p._actions if not a.help or a.help == argparse.SUPPRESS
    ]
    assert undescribed == []


@pytest.mark.parametrize("command", [["render"], ["fn"], *(["fn", n] for n in CANONICAL_ORDER)])
def test_hand_written_helps_describe_every_flag_they_accept(command: list[str]) -> None:
    text = help_of(command)
    for flag in {"render": ["--in-place", "--yaml", "--results-dir", "--help"]}.get(
        command[-1], ["--yaml", "--fn-config", "--help"]
    ):
        assert re.search(rf"^\s+(-h, )?{flag}\b.*\S", text, re.MULTILINE), (flag, text)


@pytest.mark.parametrize("name", list(CANONICAL_ORDER))
def test_function_help_never_lists_required_as_if_it_were_a_key(name: str) -> None:
    text = load(name).help_text()
    for keys in re.findall(r"keys ([^)]*)\)", text):
        assert "required" not in keys.split(", "), keys
