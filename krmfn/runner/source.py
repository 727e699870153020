"""The runner's input: the rendered stream (krmfn/k8s/manifest_files.py) or ``kustomize build`` of a
directory."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from krmfn.errors import InputError
from krmfn.k8s.manifest_files import DIRECTORY, StreamError, missing, path_kind, read_documents
from krmfn.runner.errors import SourceError
from krmfn.yaml.io import load_all_fast


def read_files(paths: list[str]) -> list[Any]:
    """Documents of every source in order, read as krmfn/k8s/manifest_files.py reads them (export reads
    alike)."""
    try:
        return [doc for _, docs in read_documents(paths) for doc in docs]
    except StreamError as err:
        raise SourceError(str(err)) from None


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
    what = path_kind(Path(directory))
    if what != DIRECTORY:
        end = "" if missing(what) else ", not the directory of a kustomization"
        raise SourceError(f"{directory}: {what}{end}")
    binary = os.environ.get("KRMFN_KUSTOMIZE") or shutil.which("kustomize")
    if not binary:
        raise SourceError("-k needs kustomize: put it on PATH or set KRMFN_KUSTOMIZE")
    try:
        proc = subprocess.run(
            kustomize_command(binary, directory, alpha_plugins=alpha_plugins, enable_exec=enable_exec),
            capture_output=True,
            text=True,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as err:  # SubprocessError: the child died before exec
        raise SourceError(
            f"cannot run {binary}: {getattr(err, 'strerror', None) or err or type(err).__name__}"
        ) from None
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
