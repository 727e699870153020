"""The checksum of a set of ConfigMaps and Secrets: sha256 over one canonical JSON document. One place
for it: set-config-checksum writes it on pod templates, and a Job's ``configmap/<name>`` and
``secret/<name>`` triggers (krmfn/k8s/jobtriggers.py) hash the same content into the Job's name.

Each object counts by its kind and content only (not its name: see ``content``); entries are sorted and
JSON keys are sorted, so neither the order of the references nor the order of keys in ``data`` changes
the result. A Secret's ``stringData`` is merged into
``data`` the way the API server does, so writing the same Secret either way gives the same checksum.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from krmfn.k8s.kobj import Obj, ref_of
from krmfn.yaml.io import plain

PREFIX = "sha256:"


def _secret_bytes(value: Any) -> Any:
    """The decoded bytes of a ``data`` value as canonical base64; the raw value when it is not base64."""
    if not isinstance(value, str):
        return value
    try:
        decoded = base64.b64decode("".join(value.split()), validate=True)
    except (binascii.Error, ValueError):
        return {"undecodable": value}
    return base64.b64encode(decoded).decode("ascii")


def content(obj: Obj) -> dict[str, Any]:
    """What of a ConfigMap or Secret reaches the pod: its payload and, for a Secret, its type."""
    ref = ref_of(obj)
    # Not the name or namespace: inside a kustomization they are not final yet (a namePrefix or a
    # generator's hash suffix comes later), and the checksum must not depend on where it is computed.
    # A pod that switches to another object sees its own template change anyway.
    found: dict[str, Any] = {"kind": ref.kind}
    data, binary, string_data = (plain(obj.get(key)) for key in ("data", "binaryData", "stringData"))
    if ref.kind != "Secret":
        found.update(data=data or {}, binaryData=binary or {})
        return found
    found["type"] = plain(obj.get("type")) or "Opaque"
    if isinstance(data or {}, dict) and isinstance(string_data or {}, dict):
        merged = {str(k): _secret_bytes(v) for k, v in (data or {}).items()}
        for key, value in (string_data or {}).items():
            merged[str(key)] = (
                base64.b64encode(value.encode("utf-8")).decode("ascii") if isinstance(value, str) else value
            )
        found["data"] = merged
    else:  # malformed: the API server rejects it; still hash it deterministically
        found.update(data=data, stringData=string_data)
    return found


def checksum(objects: list[Obj]) -> str:
    import hashlib  # imported here: validate-jobs reads this module without hashing (start-up time)
    import json

    entries = sorted(
        json.dumps(content(obj), sort_keys=True, separators=(",", ":"), ensure_ascii=False) for obj in objects
    )
    text = "[" + ",".join(entries) + "]"
    return PREFIX + hashlib.sha256(text.encode("utf-8")).hexdigest()
