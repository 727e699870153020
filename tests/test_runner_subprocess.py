"""The programs the runner starts (kustomize for -k, the KRMFN_DIFF differ) can fail to start in two
ways: OSError (not found, not executable) and SubprocessError (the child died between fork and exec, as
seen once in CI). Both are one line and exit 2, never a traceback."""

from __future__ import annotations

import contextlib
import io
import subprocess
from pathlib import Path
from typing import Any

import pytest

from krmfn.runner import source
from krmfn.runner.commands import diff_cmd
from krmfn.runner.errors import SourceError

FAILURES = [OSError(2, "No such file or directory"), subprocess.SubprocessError()]


@pytest.mark.parametrize("failure", FAILURES, ids=["oserror", "subprocess-error"])
def test_kustomize_that_cannot_start_is_a_source_error(
    failure: Exception, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def run(*args: Any, **kwargs: Any) -> Any:
        raise failure

    monkeypatch.setenv("KRMFN_KUSTOMIZE", "/bin/true")
    monkeypatch.setattr(source.subprocess, "run", run)
    with pytest.raises(SourceError, match="cannot run /bin/true: "):
        source.kustomize_build(str(tmp_path))


@pytest.mark.parametrize("failure", FAILURES, ids=["oserror", "subprocess-error"])
def test_an_external_differ_that_cannot_start_is_one_line(
    failure: Exception, monkeypatch: pytest.MonkeyPatch
) -> None:
    def run(*args: Any, **kwargs: Any) -> Any:
        raise failure

    monkeypatch.setattr(diff_cmd.subprocess, "run", run)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = diff_cmd._external("my-differ --flag", [])
    assert code == diff_cmd.EXIT_ERROR
    assert "cannot run 'my-differ'" in err.getvalue() and err.getvalue().count("\n") == 1
