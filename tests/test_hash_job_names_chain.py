"""set-config-checksum then hash-job-names, in canonical order, in process: config data drives Job names."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from krmfn.functions.hash_job_names import FUNCTION as HASH_JOB_NAMES
from krmfn.functions.set_config_checksum import FUNCTION as SET_CONFIG_CHECKSUM
from krmfn.yaml.io import _load_fast, dump_fast

CHECKSUM = "krmfn.dev/config-checksum"


def package(settings: str = "info", unrelated: str = "a") -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "app-config", "namespace": "apps"},
            "data": {"LOG_LEVEL": settings},
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "unrelated", "namespace": "apps"},
            "data": {"X": unrelated},
        },
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "db-migration", "namespace": "apps"},
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {
                                "name": "migrate",
                                "image": "ghcr.io/example/shop:1.4.0",
                                "envFrom": [{"configMapRef": {"name": "app-config"}}],
                            }
                        ],
                    }
                }
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": "shop",
                "namespace": "apps",
                "annotations": {"config.kubernetes.io/depends-on": "batch/namespaces/apps/Job/db-migration"},
            },
            "spec": {
                "template": {
                    "spec": {"containers": [{"name": "shop", "image": "ghcr.io/example/shop:1.4.0"}]}
                }
            },
        },
    ]


def resource_list(items: list[dict[str, Any]]) -> str:
    return dump_fast({"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": items})


def chain(text: str, mode: str = "fast") -> dict[str, Any]:
    for function in (SET_CONFIG_CHECKSUM, HASH_JOB_NAMES):
        text, code = function.process(text, mode)
        assert code == 0, text
    out: dict[str, Any] = _load_fast(text)
    return out


def find(out: dict[str, Any], kind: str) -> dict[str, Any]:
    found: dict[str, Any] = next(item for item in out["items"] if item["kind"] == kind)
    return found


def job_name(out: dict[str, Any]) -> str:
    name: str = find(out, "Job")["metadata"]["name"]
    return name


def checksum(out: dict[str, Any]) -> str:
    value: str = find(out, "Job")["spec"]["template"]["metadata"]["annotations"][CHECKSUM]
    return value


@pytest.mark.parametrize("mode", ["fast", "fidelity"])
def test_config_data_change_renames_the_job(mode: str) -> None:
    before = chain(resource_list(package(settings="info")), mode)
    after = chain(resource_list(package(settings="debug")), mode)
    assert checksum(before) != checksum(after)
    assert job_name(before) != job_name(after)
    for out in (before, after):
        assert job_name(out).startswith("db-migration-")
        depends_on = find(out, "Deployment")["metadata"]["annotations"]["config.kubernetes.io/depends-on"]
        assert depends_on == f"batch/namespaces/apps/Job/{job_name(out)}"


@pytest.mark.parametrize("mode", ["fast", "fidelity"])
def test_unrelated_config_change_changes_nothing_else(mode: str) -> None:
    before = chain(resource_list(package(unrelated="a")), mode)
    after = chain(resource_list(package(unrelated="b")), mode)
    assert [i for i in before["items"] if i["metadata"]["name"] != "unrelated"] == [
        i for i in after["items"] if i["metadata"]["name"] != "unrelated"
    ]
    assert job_name(before) == job_name(after)


def test_in_place_rerun_keeps_the_name_and_a_later_change_replaces_the_suffix() -> None:
    first = chain(resource_list(package()))
    again = chain(dump_fast(first))
    assert again["items"] == first["items"]
    edited = copy.deepcopy(first)
    find(edited, "ConfigMap")["data"]["LOG_LEVEL"] = "debug"
    changed = chain(dump_fast(edited))
    fresh = chain(resource_list(package(settings="debug")))
    assert job_name(changed) == job_name(fresh)
    assert job_name(changed).count("-") == job_name(fresh).count("-") == 2  # replaced, not appended


def test_fast_and_fidelity_paths_give_the_same_names() -> None:
    text = resource_list(package())
    assert job_name(chain(text, "fast")) == job_name(chain(text, "fidelity"))


SCRIPT = """
import sys
from krmfn.functions.set_config_checksum import FUNCTION as A
from krmfn.functions.hash_job_names import FUNCTION as B
text = sys.stdin.read()
for f in (A, B):
    text, code = f.process(text)
sys.stdout.write(text)
"""


def test_names_are_stable_across_hash_seeds() -> None:
    text = resource_list(package())
    outputs = set()
    for seed in ("0", "1", "4242", "random"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT],
            input=text,
            capture_output=True,
            text=True,
            env=env,
            cwd=Path(__file__).parent.parent,
            check=True,
        )
        outputs.add(done.stdout)
    assert len(outputs) == 1
    assert job_name(_load_fast(outputs.pop())) == job_name(chain(text))
