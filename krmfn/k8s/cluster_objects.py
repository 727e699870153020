"""A rendered stream's documents as cluster objects: the one reader ``krmfn apply``, ``plan``, ``diff``
(runner/plan.py) and ``krmfn export`` (export/stream.py) share.

Empty documents are dropped and Lists (``v1/List``, a kpt ``ResourceList``) unwrapped; each object must
say what it is the way the API server will take it (``apiVersion``, ``kind`` and ``metadata.name``
valid, ``metadata.namespace`` a string: names become request paths). Whoever reads wraps a problem in its
own error (the runner's SourceError, export's InputError) and drops local config (kobj.is_local_config)
where it applies nothing; what only the runner refuses (its inventory's keys) stays in the runner.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from krmfn.k8s.kobj import is_list_kind
from krmfn.k8s.names import api_version_problem, kind_problem, name_problem


def flatten(documents: Iterable[Any]) -> Iterator[Any]:
    """``documents`` without empty ones, Lists replaced by their items (nested Lists too)."""
    for doc in documents:
        if doc is None:
            continue  # empty documents between `---` separators
        if is_list_kind(doc):
            yield from flatten(doc["items"])
        else:
            yield doc


def identity_problem(obj: Any) -> str | None:
    """What keeps ``obj`` from being sent as a cluster object, in one line; None when nothing does."""
    if not isinstance(obj, dict):
        return f"not a Kubernetes object (a {type(obj).__name__})"
    for required in ("apiVersion", "kind"):
        if not isinstance(obj.get(required), str) or not obj[required]:
            return f"missing {required}"
    problem = api_version_problem(obj["apiVersion"])
    if problem is not None:
        return f"apiVersion {obj['apiVersion']!r} is invalid: {problem}"
    problem = kind_problem(obj["kind"])
    if problem is not None:
        return f"kind {obj['kind']!r} is invalid: {problem}"
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        return f"{obj['kind']} without metadata.name (generateName cannot be applied)"
    problem = name_problem(obj["apiVersion"].rpartition("/")[0], obj["kind"], meta["name"])
    if problem is not None:
        return f"{obj['kind']} metadata.name {meta['name']!r} is invalid: {problem}"
    if not isinstance(meta.get("namespace", ""), str | None):
        return f"{obj['kind']} {meta['name']}: metadata.namespace is not a string"
    return None
