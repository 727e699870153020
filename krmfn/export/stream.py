"""The objects of a rendered stream (``-f FILE|DIR|-``, read by krmfn/k8s/manifest_files.py).

Read as the runner reads them (krmfn/k8s/cluster_objects.py: Lists unwrapped, empty documents dropped, each
object's identity checked, documents numbered after the Lists are unwrapped), and local-config objects
(Kptfile, functionConfigs, kpt inventory files) left out: none of them belongs in a cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from krmfn.errors import InputError
from krmfn.k8s.cluster_objects import flatten, identity_problem
from krmfn.k8s.kobj import Obj, is_local_config
from krmfn.k8s.manifest_files import read_documents


def read_sources(sources: Iterable[str]) -> list[Obj]:
    """The objects of every source, read as krmfn/k8s/manifest_files.py reads them (the runner reads
    alike)."""
    return [obj for where, docs in read_documents(sources) for obj in _objects(docs, where)]


def _objects(docs: Iterable[Any], where: str) -> Iterator[Obj]:
    for position, doc in enumerate(flatten(docs), start=1):
        problem = identity_problem(doc)
        if problem is not None:
            raise InputError(f"{where}: document {position}: {problem}")
        if not is_local_config(doc):
            yield doc
