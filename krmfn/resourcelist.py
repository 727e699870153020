"""ResourceList parsing, validation and serialization (KRM Functions Specification)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from krmfn.errors import ResourceListError
from krmfn.kobj import Obj, is_kustomization, is_list_kind, ref_of
from krmfn.limits import Limits
from krmfn.results import Results
from krmfn.yamlio import Mode, dump, dump_all_fast, load, load_documents

API_VERSIONS = ("config.kubernetes.io/v1", "config.kubernetes.io/v1beta1")
MODE_ENV = "KRMFN_YAML"
# kpt records each file's sequence indentation so it can write files back; kustomize (which shares the
# other bookkeeping annotations with kpt) never sets it. Its presence means `kpt fn render|eval`.
_KPT_MARKERS = ("internal.config.kubernetes.io/seqindent",)
# ruamel's round trip reads ~200 items/s and holds ~90 KB per item (BENCHMARKS.md): past ~1,600 items
# a kpt render would take seconds per function and hundreds of MB, so large lists take the fast path.
FIDELITY_MAX_BYTES = Limits().max_fidelity_bytes
_FIDELITY_HINT = " (a plain stream of objects is read on the fast path only)"


@dataclass
class ResourceList:
    items: list[Obj]
    function_config: Any = None
    results: Results = field(default_factory=Results)
    root: dict[str, Any] = field(default_factory=dict)
    stream: bool = False
    """Read from a plain stream of objects (``kustomize build | fn``): written back as one."""

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
    if under_kpt(text) and len(text) <= FIDELITY_MAX_BYTES:
        return "fidelity"
    return "fast"


def under_kpt(text: str) -> bool:
    """A ResourceList from ``kpt fn render|eval`` (kpt, unlike kustomize, prints the results it carries)."""
    return any(marker in text for marker in _KPT_MARKERS) and "ResourceList" in text


def formatting_warning(text: str, mode: Mode, requested: str | None = None) -> str:
    """Why the output's formatting will differ from the input's, when kpt will write it to files: a
    large list read under kpt takes the fast path (""), which rewrites every file's formatting."""
    choice = (requested or os.environ.get(MODE_ENV) or "auto").strip().lower()
    if mode != "fast" or choice != "auto" or not under_kpt(text) or len(text) <= FIDELITY_MAX_BYTES:
        return ""
    return (
        f"the input is {len(text):,} bytes, over the {FIDELITY_MAX_BYTES // (1024 * 1024)} MiB the "
        "fidelity YAML path takes, so the fast path wrote it: the formatting of every file (comments, "
        "quoting, flow style) is rewritten, not only what changed (to keep it, raise "
        f"KRMFN_MAX_FIDELITY_BYTES and set {MODE_ENV}=fidelity: slower, and ~150 bytes of memory per byte)"
    )


def parse(text: str, mode: Mode, limits: Limits) -> ResourceList:
    """A ResourceList, or on the fast path a plain stream of KRM objects (what kyaml's reader accepts)."""
    if mode == "fidelity":
        return _resource_list(load(text, mode, limits), limits)
    docs = [doc for doc in load_documents(text, limits) if doc is not None]
    if not docs:
        raise ResourceListError("no input: expected a ResourceList or a stream of KRM objects on stdin")
    for index, doc in enumerate(docs):
        _check_not_misspelt(doc, index, len(docs))
    lists = [i for i, doc in enumerate(docs) if isinstance(doc, dict) and doc.get("kind") == "ResourceList"]
    if len(docs) == 1 and (lists or not _looks_like_object(docs[0])):
        return _resource_list(docs[0], limits)
    if lists:
        raise ResourceListError(
            f"document {lists[0] + 1} is a ResourceList inside a stream of {len(docs)} documents; "
            "a ResourceList must be the only document"
        )
    return _stream(docs, limits)


def _check_not_misspelt(doc: Any, index: int, count: int) -> None:
    """``config.kubernetes.io`` is the ResourceList's group: another kind there is a typo, which would
    otherwise be read as a List or an object and its functionConfig silently dropped."""
    if not isinstance(doc, dict):
        return
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    if (
        isinstance(api_version, str)
        and api_version.startswith("config.kubernetes.io/")
        and kind != "ResourceList"
    ):
        where = f"document {index + 1}: " if count > 1 else ""
        raise ResourceListError(
            f"{where}apiVersion {api_version!r} is the ResourceList's, but kind is {kind!r}; "
            "expected kind ResourceList"
        )


def _looks_like_object(doc: Any) -> bool:
    # A lone mapping without a kind is more likely a broken ResourceList than a broken object.
    return isinstance(doc, dict) and "kind" in doc


def _stream(docs: list[Any], limits: Limits) -> ResourceList:
    items: list[Any] = []
    for index, doc in enumerate(docs):
        # kubectl applies a List's items (`kubectl get -o yaml` prints a List); so does krmfn apply.
        wrapped = is_list_kind(doc)
        for position, item in enumerate(doc["items"] if wrapped else [doc]):
            _check_item(item, f"document {index + 1}" + (f", item {position + 1}" if wrapped else ""))
            items.append(item)
    _check_count(len(items), limits)
    return ResourceList(items=items, stream=True)


def _check_count(count: int, limits: Limits) -> None:
    if count > limits.max_items:
        raise ResourceListError(f"{count} items is over the limit of {limits.max_items} (KRMFN_MAX_ITEMS)")


def _resource_list(doc: Any, limits: Limits) -> ResourceList:
    if not isinstance(doc, dict):
        raise ResourceListError(
            "input is not a ResourceList: expected a YAML mapping with kind: ResourceList"
        )
    if doc.get("kind") != "ResourceList" or doc.get("apiVersion") not in API_VERSIONS:
        raise ResourceListError(
            f"input is not a ResourceList: got apiVersion {doc.get('apiVersion')!r}, "
            f"kind {doc.get('kind')!r}; "
            f"expected kind ResourceList with apiVersion {' or '.join(API_VERSIONS)}"
            + ("" if doc.get("kind") == "ResourceList" else _FIDELITY_HINT)
        )
    items = doc.get("items")
    if items is None:
        items = []
        doc["items"] = items
    if not isinstance(items, list):
        raise ResourceListError("ResourceList.items must be a list")
    _check_count(len(items), limits)
    for index, item in enumerate(items):
        if not is_kustomization(item):  # kpt reads kustomization.yaml too: passed through untouched
            _check_item(item, f"items[{index}]")
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


def _check_item(item: Any, where: str) -> None:
    problem = item_problem(item)
    if problem:
        raise ResourceListError(f"{where}{_describe(item)}: {problem}")


def _describe(item: Any) -> str:
    if isinstance(item, dict) and isinstance(item.get("kind"), str):
        return f" ({str(ref_of(item)).strip()})"
    return ""


def serialize(rl: ResourceList, mode: Mode) -> str:
    if rl.stream:
        # A stream has nowhere to carry results, and whatever reads it (`kubectl apply -f -`) must not
        # get objects a function refused: errors leave stdout empty and go to stderr only.
        return "" if rl.results.has_errors else dump_all_fast(rl.items)
    root = rl.root or ResourceList.empty().root
    root["items"] = rl.items
    if rl.results:
        root["results"] = [r.to_dict() for r in rl.results]
    else:
        root.pop("results", None)
    return dump(root, mode)
