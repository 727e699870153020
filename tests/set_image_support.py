"""Shared helpers for the set-image tests: the kustomize binary and running set-image in-process."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from krmfn.functions.set_image import FUNCTION
from krmfn.yaml.io import _load_fast, dump_fast

ROOT = Path(__file__).resolve().parent.parent


def kustomize() -> str:
    """The pinned kustomize; a missing binary fails the test, it is never skipped."""
    override = os.environ.get("KRMFN_KUSTOMIZE")
    if override:
        assert Path(override).exists(), f"KRMFN_KUSTOMIZE={override} does not exist"
        return override
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "install-kustomize.sh")],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    path = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    assert proc.returncode == 0 and Path(path).exists(), (
        f"kustomize is required (scripts/install-kustomize.sh failed):\n{proc.stdout}\n{proc.stderr}"
    )
    return path


def run_set_image(items: list[dict[str, Any]], config: dict[str, Any]) -> tuple[list[dict[str, Any]], Any]:
    rl = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": items}
    rl["functionConfig"] = config
    text, code = FUNCTION.process(dump_fast(rl), "fast")
    out = _load_fast(text)
    assert code == 0, out.get("results")
    return out["items"], out.get("results")


def set_image_config(images: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "fn.krmfn.dev/v1alpha1",
        "kind": "SetImage",
        "metadata": {"name": "set-image"},
        "images": images,
    }
