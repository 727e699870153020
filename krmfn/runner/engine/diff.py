"""What ``krmfn diff`` shows for one object: pure functions over plain dicts, no cluster access.

    comparable(obj) -> dict | None        the object without what the server writes by itself
    masked(before, after) -> (b, a)        a Secret's values replaced by *** (as kubectl diff masks them),
                                           and its annotations and other fields, masked whole
    unified(change) -> list[str]           the object's change as unified-diff lines (YAML, keys sorted)
    patch_of(change) -> list[dict]         the same change as an RFC 6902 JSON Patch (the jsonpatch library)

Both sides of a change are compared as ``comparable`` makes them: managed fields, status and the
metadata the API server sets (uid, resourceVersion, generation, creation time) are left out, as kubectl
diff leaves out managed fields, so a diff shows what an apply would change in what the object says. For
an object that does not exist yet, ``without_invented`` also leaves out what the dry run made up for
itself alone (a Job's controller-uid labels, a Service's cluster IP and node ports).
"""

from __future__ import annotations

import difflib
import hashlib
import re
from dataclasses import dataclass
from typing import Any, Literal

from krmfn.k8s.podtemplates import CONTAINER_LISTS
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


TOKEN_VOLUME = "kube-api-access-"
"""The projected service-account token volume the ServiceAccount admission plugin adds to a Pod, under a
name with a random suffix."""


def without_invented(after: dict[str, Any], rendered: dict[str, Any]) -> dict[str, Any]:
    """The dry run's answer for an object that does not exist yet, without what the server made up for
    that one request (the apply makes it up anew, so showing it is noise in every diff), unless the
    rendered object sets it: every value equal to the invented uid (a Job's ``controller-uid`` and
    ``batch.kubernetes.io/controller-uid`` labels, on the Job, its pod template and its selector), a
    Service's allocated ``clusterIP``/``clusterIPs``, ``nodePort`` and ``healthCheckNodePort``, and a Pod's
    token volume. The uid goes too; the rest of the server's metadata ``comparable`` leaves out."""
    uid = _mapping(after, "metadata").get("uid")
    out: dict[str, Any] = _without_value(after, uid) if isinstance(uid, str) and uid else dict(after)
    spec, wanted = _mapping(out, "spec"), _mapping(rendered, "spec")
    if out.get("apiVersion") == "v1" and out.get("kind") == "Service" and spec:
        out["spec"] = _service_spec(spec, wanted)
    elif out.get("apiVersion") == "v1" and out.get("kind") == "Pod" and spec:
        out["spec"] = _pod_spec(spec, wanted)
    return out


def _without_value(node: Any, value: str) -> Any:
    """A copy of ``node`` without the mapping entries whose value is ``value``; a mapping left empty by
    that goes too (a Job's generated ``selector``)."""
    if isinstance(node, list):
        return [_without_value(item, value) for item in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, item in node.items():
        kept = _without_value(item, value)
        if item != value and not (isinstance(item, dict) and item and not kept):
            out[key] = kept
    return out


def _service_spec(spec: dict[Any, Any], wanted: dict[Any, Any]) -> dict[Any, Any]:
    """Without the cluster IPs and node ports the dry run allocated (a placeholder: the apply allocates)."""
    out = {
        k: v
        for k, v in spec.items()
        if k in wanted or k not in ("clusterIP", "clusterIPs", "healthCheckNodePort")
    }
    ports, asked = spec.get("ports"), wanted.get("ports")
    if isinstance(ports, list):
        asked = asked if isinstance(asked, list) and len(asked) == len(ports) else [{}] * len(ports)
        out["ports"] = [_port(port, mine) for port, mine in zip(ports, asked, strict=True)]
    return out


def _port(port: Any, wanted: Any) -> Any:
    if not isinstance(port, dict) or (isinstance(wanted, dict) and "nodePort" in wanted):
        return port
    return {k: v for k, v in port.items() if k != "nodePort"}


def _pod_spec(spec: dict[Any, Any], wanted: dict[Any, Any]) -> dict[Any, Any]:
    """Without the token volume the ServiceAccount admission plugin added (a random name each request)."""
    asked = {v.get("name") for v in _list(wanted.get("volumes")) if isinstance(v, dict)}

    def invented(entry: Any) -> bool:
        name = entry.get("name") if isinstance(entry, dict) else None
        return isinstance(name, str) and name.startswith(TOKEN_VOLUME) and name not in asked

    out = dict(spec)
    if "volumes" in spec:
        out["volumes"] = [v for v in _list(spec["volumes"]) if not invented(v)]
    for group in CONTAINER_LISTS:
        if isinstance(spec.get(group), list):
            out[group] = [_container(c, invented) for c in spec[group]]
    return {k: v for k, v in out.items() if v != [] or spec.get(k) == []}


def _container(container: Any, invented: Any) -> Any:
    if not isinstance(container, dict) or not isinstance(container.get("volumeMounts"), list):
        return container
    mounts = [m for m in container["volumeMounts"] if not invented(m)]
    return {k: v for k, v in {**container, "volumeMounts": mounts}.items() if k != "volumeMounts" or mounts}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


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
