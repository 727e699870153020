"""The build cache under $KRMFN_CACHE is shared by every checkout on a machine: a tool is built once even
when several scripts ask for it at the same moment (a second worktree's suite, a test that builds what it
needs), and whoever waited finds it built; a failed build leaves nothing stamped."""

from __future__ import annotations

import subprocess
from pathlib import Path

CACHE_ENV = Path(__file__).resolve().parents[1] / "scripts" / "cache-env.sh"

SCRIPT = """set -euo pipefail
. "$CACHE_ENV"
make_it() {{ echo run >> "$KRMFN_CACHE/runs"; while [ ! -e "$KRMFN_CACHE/go" ]; do sleep 0.05; done
  printf '#!/bin/sh\\n' > "$KRMFN_BIN/tool"; chmod +x "$KRMFN_BIN/tool"; }}
build_once tool {stamp} {command}
echo ready
"""


def build(cache: Path, stamp: str = "s1", command: str = "make_it") -> subprocess.Popen[str]:
    return subprocess.Popen(
        ["bash", "-c", SCRIPT.format(stamp=stamp, command=command)],
        env={"KRMFN_CACHE": str(cache), "CACHE_ENV": str(CACHE_ENV), "PATH": "/usr/bin:/bin"},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def test_builds_asked_for_at_once_build_once(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    runs = [build(cache) for _ in range(4)]
    (cache / "go").touch()  # the first build may end only once all four have started
    outs = [run.communicate(timeout=120) for run in runs]
    assert [run.returncode for run in runs] == [0] * 4, outs
    assert all(out == "ready\n" for out, _ in outs)
    assert (cache / "runs").read_text() == "run\n"
    assert (cache / "bin" / ".tool.stamp").read_text() == "s1\n"


def test_a_failed_build_stamps_nothing_and_fails_its_script(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    run = build(cache, stamp="s2", command="false")
    out, err = run.communicate(timeout=60)
    assert run.returncode == 1 and out == ""
    assert "error: building tool failed" in err
    assert not (cache / "bin" / ".tool.stamp").exists()
