"""What ``krmfn diff`` shows for one object: pure functions over plain dicts, no cluster access.

    comparable(obj) -> dict | None        the object without what the server writes by itself
    masked(before, after) -> (b, a)        Secret values replaced by *** (as kubectl diff masks them), and
                                           the annotations that hold them (last-applied-configuration)
    unified(change) -> list[str]           the object's change as unified-diff lines (YAML, keys sorted)
    patch_of(change) -> list[dict]         the same change as an RFC 6902 JSON Patch (the jsonpatch library)

Both sides of a change are compared as ``comparable`` makes them: managed fields, status and the
metadata the API server sets (uid, resourceVersion, generation, creation time) are left out, as kubectl
diff leaves out managed fields, so a diff shows what an apply would change in what the object says. For
an object that does not exist yet, ``without_invented`` also leaves out what the dry run made up for
itself alone (a Job's controller-uid labels, a Service's cluster IP and node ports).
"""

from __future__ import annotations

import base64
import contextlib
import difflib
import hashlib
import json
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
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
"""Written by ``kubectl apply`` (client side): the whole object as applied, a Secret's values in clear."""
MIN_FOUND = 4
"""Characters a Secret value needs before an annotation that merely contains it is masked (a shorter
one, such as ``1``, would mask annotations that do not hold it); an annotation equal to a value is
masked whatever its length."""
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
    for group in ("initContainers", "containers", "ephemeralContainers"):
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
    """Secret values as ``***``: equal on both sides, or ``*** (before)`` and ``*** (after)`` where
    they differ, so a diff says which keys change without printing a value (kubectl diff's rule).
    An annotation that holds a value is masked the same way: ``last-applied-configuration`` always
    (it is the object, values and all), any other when it contains one of the Secret's values."""
    if not (is_secret(before) or is_secret(after)):
        return before, after
    b = dict(before) if before is not None else None
    a = dict(after) if after is not None else None
    for field in ("data", "stringData"):
        old, new = _mapping(before, field), _mapping(after, field)
        if b is not None and field in b:
            b[field] = _masked_values(old, new, "before")
        if a is not None and field in a:
            a[field] = _masked_values(new, old, "after")
    secrets = _values(before) | _values(after)
    old_notes, new_notes = _annotations(before, secrets), _annotations(after, secrets)
    for side, mine, theirs, which in (
        (b, old_notes, new_notes, "before"),
        (a, new_notes, old_notes, "after"),
    ):
        if side is not None and mine:
            meta = dict(side["metadata"])
            meta["annotations"] = {**meta["annotations"], **_masked_values(mine, theirs, which)}
            side["metadata"] = meta
    return b, a


def _mapping(obj: dict[str, Any] | None, field: str) -> dict[Any, Any]:
    found = (obj or {}).get(field)
    return found if isinstance(found, dict) else {}


def _masked_values(mine: dict[Any, Any], theirs: dict[Any, Any], which: str) -> dict[Any, str]:
    return {k: MASK if k not in theirs or theirs[k] == v else f"{MASK} ({which})" for k, v in mine.items()}


def _values(obj: dict[str, Any] | None) -> set[str]:
    """The Secret's values as they could appear in an annotation: as stored (base64) and decoded."""
    found: set[str] = set()
    for field in ("data", "stringData"):
        for value in _mapping(obj, field).values():
            if not isinstance(value, str) or not value:
                continue
            found.add(value)
            if field == "data":
                with contextlib.suppress(ValueError):  # not base64 (binascii.Error), or not UTF-8
                    found.add(base64.b64decode(value, validate=True).decode())
    return {v for v in found if v}


def _annotations(obj: dict[str, Any] | None, secrets: set[str]) -> dict[str, Any]:
    """The annotations of ``obj`` that hold a Secret value (``LAST_APPLIED`` always)."""
    meta = (obj or {}).get("metadata")
    notes = meta.get("annotations") if isinstance(meta, dict) else None
    if not isinstance(notes, dict):
        return {}
    return {k: v for k, v in notes.items() if k == LAST_APPLIED or _holds(v, secrets)}


def _holds(value: Any, secrets: set[str]) -> bool:
    # Not text only where an object is shown as rendered (the API server stores strings): as JSON.
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text in secrets or any(len(s) >= MIN_FOUND and s in text for s in secrets)


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
