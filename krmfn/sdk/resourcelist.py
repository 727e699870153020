"""ResourceList parsing, validation and serialization (KRM Functions Specification)."""

from __future__ import annotations

import os
from typing import Any

from krmfn.errors import ResourceListError
from krmfn.k8s.kobj import Obj, is_kustomization, is_list_kind, ref_of
from krmfn.limits import Limits
from krmfn.records import Record
from krmfn.sdk.results import Results
from krmfn.yaml import edit as yamledit
from krmfn.yaml.edit import Source
from krmfn.yaml.io import Mode, dump_all_fast, dump_fast, load_documents

API_VERSIONS = ("config.kubernetes.io/v1", "config.kubernetes.io/v1beta1")
MODE_ENV = "KRMFN_YAML"
# What kpt puts on every item it sends (kustomize does not): tells whose ResourceList this is.
_KPT_MARKERS = ("internal.config.kubernetes.io/seqindent",)


class ResourceList(Record):
    """The objects a function works on, its config and its results."""

    _fields = ("items", "function_config", "results", "root", "stream", "source")

    def __init__(  # noqa: PLR0917  # keyword use is the norm; the order is the fields'
        self,
        items: list[Obj],
        function_config: Any = None,
        results: Results | None = None,
        root: dict[str, Any] | None = None,
        stream: bool = False,
        source: Source | None = None,
    ) -> None:
        self.items = items
        self.function_config = function_config
        self.results = Results() if results is None else results
        self.root: dict[str, Any] = {} if root is None else root
        self.stream = stream
        """Read from a plain stream of objects (``kustomize build | fn``): written back as one."""
        self.source = source
        """The text it was read from, so the faithful writer can edit it instead of re-emitting it."""

    @classmethod
    def empty(cls) -> ResourceList:
        return cls(items=[], root={"apiVersion": API_VERSIONS[0], "kind": "ResourceList", "items": []})


def choose_mode(text: str, requested: str | None = None) -> Mode:
    """``fidelity`` (the faithful writer) unless ``fast`` is asked for (flag, then $KRMFN_YAML): the
    fast path re-emits every document and is kept only to compare against, for debugging."""
    del text  # the choice no longer depends on the input: the faithful writer is as fast at any size
    choice = (requested or os.environ.get(MODE_ENV) or "auto").strip().lower()
    if choice in ("fast", "fidelity"):
        return choice  # type: ignore[return-value]
    if choice != "auto":
        raise ResourceListError(f"{MODE_ENV}={choice!r}: expected fast, fidelity or auto")
    return "fidelity"


def under_kpt(text: str) -> bool:
    """A ResourceList from ``kpt fn render|eval`` (kpt, unlike kustomize, prints the results it carries)."""
    return any(marker in text for marker in _KPT_MARKERS) and "ResourceList" in text


def parse(text: str, mode: Mode, limits: Limits) -> ResourceList:
    """A ResourceList or a plain stream of KRM objects (what kyaml's reader accepts). On the fidelity
    path the text is kept, so ``serialize`` can write back only what changed."""
    source = yamledit.load(text, limits) if mode == "fidelity" else None
    read = [d.value for d in source.documents] if source else load_documents(text, limits)
    rl = _from_documents([doc for doc in read if doc is not None], limits)
    rl.source = source
    return rl


def _from_documents(docs: list[Any], limits: Limits) -> ResourceList:
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
    """The output text: on the fidelity path the input's text with only the changes spliced in."""
    if rl.stream:
        # A stream has nowhere to carry results, and whatever reads it (`kubectl apply -f -`) must not
        # get objects a function refused: errors leave stdout empty and go to stderr only.
        if rl.results.has_errors:
            return ""
        if rl.source is None:
            return dump_all_fast(rl.items)
        text, fallen = _write_stream(rl.source, rl.items)
        for fallback in fallen:
            rl.results.warning(fallback.message, obj=fallback.value)
        return text
    root = rl.root or ResourceList.empty().root
    root["items"] = rl.items
    if rl.results:
        root["results"] = [r.to_dict() for r in rl.results]
    else:
        root.pop("results", None)
    if rl.source is not None:
        text, fallen = _write_list(rl.source, root)
        if not fallen:
            return text
        for fallback in fallen:  # a warning each, carried by the list written again with them
            if fallback.item:
                rl.results.warning(fallback.message, obj=fallback.value)
            else:
                rl.results.warning(f"the ResourceList was {fallback.message}")
        root["results"] = [r.to_dict() for r in rl.results]
        return _write_list(rl.source, root)[0]
    return dump_fast(root)


def _write_list(source: Source, root: dict[str, Any]) -> tuple[str, list[yamledit.Fallback]]:
    writer = yamledit.Writer(source)
    docs = source.documents
    text = "".join(writer.document(i, root if d.value is not None else None) for i, d in enumerate(docs))
    return text, writer.fallen


def _write_stream(source: Source, items: list[Obj]) -> tuple[str, list[yamledit.Fallback]]:
    """Each object in its own document's text, edited; objects the function added (or a List's items,
    which are written one document each as on the fast path) are written new. Also the documents
    written anew because their edit could not be placed."""
    writer = yamledit.Writer(source)
    origin = {id(d.value): i for i, d in enumerate(source.documents) if isinstance(d.value, dict)}
    wanted = [origin.get(id(item), -1) for item in items]
    present = [i for i, d in enumerate(source.documents) if d.value is not None]
    if wanted == present:  # the same documents in the same order: their text and comments kept
        # (empty documents are dropped, as on the fast path: kubectl reads no object from them)
        return yamledit.join([writer.document(i, source.documents[i].value) for i in present]), writer.fallen
    texts: list[str] = []
    used: set[int] = set()
    for item, index in zip(items, wanted, strict=True):
        if index >= 0 and index not in used:
            used.add(index)
            texts.append(writer.document(index, item))
        else:
            texts.append(yamledit.dump_new(item))
    return yamledit.join(texts), writer.fallen
