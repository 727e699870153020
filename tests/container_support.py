"""The function images under podman, for tests/test_container.py and bench/container.py.

``images()`` builds them with scripts/build-image.sh (cached by content, so a second session only checks
their tags). kpt runs them with ``KPT_FN_RUNTIME=podman``; kustomize runs ``docker``, which Debian's
podman-docker provides: ``engine_env`` puts it first on PATH, ahead of any other ``docker`` binary.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from e2e import ROOT

from krmfn.yaml.io import dump_fast, load_all_fast

PODMAN_DOCKER = Path("/usr/bin/docker")


@functools.cache
def images() -> dict[str, str]:
    """Function name -> local image reference, for the six functions and render."""
    script = ROOT / "scripts" / "build-image.sh"
    proc = subprocess.run(
        ["bash", str(script)],
        capture_output=True,
        text=True,
        check=False,
        timeout=1800,
        env={**os.environ, "PYTHON": sys.executable},
    )
    if proc.returncode != 0:
        raise AssertionError(
            f"{script.relative_to(ROOT)} failed (it needs podman, mmdebstrap and root to install them):\n"
            f"{proc.stderr}"
        )
    found = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if line.strip())
    assert {"set-image", "render"} <= found.keys(), proc.stdout
    return found


@functools.cache
def engine_bin() -> Path:
    """A directory that, first on PATH, makes ``docker`` podman-docker's wrapper (for kustomize)."""
    assert PODMAN_DOCKER.exists() and "podman" in PODMAN_DOCKER.read_text(errors="replace"), (
        "kustomize's container functions need Debian's podman-docker at /usr/bin/docker "
        "(scripts/install-podman.sh installs it)"
    )
    directory = Path(os.environ.get("KRMFN_CACHE", Path.home() / ".cache/krmfn")) / "podman-docker-bin"
    directory.mkdir(parents=True, exist_ok=True)
    link = directory / "docker"
    if not link.is_symlink():
        link.symlink_to(PODMAN_DOCKER)
    return directory


def engine_env(**extra: str) -> dict[str, str]:
    """The test interpreter's scripts (exec functions) and podman-docker first on PATH; kpt on podman."""
    path = os.pathsep.join([str(Path(sys.executable).parent), str(engine_bin()), os.environ.get("PATH", "")])
    clean = {k: v for k, v in os.environ.items() if not k.startswith("KRMFN_")}
    return {**clean, "PATH": path, "KPT_FN_RUNTIME": "podman", **extra}


def run(
    args: list[str], cwd: Path, check: bool = True, stdin: str | None = None, **extra: str
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        args,
        check=False,
        cwd=cwd,
        env=engine_env(**extra),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def image_for(exec_name: str, refs: dict[str, str]) -> str:
    name = exec_name.removeprefix("krmfn-")
    assert name in refs, f"no image for {exec_name}"
    return refs[name]


def kptfile_to_images(package: Path, refs: dict[str, str]) -> None:
    """The Kptfile's ``exec: krmfn-<name>`` steps become ``image:`` steps (kpt), in place."""
    kptfile = package / "Kptfile"
    doc = next(load_all_fast(kptfile.read_text()))
    for steps in (doc.get("pipeline") or {}).values():
        for step in steps:
            if "exec" in step:
                step["image"] = image_for(step.pop("exec"), refs)
    kptfile.write_text(dump_fast(doc))


def configs_to_containers(package: Path, refs: dict[str, str]) -> list[str]:
    """The function configs' kustomize ``exec: {path: krmfn-<name>}`` annotations become
    ``container: {image: ...}``, in place. Returns the files changed."""
    changed = []
    for path in sorted(package.glob("*.yaml")):
        docs = list(load_all_fast(path.read_text()))
        if len(docs) != 1 or not isinstance(docs[0], dict):
            continue
        notes: dict[str, Any] = (docs[0].get("metadata") or {}).get("annotations") or {}
        spec_text = notes.get("config.kubernetes.io/function")
        spec = next(load_all_fast(spec_text)) if spec_text else {}
        if "exec" in spec:
            image = image_for(spec["exec"]["path"], refs)
            notes["config.kubernetes.io/function"] = dump_fast({"container": {"image": image}})
            path.write_text(dump_fast(docs[0]))
            changed.append(path.name)
    return changed
