"""Hashed output applied with the real kubectl to the test control plane: no immutable-field errors."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from e2e import tool

from krmfn.functions.hash_job_names import FUNCTION as HASH_JOB_NAMES
from krmfn.functions.set_config_checksum import FUNCTION as SET_CONFIG_CHECKSUM
from krmfn.sdk.function import Function
from krmfn.yaml.io import _load_fast, dump_all_fast, dump_fast


def manifests(namespace: str, target: str) -> list[dict[str, Any]]:
    container = {
        "name": "migrate",
        "image": "ghcr.io/example/shop:1.4.0",
        "envFrom": [{"configMapRef": {"name": "db-migration-config"}}],
    }
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "db-migration-config", "namespace": namespace},
            "data": {"MIGRATION_TARGET": target},
        },
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "db-migration", "namespace": namespace},
            # Not suspended: a suspended Job accepts pod template annotation changes, a started one does not.
            "spec": {
                "backoffLimit": 0,
                "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
            },
        },
    ]


def render(items: list[dict[str, Any]], functions: tuple[Function[Any], ...]) -> str:
    text = dump_fast({"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": items})
    for function in functions:
        text, code = function.process(text)
        assert code == 0, text
    return dump_all_fast(_load_fast(text)["items"])


def kubectl(kubeconfig: Path, stream: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [tool("kubectl"), "--kubeconfig", str(kubeconfig), "apply", "-f", "-", *args],
        input=stream,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


CHAIN = (SET_CONFIG_CHECKSUM, HASH_JOB_NAMES)


def test_hashed_output_applies_twice_and_after_a_config_change(kubeconfig: Path, namespace: str) -> None:
    first = render(manifests(namespace, "v1"), CHAIN)
    for args in (("--dry-run=client",), ("--dry-run=client",), ("--dry-run=server",), (), ()):
        done = kubectl(kubeconfig, first, *args)
        assert done.returncode == 0, done.stderr
    assert "unchanged" in done.stdout
    changed = render(manifests(namespace, "v2"), CHAIN)
    assert changed != first
    for args in (("--dry-run=server",), (), ()):
        done = kubectl(kubeconfig, changed, *args)
        assert done.returncode == 0, done.stderr
    assert "unchanged" in done.stdout


def test_without_hashed_names_the_same_change_is_an_immutable_field_error(
    kubeconfig: Path, namespace: str
) -> None:
    assert kubectl(kubeconfig, render(manifests(namespace, "v1"), CHAIN[:1])).returncode == 0
    done = kubectl(kubeconfig, render(manifests(namespace, "v2"), CHAIN[:1]))
    assert done.returncode != 0
    assert "field is immutable" in done.stderr
