"""The krmfn functions, in canonical chaining order, imported only when used (cold start matters)."""

from __future__ import annotations

import importlib
from typing import Any

from krmfn.sdk.function import Function

# Canonical order: a Job's name hash must see its final image and config checksum.
CANONICAL_ORDER: dict[str, str] = {
    "render-inputs": "krmfn.functions.render_inputs",
    "set-image": "krmfn.functions.set_image",
    "set-config-checksum": "krmfn.functions.set_config_checksum",
    "hash-job-names": "krmfn.functions.hash_job_names",
    "set-steps": "krmfn.functions.set_steps",
    "validate-jobs": "krmfn.functions.validate_jobs",
}


def load(name: str) -> Function[Any]:
    module = CANONICAL_ORDER.get(name)
    if module is None:
        raise KeyError(name)
    found: Function[Any] = importlib.import_module(module).FUNCTION
    return found
