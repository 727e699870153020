"""Generated manifest trees for benchmarks: ConfigMaps, Deployments, Jobs and CronJobs referencing them."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from krmfn.yaml.io import dump_all_fast, dump_fast

IMAGES = ("ghcr.io/acme/app", "nginx", "registry.example.com/team/worker", "busybox")


def pod_spec(i: int, restart: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "main",
                "image": f"{IMAGES[i % len(IMAGES)]}:1.{i % 7}.0",
                "envFrom": [{"configMapRef": {"name": f"config-{i}"}}],
                "env": [
                    {
                        "name": "LEVEL",
                        "valueFrom": {"configMapKeyRef": {"name": f"config-{i}", "key": "level"}},
                    }
                ],
                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
            }
        ],
        "volumes": [{"name": "cfg", "configMap": {"name": f"config-{i}"}}],
    }
    if restart:
        spec["restartPolicy"] = restart
    return spec


def objects(count: int) -> list[dict[str, Any]]:
    """``count`` objects in groups of four: a ConfigMap and the workload kinds that reference it."""
    out: list[dict[str, Any]] = []
    for i in range(count // 4 + 1):
        meta = {"namespace": f"team-{i % 5}", "labels": {"app": f"app-{i}"}}
        out.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"config-{i}", **meta},
                "data": {"level": "info", "settings.yaml": f"replicas: {i}\nfeature: true\n"},
            }
        )
        out.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": f"app-{i}", **meta},
                "spec": {
                    "replicas": 2,
                    "selector": {"matchLabels": {"app": f"app-{i}"}},
                    "template": {"metadata": {"labels": {"app": f"app-{i}"}}, "spec": pod_spec(i)},
                },
            }
        )
        out.append(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": f"migrate-{i}", **meta},
                "spec": {"backoffLimit": 1, "template": {"spec": pod_spec(i, "Never")}},
            }
        )
        out.append(
            {
                "apiVersion": "batch/v1",
                "kind": "CronJob",
                "metadata": {"name": f"nightly-{i}", **meta},
                "spec": {
                    "schedule": "30 2 * * *",
                    "concurrencyPolicy": "Forbid",
                    "jobTemplate": {
                        "spec": {"backoffLimit": 1, "template": {"spec": pod_spec(i, "OnFailure")}}
                    },
                },
            }
        )
    return out[:count]


def resource_list(count: int, function_config: dict[str, Any] | None = None, kpt: bool = False) -> str:
    items = objects(count)
    if kpt:  # what kpt sends: each item from its own document (no aliases across items), annotated
        items = [copy.deepcopy(item) for item in items]
        for index, item in enumerate(items):
            item["metadata"]["annotations"] = {
                "config.kubernetes.io/index": str(index),
                "config.kubernetes.io/path": "all.yaml",
                "internal.config.kubernetes.io/seqindent": "compact",
            }
    root: dict[str, Any] = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": items}
    if function_config is not None:
        root["functionConfig"] = function_config
    return dump_fast(root)


def write_tree(directory: Path, count: int) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "all.yaml").write_text(dump_all_fast(objects(count)))
    return directory
