"""What ``krmfn diff`` shows for one object: pure functions over plain dicts, no cluster access.

    comparable(obj) -> dict | None        the object without what the server writes by itself
    masked(before, after) -> (b, a)        a Secret's values replaced by *** (as kubectl diff masks them),
                                           and its annotations and other fields, masked whole
    unified(change) -> list[str]           the object's change as unified-diff lines (YAML, keys sorted)
    patch_of(change) -> list[dict]         the same change as an RFC 6902 JSON Patch (the jsonpatch library)

Both sides of a change are compared as ``comparable`` makes them: managed fields, status and the
metadata the API server sets (uid, resourceVersion, generation, creation time) are left out, as kubectl
diff leaves out managed fields, so a diff shows what an apply would change in what the object says.
"""

from __future__ import annotations

import difflib
import hashlib
import re
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
NAME_MAX = 200
"""Bytes of a ``KRMFN_DIFF`` file name: under the 255 of common file systems, with room for a differ's
own suffixes (``.orig``, ``~``)."""


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
    """A core Secret, whatever the case of its kind (a rendered object shown as it is may spell it so)."""
    return obj is not None and obj.get("apiVersion") == "v1" and str(obj.get("kind", "")).lower() == "secret"


def masked(
    before: dict[str, Any] | None, after: dict[str, Any] | None
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """A Secret's sides with everything that may hold a value as ``***``: equal on both sides, or
    ``*** (before)`` and ``*** (after)`` where they differ, so a diff says what changes without printing
    a value (kubectl diff's rule for ``data``). Masked whole, never searched for the values: a value is
    found in too many forms (JSON-escaped in a copy of the object such as kapp's
    ``kapp.k14s.io/original``, base64, without a block scalar's trailing newline, in a nested JSON
    string). So every annotation's value is masked (keys shown), every ``data``/``stringData`` value
    (keys shown), and every field that is not the Secret's identity or type (``SHOWN``, ``SHOWN_METADATA``):
    managedFields, a field the server does not know, ``data`` that is not a mapping."""
    if not (is_secret(before) or is_secret(after)):
        return before, after
    return _masked_side(before, after, "before"), _masked_side(after, before, "after")


SHOWN = frozenset({"apiVersion", "kind", "type", "immutable"})
"""A Secret's fields a diff shows as they are; ``metadata`` as ``SHOWN_METADATA`` says."""
SHOWN_METADATA = frozenset({"name", "namespace", "generateName", "labels", "ownerReferences", "finalizers"})
BY_KEY = frozenset({"data", "stringData"})
"""Mappings whose keys are shown and whose values are masked; so are ``metadata.annotations``."""
_ABSENT = object()


def _masked_side(
    mine: dict[str, Any] | None, theirs: dict[str, Any] | None, which: str
) -> dict[str, Any] | None:
    if mine is None:
        return None
    other = theirs or {}
    out: dict[str, Any] = {}
    for field, value in mine.items():
        if field in SHOWN:
            out[field] = value
        elif field == "metadata" and isinstance(value, dict):
            out[field] = _masked_metadata(value, other.get(field), which)
        elif field in BY_KEY and isinstance(value, dict):
            out[field] = _masked_values(value, _mapping(theirs, field), which)
        else:
            out[field] = _mask(value, other.get(field, _ABSENT), which)
    return out


def _masked_metadata(mine: dict[str, Any], theirs: Any, which: str) -> dict[str, Any]:
    other = theirs if isinstance(theirs, dict) else {}
    out: dict[str, Any] = {}
    for field, value in mine.items():
        if field in SHOWN_METADATA:
            out[field] = value
        elif field == "annotations" and isinstance(value, dict):
            notes = other.get(field)
            out[field] = _masked_values(value, notes if isinstance(notes, dict) else {}, which)
        else:
            out[field] = _mask(value, other.get(field, _ABSENT), which)
    return out


def _mapping(obj: dict[str, Any] | None, field: str) -> dict[Any, Any]:
    found = (obj or {}).get(field)
    return found if isinstance(found, dict) else {}


def _mask(value: Any, other: Any, which: str) -> str:
    return MASK if other is _ABSENT or other == value else f"{MASK} ({which})"


def _masked_values(mine: dict[Any, Any], theirs: dict[Any, Any], which: str) -> dict[Any, str]:
    return {k: _mask(v, theirs.get(k, _ABSENT), which) for k, v in mine.items()}


def action_of(before: dict[str, Any] | None, after: dict[str, Any] | None) -> Action:
    if before is None:
        return "unchanged" if after is None else "create"
    if after is None:
        return "delete"
    return "unchanged" if before == after else "update"


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {_sorted(k): _sorted(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    if isinstance(value, str) and not value.isascii():
        # A lone surrogate (JSON from the cluster may escape one) cannot be written as YAML: its escape
        # is shown instead, where the YAML writer would raise.
        return value.encode("utf-8", "backslashreplace").decode()
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


_UNSAFE_IN_FILE = re.compile(r"[^A-Za-z0-9._-]|^[.-]")


def file_name(api_version: str, kind: str, namespace: str, name: str) -> str:
    """``<apiVersion>.<Kind>.<namespace>.<name>`` with ``/`` as ``.`` (kubectl diff's file names), as one
    safe file name for the ``KRMFN_DIFF`` program: a custom resource's name may hold almost anything
    (only ``/``, ``%``, ``.`` and ``..`` are refused) and the plan shows an object whose CRD is not
    installed as rendered, so every character but ``A-Za-z0-9._-`` is written ``%XX`` (a leading ``.`` or
    ``-`` too: no hidden file, no option), and a name longer than ``NAME_MAX`` bytes is cut and ends
    with a hash of the whole, so two long names stay two files."""
    parts = [api_version.replace("/", "."), kind, namespace, name] if namespace else [
        api_version.replace("/", "."), kind, name
    ]  # fmt: skip
    text = _UNSAFE_IN_FILE.sub(_percent, ".".join(parts))
    if len(text) <= NAME_MAX:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    return f"{text[: NAME_MAX - 17]}~{digest}"


def _percent(found: re.Match[str]) -> str:
    return "".join(f"%{byte:02X}" for byte in found.group().encode("utf-8", "surrogatepass"))
