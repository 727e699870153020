"""Writing kustomize trees and kpt packages for the tests, and running them through the real binaries.

A tree is a dict of relative path -> content (a mapping, a list of mappings written as a multi-document
file, or text). The functions run as exec KRM functions from this interpreter's scripts (see e2e.env).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from e2e import env, run, tool

from krmfn.yaml.io import dump_all_fast, dump_fast, load_all_fast

KINDS = {
    "render-inputs": "RenderInputs",
    "set-image": "SetImage",
    "set-config-checksum": "SetConfigChecksum",
    "hash-job-names": "HashJobNames",
    "set-steps": "SetSteps",
    "validate-jobs": "ValidateJobs",
    "render": "Render",
}
CHAIN = ("set-config-checksum", "hash-job-names")


def write_tree(root: Path, files: dict[str, Any]) -> Path:
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            path.write_text(content)
        elif isinstance(content, list):
            path.write_text(dump_all_fast(content))
        else:
            path.write_text(dump_fast(content))
    return root


def fn_config(function: str, **fields: Any) -> dict[str, Any]:
    """The typed functionConfig of ``function``, runnable by kustomize as an exec KRM function."""
    return {
        "apiVersion": "fn.krmfn.dev/v1alpha1",
        "kind": KINDS[function],
        "metadata": {
            "name": function,
            "annotations": {"config.kubernetes.io/function": f"exec:\n  path: krmfn-{function}\n"},
        },
        **fields,
    }


def deployment(name: str, config_map: str, image: str = "x", **meta: Any) -> dict[str, Any]:
    """A Deployment ``name`` whose one container reads ConfigMap ``config_map`` (envFrom)."""
    env_from = [{"configMapRef": {"name": config_map}}]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, **meta},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "w", "image": image, "envFrom": env_from}]},
            },
        },
    }


def fn_files(functions: tuple[str, ...] = CHAIN) -> dict[str, dict[str, Any]]:
    return {f"fn-{name}.yaml": fn_config(name) for name in functions}


def kustomize(directory: Path) -> str:
    """``kustomize build --enable-alpha-plugins --enable-exec`` of ``directory``: the output stream."""
    return run(
        [tool("kustomize"), "build", "--enable-alpha-plugins", "--enable-exec", str(directory)], directory
    ).stdout


def pipe(stream: str, functions: tuple[str, ...] = CHAIN, cwd: Path | None = None) -> str:
    """``... | krmfn-<f1> | krmfn-<f2>``: each function reading and writing a plain stream."""
    for name in functions:
        proc = subprocess.run(
            [f"krmfn-{name}"],
            input=stream,
            capture_output=True,
            text=True,
            env=env(),
            cwd=cwd,
            timeout=120,
            check=False,
        )
        if proc.returncode != 0:
            raise AssertionError(f"krmfn-{name} exited {proc.returncode}:\n{proc.stderr}")
        stream = proc.stdout
    return stream


def objects(stream: str) -> list[dict[str, Any]]:
    return [d for d in load_all_fast(stream) if isinstance(d, dict)]


def by_kind_name(stream: str) -> dict[tuple[str, str], dict[str, Any]]:
    return {(o["kind"], o["metadata"]["name"]): o for o in objects(stream)}


def one(stream: str, kind: str) -> dict[str, Any]:
    found = [o for o in objects(stream) if o["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, got {[o['metadata']['name'] for o in found]}"
    return found[0]


def normalized(stream: str) -> list[dict[str, Any]]:
    """The objects in a stable order, so a build and a pipe can be compared whatever order each keeps."""
    found = objects(stream)
    return sorted(found, key=lambda o: (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]))
