"""Reading the rendered stream: files, a directory, stdin, or ``kustomize build`` of a directory."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from krmfn.errors import InputError
from krmfn.runner.errors import SourceError
from krmfn.yamlio import load_all_fast

SUFFIXES = (".yaml", ".yml", ".json")
# A package directory also holds kustomize's own file; it describes a build, it is not a resource.
BUILD_FILES = frozenset({"kustomization.yaml", "kustomization.yml", "Kustomization"})


def read_files(paths: list[str]) -> list[Any]:
    """Documents of every path in order; ``-`` is stdin, a directory contributes its YAML/JSON files
    (not recursively, like kubectl without -R) in name order."""
    docs: list[Any] = []
    for path in paths:
        if path == "-":
            docs.extend(_parse(sys.stdin.read(), "stdin"))
            continue
        p = Path(path)
        if p.is_dir():
            files = sorted(
                f for f in p.iterdir() if f.is_file() and f.suffix in SUFFIXES and f.name not in BUILD_FILES
            )
            if not files:
                raise SourceError(f"{path}: no .yaml, .yml or .json files in the directory")
        elif p.is_file():
            files = [p]
        else:
            raise SourceError(f"{path}: no such file or directory")
        for file in files:
            try:
                text = file.read_text()
            except (OSError, UnicodeDecodeError) as err:
                raise SourceError(f"{file}: cannot read: {err}") from None
            docs.extend(_parse(text, str(file)))
    return docs


def kustomize_command(binary: str, directory: str, *, alpha_plugins: bool, enable_exec: bool) -> list[str]:
    """``kustomize build [--enable-alpha-plugins [--enable-exec]] -- DIR``. Plugins and exec functions
    stay off unless asked for, as in kustomize: an exec function is any binary a kustomization names,
    and every kustomization under DIR (a remote base, an overlay another team owns) can name one. The
    directory comes after ``--``, so a name that starts with ``-`` cannot be read as a flag."""
    flags = []
    if alpha_plugins or enable_exec:
        flags.append("--enable-alpha-plugins")
    if enable_exec:
        flags.append("--enable-exec")
    return [binary, "build", *flags, "--", directory]


def kustomize_build(directory: str, *, alpha_plugins: bool = False, enable_exec: bool = False) -> list[Any]:
    """The objects ``kustomize_command`` builds (binary: $KRMFN_KUSTOMIZE or PATH)."""
    binary = os.environ.get("KRMFN_KUSTOMIZE") or shutil.which("kustomize")
    if not binary:
        raise SourceError("-k needs kustomize: put it on PATH or set KRMFN_KUSTOMIZE")
    if not Path(directory).is_dir():
        raise SourceError(f"{directory}: not a directory")
    try:
        proc = subprocess.run(
            kustomize_command(binary, directory, alpha_plugins=alpha_plugins, enable_exec=enable_exec),
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError as err:
        raise SourceError(f"cannot run {binary}: {err}") from None
    if proc.returncode != 0:
        tail = " / ".join(proc.stderr.strip().splitlines()[-5:])
        if not alpha_plugins and "plugins disabled" in tail:
            tail += " (krmfn runs kustomize without plugins: pass --enable-exec to run exec functions)"
        raise SourceError(f"kustomize build {directory} failed (exit {proc.returncode}): {tail}")
    return _parse(proc.stdout, f"kustomize build {directory}")


def _parse(text: str, where: str) -> list[Any]:
    try:
        return list(load_all_fast(text))
    except InputError as err:
        raise SourceError(f"{where}: {err}") from None
