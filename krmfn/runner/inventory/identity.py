"""Which inventory a run uses: its name is the app's, never a shared default.

Prune deletes every member of the ApplySet that the render no longer has, so two apps that share one
inventory delete each other's objects. kubectl requires ``--applyset`` with ``--prune``, kapp an app
name, Helm a release name; krmfn takes the name from something that names the app, in this order:

1. ``--applyset NAME``;
2. ``krmfn.dev/app`` on the rendered objects (set-steps writes it from its ``app:`` field);
3. the Kptfile's ``metadata.name``: a Kptfile in the stream (``kpt fn source``), or in the ``-f``/``-k``
   directory.

Without any of them, a run that prunes is refused before it connects. ``--no-prune`` falls back to the
name ``krmfn``: nothing is deleted, so sharing it is harmless, and the start line says so.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from krmfn.errors import InputError
from krmfn.k8s.annotations import APP
from krmfn.k8s.kobj import annotations_of, is_list_kind
from krmfn.k8s.names import name_problem
from krmfn.runner.errors import SourceError
from krmfn.yaml.io import load_all_fast

FALLBACK = "krmfn"
MISSING = (
    "pruning needs to know which app this is, so that it never deletes another app's objects: pass "
    "--applyset NAME, set app: NAME in set-steps' config (it writes krmfn.dev/app), or apply a kpt "
    "package (its Kptfile names it); --no-prune applies without pruning"
)


@dataclass(frozen=True)
class Identity:
    name: str
    """The ApplySet parent Secret's name."""
    source: str
    """Where the name came from, as the start line prints it."""


def identify(docs: Iterable[Any], applyset: str | None, directories: Iterable[str], prune: bool) -> Identity:
    """The inventory's name for this stream; raises SourceError (a usage error) when there is none and
    pruning is on, or when the stream names two apps."""
    objects = list(_objects(docs))
    if applyset is not None:
        return Identity(applyset, "--applyset")  # checked with the plan (plan.check_applyset)
    apps = sorted({str(annotations_of(obj)[APP]) for obj in objects if APP in annotations_of(obj)})
    if len(apps) > 1:
        raise SourceError(
            f"the objects name more than one app in {APP} ({', '.join(apps)}); apply each app on its own, "
            "or pass --applyset NAME"
        )
    if apps:
        return Identity(_checked(apps[0], APP), APP)
    kptfile = _kptfile_name(objects, directories)
    if kptfile is not None:
        return Identity(_checked(kptfile[0], kptfile[1]), kptfile[1])
    if prune:
        raise SourceError(MISSING)
    return Identity(FALLBACK, "the default, shared by every app that names none (--no-prune)")


def _checked(name: str, source: str) -> str:
    problem = name_problem("", "Secret", name)
    if problem is not None:
        raise SourceError(f"{source} {name!r} cannot name the inventory Secret: {problem}")
    return name


def _objects(docs: Iterable[Any]) -> Iterable[dict[str, Any]]:
    for doc in docs:
        if is_list_kind(doc):
            yield from _objects(doc.get("items") or [])
        elif isinstance(doc, dict):
            yield doc


def _kptfile_name(objects: list[dict[str, Any]], directories: Iterable[str]) -> tuple[str, str] | None:
    for obj in objects:
        if obj.get("kind") == "Kptfile" and str(obj.get("apiVersion", "")).startswith("kpt.dev/"):
            name = (obj.get("metadata") or {}).get("name")
            if isinstance(name, str) and name:
                return name, "the Kptfile's name"
    for directory in directories:
        path = Path(directory) / "Kptfile"
        if not path.is_file():
            continue
        try:
            found = next(iter(load_all_fast(path.read_text())), None)
        except (OSError, UnicodeDecodeError, InputError) as err:
            raise SourceError(f"{path}: cannot read: {err}") from None
        name = (found.get("metadata") or {}).get("name") if isinstance(found, dict) else None
        if isinstance(name, str) and name:
            return name, f"the name in {path}"
    return None
