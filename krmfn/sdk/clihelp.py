"""The closing block of every command's ``--help``: exit codes, two examples, where the docs are.

One place, so ``krmfn``, ``krmfn plan|apply|render|export|fn`` and every ``krmfn-<function>`` end their
help the same way (tests/test_cli_help.py checks each of them).
"""

from __future__ import annotations

from collections.abc import Sequence

from krmfn.errors import DEBUG_ENV, EXIT_INTERNAL

DOCS = "{page} in the krmfn repository"
"""Where a command's documentation page is. The project has no published documentation site yet, so the
page is named by its path in the repository; when one exists, this is the one line to change."""

INTERNAL_EXIT_CODE = (
    str(EXIT_INTERNAL),
    f"an internal error, a bug in krmfn: one line on stderr ({DEBUG_ENV}=1 shows the traceback)",
)
"""The last exit code of every command but the functions: no answer of theirs shares it."""

FUNCTION_EXIT_CODES = (
    ("0", "the output is complete (results may hold warnings)"),
    ("1", "an error result: nothing is written to stdout in a pipe"),
    ("2", "a usage error (unknown flag, unreadable --fn-config)"),
)


def epilog(exit_codes: Sequence[tuple[str, str]], examples: Sequence[tuple[str, str]], page: str) -> str:
    """``exit codes:``, ``examples:`` (a comment line, then the command) and ``docs:``, as plain text."""
    width = max(len(code) for code, _ in exit_codes)
    lines = ["exit codes:"]
    lines += [f"  {code.ljust(width)}  {meaning}" for code, meaning in exit_codes]
    lines += ["", "examples:"]
    for comment, command in examples:
        lines += [f"  # {comment}", f"  {command}"]
    lines += ["", "docs: " + DOCS.format(page=page)]
    return "\n".join(lines) + "\n"
