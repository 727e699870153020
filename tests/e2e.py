"""Helpers to run example packages under the real kpt and kustomize binaries (see test_examples.py).

Example packages are committed rendered; ``derive_source`` gives back the source a render started from.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from krmfn.k8s.kobj import is_local_config
from krmfn.yaml.io import dump_fast, load_all_fast

ROOT = Path(__file__).resolve().parent.parent
UPDATE = bool(os.environ.get("KRMFN_UPDATE_FIXTURES"))
BOOKKEEPING = (
    "config.kubernetes.io/",
    "internal.config.kubernetes.io/",
    "config.k8s.io/",
    "kustomize.config.k8s.io/",
)


def tool(name: str) -> str:
    """Path of a required binary. A missing tool fails the test: it must never be skipped silently."""
    override = os.environ.get(f"KRMFN_{name.upper()}")
    if override and Path(override).exists():
        return override
    cached = Path(os.environ.get("KRMFN_CACHE", Path.home() / ".cache/krmfn")) / "bin" / name
    if cached.exists():
        return str(cached)
    found = shutil.which(name)
    if not found:
        raise AssertionError(
            f"{name} is required for the e2e tests but was not found; "
            "run scripts/test.sh (it builds kustomize) "
            f"or put {name} on PATH"
        )
    return found


@functools.cache
def resourceset_crd() -> Path:
    """The Flux Operator ResourceSet CRD, fetched from the Go module proxy by scripts/ into the cache."""
    script = ROOT / "scripts" / "fetch-resourceset-crd.sh"
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=600, check=False)
    if proc.returncode != 0:
        raise AssertionError(
            f"{script.relative_to(ROOT)} failed (it needs Go and the module proxy):\n{proc.stderr}"
        )
    return Path(proc.stdout.strip())


def env() -> dict[str, str]:
    """PATH with this interpreter's scripts first, so `exec: krmfn-<name>` finds the code under test."""
    scripts = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": f"{scripts}{os.pathsep}{os.environ.get('PATH', '')}"}


def run(args: list[str], cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(args, check=False, cwd=cwd, env=env(), capture_output=True, text=True, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def git_snapshot(repo: Path) -> None:
    run(["git", "add", "-A"], repo)
    run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "s"], repo
    )


def git_diff(repo: Path) -> str:
    text = run(["git", "diff", "--no-color", "--no-ext-diff"], repo).stdout
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("index "))


def package_files(directory: Path) -> dict[str, bytes]:
    """Every file of a package but its .expected/ directory, by path relative to the package."""
    found = sorted(
        p for p in directory.rglob("*") if p.is_file() and ".expected" not in p.relative_to(directory).parts
    )
    return {str(p.relative_to(directory)): p.read_bytes() for p in found}


def derive_source(package: Path, repo: Path) -> Path:
    """The source of a committed (rendered) package: ``repo/<name>`` with .expected/diff.patch reversed.

    ``repo`` becomes a git repository whose one commit is the source, so ``git_diff(repo)`` after a render
    is the diff the render applied. A package without a diff.patch (a new one) is its own source.
    """
    target = repo / package.name
    shutil.copytree(package, target, ignore=shutil.ignore_patterns(".expected"))
    run(["git", "init", "-q"], repo)
    patch = package / ".expected" / "diff.patch"
    if patch.exists() and patch.read_text():
        reverse = run(["git", "apply", "-R", str(patch)], repo, check=False)
        if reverse.returncode:
            raise AssertionError(
                f"{patch.relative_to(ROOT)} does not reverse-apply to the committed package: "
                f"edit the source outside the rendered lines, or render it again\n{reverse.stderr}"
            )
    git_snapshot(repo)
    return target


def adopt_rendered(package: Path, rendered: Path) -> None:
    """KRMFN_UPDATE_FIXTURES: the rendered copy becomes the committed package (.expected/ aside)."""
    new, old = package_files(rendered), package_files(package)
    for name in old.keys() - new.keys():
        (package / name).unlink()
    for name, data in new.items():
        if old.get(name) != data:
            (package / name).parent.mkdir(parents=True, exist_ok=True)
            (package / name).write_bytes(data)


def check_expected(path: Path, actual: str) -> None:
    """``actual`` equals the committed expected file (KRMFN_UPDATE_FIXTURES=1 writes it first)."""
    if UPDATE:
        path.parent.mkdir(exist_ok=True)
        path.write_text(actual)
    assert path.exists(), f"missing {path.relative_to(ROOT)} (KRMFN_UPDATE_FIXTURES=1 writes it)"
    assert actual == path.read_text(), f"{path.relative_to(ROOT)} differs"


