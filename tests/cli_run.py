"""krmfn's command line in this process, as the tests drive every command: its exit code, stdout and
stderr, and never a traceback on either."""

from __future__ import annotations

import contextlib
import io

from krmfn.cli import main as krmfn_main


def krmfn_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = krmfn_main(argv)
        except SystemExit as stop:  # argparse's usage error or --help, as the console script would exit
            code = stop.code if isinstance(stop.code, int) else 2
    assert "Traceback" not in out.getvalue() + err.getvalue(), (out.getvalue() + err.getvalue())[-3000:]
    return code, out.getvalue(), err.getvalue()
