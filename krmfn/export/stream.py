"""The objects of a rendered stream (``-f FILE|DIR|-``, read by krmfn/stream.py).

Lists (``v1/List``, a kpt ``ResourceList``) are unwrapped, empty documents dropped, and local-config
objects (Kptfile, functionConfigs, kpt inventory files) left out: none of them belongs in a cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from krmfn.errors import InputError
from krmfn.kobj import Obj, is_list_kind, is_local_config
from krmfn.stream import read_documents


def read_sources(sources: Iterable[str]) -> list[Obj]:
    """The objects of every source, read as krmfn/stream.py reads them (the runner reads alike)."""
    return [obj for where, docs in read_documents(sources) for obj in _objects(docs, where)]


def _objects(docs: Iterable[Any], where: str) -> Iterator[Obj]:
    for position, doc in enumerate(docs, start=1):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise InputError(
                f"{where}: document {position} is a {type(doc).__name__}, not a Kubernetes object"
            )
        if is_list_kind(doc):
            yield from _objects(doc["items"], f"{where}: document {position}")
            continue
        for required in ("apiVersion", "kind"):
            if not isinstance(doc.get(required), str) or not doc[required]:
                raise InputError(f"{where}: document {position} has no {required}")
        meta = doc.get("metadata")
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
            raise InputError(f"{where}: document {position} ({doc['kind']}) has no metadata.name")
        if not is_local_config(doc):
            yield doc
