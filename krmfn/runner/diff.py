"""What ``krmfn diff`` shows for one object: pure functions over plain dicts, no cluster access.

    comparable(obj) -> dict | None        the object without what the server writes by itself
    masked(before, after) -> (b, a)        Secret values replaced by *** (as kubectl diff masks them)
    unified(change) -> list[str]           the object's change as unified-diff lines (YAML, keys sorted)
    patch_of(change) -> list[dict]         the same change as an RFC 6902 JSON Patch (the jsonpatch library)

Both sides of a change are compared as ``comparable`` makes them: managed fields, status and the
metadata the API server sets (uid, resourceVersion, generation, creation time) are left out, as kubectl
diff leaves out managed fields, so a diff shows what an apply would change in what the object says.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Literal

from krmfn.yaml.io import dump_fast

Action = Literal["create", "update", "delete", "unchanged"]
CHANGES: frozenset[Action] = frozenset({"create", "update", "delete"})
SERVER_METADATA = (
    "managedFields", "resourceVersion", "uid", "generation", "creationTimestamp", "selfLink",
    "deletionTimestamp", "deletionGracePeriodSeconds",
)  # fmt: skip
MASK = "***"


@dataclass(frozen=True)
class Change:
    """One object's change: ``before`` is the live object (None: it does not exist), ``after`` what the
    server would store (None: the next apply prunes it), both already ``comparable`` and masked."""

    step: int | None
    step_name: str | None
    object: str
    """The object as every runner message names it (``Kind.group namespace/name``)."""
    file: str
    """A file name for the object (``KRMFN_DIFF`` compares two directories of such files)."""
    action: Action
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    detail: str = ""


def comparable(obj: dict[str, Any] | None) -> dict[str, Any] | None:
    """``obj`` without status, managed fields and server-set metadata (a copy; None stays None)."""
    if obj is None:
        return None
    out = {k: v for k, v in obj.items() if k != "status"}
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        out["metadata"] = {k: v for k, v in meta.items() if k not in SERVER_METADATA}
        if not out["metadata"].get("annotations"):
            out["metadata"].pop("annotations", None)
    return out


def is_secret(obj: dict[str, Any] | None) -> bool:
    return obj is not None and obj.get("apiVersion") == "v1" and obj.get("kind") == "Secret"


def masked(
    before: dict[str, Any] | None, after: dict[str, Any] | None
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """Secret values as ``***``: equal on both sides, or ``*** (before)`` and ``*** (after)`` where
    they differ, so a diff says which keys change without printing a value (kubectl diff's rule)."""
    if not (is_secret(before) or is_secret(after)):
        return before, after
    b = dict(before) if before is not None else None
    a = dict(after) if after is not None else None
    for field in ("data", "stringData"):
        old = (before or {}).get(field)
        new = (after or {}).get(field)
        old = old if isinstance(old, dict) else {}
        new = new if isinstance(new, dict) else {}
        if b is not None and field in b:
            b[field] = {
                k: MASK if k not in new or new[k] == v else f"{MASK} (before)" for k, v in old.items()
            }
        if a is not None and field in a:
            a[field] = {k: MASK if k not in old or old[k] == v else f"{MASK} (after)" for k, v in new.items()}
    return b, a


def action_of(before: dict[str, Any] | None, after: dict[str, Any] | None) -> Action:
    if before is None:
        return "unchanged" if after is None else "create"
    if after is None:
        return "delete"
    return "unchanged" if before == after else "update"


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def as_yaml(obj: dict[str, Any] | None) -> str:
    """The text one side of a diff shows: YAML with keys sorted (as kubectl diff prints them)."""
    return "" if obj is None else dump_fast(_sorted(obj))


def unified(change: Change, context: int = 3) -> list[str]:
    """The change as unified-diff lines without line ends (raw: the caller escapes them for a terminal)."""
    return list(
        difflib.unified_diff(
            as_yaml(change.before).splitlines(),
            as_yaml(change.after).splitlines(),
            f"live/{change.file}",
            f"merged/{change.file}",
            n=context,
            lineterm="",
        )
    )


def patch_of(change: Change) -> list[dict[str, Any]]:
    """The change as RFC 6902 operations that turn ``before`` into ``after`` (an object that does not
    exist is the empty object, so a create adds every field and a delete removes them)."""
    import jsonpatch

    ops: list[dict[str, Any]] = jsonpatch.make_patch(change.before or {}, change.after or {}).patch
    return ops


def file_name(api_version: str, kind: str, namespace: str, name: str) -> str:
    """``<apiVersion>.<Kind>.<namespace>.<name>`` with ``/`` as ``.`` (kubectl diff's file names); the
    parts are names the plan or the inventory checked, so none is ``..`` or holds a path separator."""
    parts = (
        [api_version.replace("/", "."), kind, namespace, name]
        if namespace
        else [api_version.replace("/", "."), kind, name]
    )
    return ".".join(part.replace("/", "%2F") for part in parts)
