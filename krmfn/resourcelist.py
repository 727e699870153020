"""ResourceList parsing, validation and serialization (KRM Functions Specification)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from krmfn.errors import ResourceListError
from krmfn.kobj import Obj, ref_of
from krmfn.limits import Limits
from krmfn.results import Results
from krmfn.yamlio import Mode, dump, load

API_VERSIONS = ("config.kubernetes.io/v1", "config.kubernetes.io/v1beta1")
MODE_ENV = "KRMFN_YAML"
# kpt records each file's sequence indentation so it can write files back; kustomize (which shares the
# other bookkeeping annotations with kpt) never sets it. Its presence means `kpt fn render|eval`.
_KPT_MARKERS = ("internal.config.kubernetes.io/seqindent",)
# ruamel's round trip reads ~200 items/s and holds ~90 KB per item (BENCHMARKS.md): past ~1,600 items
# a kpt render would take seconds per function and hundreds of MB, so large lists take the fast path.
FIDELITY_MAX_BYTES = 1024 * 1024


@dataclass
class ResourceList:
    items: list[Obj]
    function_config: Any = None
    results: Results = field(default_factory=Results)
    root: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def empty(cls) -> ResourceList:
        return cls(items=[], root={"apiVersion": API_VERSIONS[0], "kind": "ResourceList", "items": []})


def choose_mode(text: str, requested: str | None = None) -> Mode:
    """``fast``/``fidelity`` when asked (flag, then $KRMFN_YAML); otherwise fidelity under kpt only."""
    choice = (requested or os.environ.get(MODE_ENV) or "auto").strip().lower()
    if choice in ("fast", "fidelity"):
        return choice  # type: ignore[return-value]
    if choice != "auto":
        raise ResourceListError(f"{MODE_ENV}={choice!r}: expected fast, fidelity or auto")
    if len(text) <= FIDELITY_MAX_BYTES and any(marker in text for marker in _KPT_MARKERS):
        return "fidelity"
    return "fast"


def parse(text: str, mode: Mode, limits: Limits) -> ResourceList:
    doc = load(text, mode, limits)
    if not isinstance(doc, dict):
        raise ResourceListError(
            "input is not a ResourceList: expected a YAML mapping with kind: ResourceList"
        )
    if doc.get("kind") != "ResourceList" or doc.get("apiVersion") not in API_VERSIONS:
        raise ResourceListError(
            f"input is not a ResourceList: got apiVersion {doc.get('apiVersion')!r}, "
            f"kind {doc.get('kind')!r}; "
            f"expected kind ResourceList with apiVersion {' or '.join(API_VERSIONS)}"
        )
    items = doc.get("items")
    if items is None:
        items = []
        doc["items"] = items
    if not isinstance(items, list):
        raise ResourceListError("ResourceList.items must be a list")
    if len(items) > limits.max_items:
        raise ResourceListError(
            f"{len(items)} items is over the limit of {limits.max_items} (KRMFN_MAX_ITEMS)"
        )
    for index, item in enumerate(items):
        problem = item_problem(item)
        if problem:
            raise ResourceListError(f"items[{index}]{_describe(item)}: {problem}")
    doc.pop("results", None)  # each run reports its own results
    return ResourceList(items=items, function_config=doc.get("functionConfig"), root=doc)


def item_problem(item: Any) -> str:
    if not isinstance(item, dict):
        return "an item must be a mapping (a KRM object)"
    for key in ("apiVersion", "kind"):
        if not isinstance(item.get(key), str) or not item.get(key):
            return f"{key} is required and must be a non-empty string"
    meta = item.get("metadata")
    if not isinstance(meta, dict):
        return "metadata is required and must be a mapping"
    name, generate = meta.get("name"), meta.get("generateName")
    if not (isinstance(name, str) and name) and not (isinstance(generate, str) and generate):
        return "metadata.name is required and must be a non-empty string"
    for key in ("annotations", "labels"):
        value = meta.get(key)
        if value is not None and not isinstance(value, dict):
            return f"metadata.{key} must be a mapping of strings"
    return ""


def _describe(item: Any) -> str:
    if isinstance(item, dict) and isinstance(item.get("kind"), str):
        return f" ({ref_of(item)})"
    return ""


def serialize(rl: ResourceList, mode: Mode) -> str:
    root = rl.root or ResourceList.empty().root
    root["items"] = rl.items
    if rl.results:
        root["results"] = [r.to_dict() for r in rl.results]
    else:
        root.pop("results", None)
    return dump(root, mode)
