"""Where image references live: every place this function reads and writes one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from krmfn.functions.set_image.config import ImageField
from krmfn.k8s.podtemplates import CONTAINER_LISTS

FLUX_GROUP = "kustomize.toolkit.fluxcd.io"

# (mapping that holds the reference, its key, dotted path for results)
Slot = tuple[dict[str, Any], str, str]


def pod_images(value: Any, path: str = "") -> Iterator[Slot]:
    """Container images and image-volume references at any depth, so every kind that embeds a pod spec
    (workloads, Jobs, CronJob job templates, PodTemplates, custom resources) is covered."""
    if isinstance(value, dict):
        for key, child in value.items():
            child_path = f"{path}.{key}" if path else str(key)
            if isinstance(child, list) and key in CONTAINER_LISTS:
                for index, entry in enumerate(child):
                    if isinstance(entry, dict) and isinstance(entry.get("image"), str):
                        yield entry, "image", f"{child_path}[{index}].image"
            elif isinstance(child, list) and key == "volumes":
                for index, entry in enumerate(child):
                    source = entry.get("image") if isinstance(entry, dict) else None
                    if isinstance(source, dict) and isinstance(source.get("reference"), str):
                        yield source, "reference", f"{child_path}[{index}].image.reference"
            yield from pod_images(child, child_path)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from pod_images(child, f"{path}[{index}]")


def declared_images(obj: dict[str, Any], spec: ImageField) -> Iterator[Slot]:
    if spec.applies_to(obj):
        yield from _follow(obj, spec.steps(), "")


def _follow(value: Any, steps: list[str], path: str) -> Iterator[Slot]:
    step, rest = steps[0], steps[1:]
    if step == "[]":
        if isinstance(value, list):
            for index, entry in enumerate(value):
                yield from _follow(entry, rest, f"{path}[{index}]") if rest else iter(())
        return
    if not isinstance(value, dict) or step not in value:
        return
    here = f"{path}.{step}" if path else step
    if rest:
        yield from _follow(value[step], rest, here)
    elif isinstance(value[step], str):
        yield value, step, here


def is_flux_kustomization(obj: dict[str, Any]) -> bool:
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    return group == FLUX_GROUP and obj.get("kind") == "Kustomization"


def flux_entries(obj: dict[str, Any]) -> Iterator[tuple[dict[str, Any], str]]:
    spec = obj.get("spec")
    entries = spec.get("images") if isinstance(spec, dict) else None
    if isinstance(entries, list):
        for index, entry in enumerate(entries):
            if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                yield entry, f"spec.images[{index}]"