def check_committed(package: Path, rendered: Path) -> None:
    """The committed package is byte for byte the rendered copy (KRMFN_UPDATE_FIXTURES=1 copies it in)."""
    if UPDATE:
        adopt_rendered(package, rendered)
    assert package_files(rendered) == package_files(package), (
        f"{package.relative_to(ROOT)} is not committed in its rendered state (KRMFN_UPDATE_FIXTURES=1)"
    )


def package_objects(directory: Path) -> list[dict[str, Any]]:
    """The KRM objects of a package as a consumer sees them: no Kptfile, no local config, no bookkeeping."""
    found: list[dict[str, Any]] = []
    for path in sorted(directory.rglob("*.yaml")):
        if ".expected" in path.parts or path.name == "Kptfile":
            continue
        found.extend(
            d for d in load_all_fast(path.read_text()) if isinstance(d, dict) and not is_local_config(d)
        )
    return [strip_bookkeeping(o) for o in found]


def strip_bookkeeping(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    notes = meta.get("annotations")
    if isinstance(notes, dict):
        kept = {k: v for k, v in notes.items() if not k.startswith(BOOKKEEPING) or k.endswith("depends-on")}
        if kept:
            meta["annotations"] = kept
        else:
            meta.pop("annotations")
    return obj


def by_identity(objects: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {
        (
            o["kind"],
            (o.get("metadata") or {}).get("namespace", ""),
            (o.get("metadata") or {}).get("name", ""),
        ): o
        for o in objects
    }


def kustomization_for(package: Path, workdir: Path) -> Path:
    """A kustomization that runs the package's Kptfile pipeline as exec functions over its resources."""
    kptfile = next(load_all_fast((package / "Kptfile").read_text()))
    target = workdir / "kustomize"
    shutil.copytree(package, target, ignore=shutil.ignore_patterns(".expected", "Kptfile"))
    resources = [
        str(p.relative_to(target))
        for p in sorted(target.rglob("*.yaml"))
        if any(not is_local_config(d) for d in load_all_fast(p.read_text()) if isinstance(d, dict))
    ]
    kustomization: dict[str, Any] = {"resources": resources}
    pipeline = kptfile.get("pipeline") or {}
    for section, field in (("mutators", "transformers"), ("validators", "validators")):
        entries = []
        for index, step in enumerate(pipeline.get(section) or []):
            config = _function_config(step, target)
            exec_path, *args = str(step["exec"]).split()
            spec: dict[str, Any] = {"path": exec_path}
            if args:
                spec["args"] = args
            notes = config.setdefault("metadata", {}).setdefault("annotations", {})
            notes["config.kubernetes.io/function"] = dump_fast({"exec": spec})
            name = f"fn-{section}-{index}.krmfn.yaml"
            (target / name).write_text(dump_fast(config))
            entries.append(name)
        if entries:
            kustomization[field] = entries
    (target / "kustomization.yaml").write_text(dump_fast(kustomization))
    return target


def as_pipe(directory: Path, **fields: Any) -> list[list[str]]:
    """Rewrites ``directory``'s kustomization to its resources only (plus ``fields``) and returns the
    commands its functions become in a plain pipe, in order: ``[exec, *args, "--fn-config", FILE]``
    (run in ``directory``)."""
    kustomization = next(load_all_fast((directory / "kustomization.yaml").read_text()))
    (directory / "kustomization.yaml").write_text(
        dump_fast({"resources": kustomization["resources"], **fields})
    )
    commands = []
    for name in [*kustomization.get("transformers", []), *kustomization.get("validators", [])]:
        notes = next(load_all_fast((directory / name).read_text()))["metadata"]["annotations"]
        exec_spec = next(load_all_fast(notes["config.kubernetes.io/function"]))["exec"]
        commands.append([exec_spec["path"], *exec_spec.get("args", []), "--fn-config", name])
    return commands


def kustomize_then_pipe(target: Path, kustomize: str) -> str:
    """``kustomize build`` of ``target``'s resources only, then each of its functions in a plain pipe
    (``... | krmfn-<name> --fn-config FILE``), as someone who runs the functions outside kustomize would."""
    plain = target.parent / "kustomize-plain"
    shutil.copytree(target, plain)
    commands = as_pipe(plain)
    stream = run([kustomize, "build", str(plain)], plain).stdout
    for args in commands:
        proc = subprocess.run(
            args, check=False, input=stream, cwd=plain, env=env(), capture_output=True, text=True, timeout=60
        )
        if proc.returncode != 0:
            raise AssertionError(f"{' '.join(args)} exited {proc.returncode}:\n{proc.stderr}")
        stream = proc.stdout
    return stream


def _function_config(step: dict[str, Any], package: Path) -> dict[str, Any]:
    if "configPath" in step:
        config: dict[str, Any] = next(load_all_fast((package / step["configPath"]).read_text()))
        return config
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "function-input"},
        "data": dict(step.get("configMap") or {}),
    }
