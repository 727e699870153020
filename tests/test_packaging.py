"""What users install: the sdist and wheel build and pass twine's checks, the wheel holds only the krmfn
namespace, and installed into a fresh virtualenv its console scripts run the README's first command."""

from __future__ import annotations

import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest
from e2e import ROOT

from krmfn.registry import CANONICAL_ORDER


def _run(*args: str | Path, cwd: Path = ROOT) -> str:
    proc = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, check=False)
    output = f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert proc.returncode == 0, f"{args} exited {proc.returncode}:\n{output}"
    return proc.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    # The wheel is built from the sdist, as pip builds it from PyPI (and no stale build/ dir leaks in);
    # --no-isolation: the test tooling pins the same setuptools floor, so no build env is downloaded
    _run(sys.executable, "-m", "build", "--no-isolation", "--outdir", out, ROOT)
    return out


def test_sdist_and_wheel_pass_twine_check(dist: Path) -> None:
    files = sorted(dist.iterdir(), key=lambda p: p.suffix)
    assert [p.suffix for p in files] == [".gz", ".whl"], files
    assert "PASSED" in _run(sys.executable, "-m", "twine", "check", "--strict", *files)


def test_the_wheel_installs_only_the_krmfn_namespace(dist: Path) -> None:
    (wheel,) = dist.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/", 1)[0] for name in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"krmfn"}, tops
    assert "krmfn/py.typed" in names and "krmfn/functions/set_image/metadata.yaml" in names
    assert not [n for n in names if "/examples/" in n or "/tests/" in n], "examples and tests stay out"
    (info,) = (t for t in tops if t.endswith(".dist-info"))
    assert f"{info}/licenses/LICENSE" in names


def test_console_scripts_work_from_a_fresh_virtualenv(dist: Path, tmp_path: Path) -> None:
    (wheel,) = dist.glob("*.whl")
    env = tmp_path / "venv"
    venv.create(env, with_pip=True)
    _run(env / "bin" / "python", "-m", "pip", "install", "-q", wheel)
    rendered = _run(env / "bin" / "krmfn", "render", ROOT / "examples" / "staged-deploy")
    assert "kind: Job" in rendered and "krmfn.dev/step" in rendered
    assert _run(env / "bin" / "krmfn", "version").startswith("krmfn ")
    for name in [*CANONICAL_ORDER, "render"]:
        assert "usage" in _run(env / "bin" / f"krmfn-{name}", "--help").lower()
