"""krmfn: KRM functions and a step-by-step apply runner for Jobs that run in order with deployments.

Public surface: ``Function`` (write a function), ``ResourceList``, ``Results``, ``Selector``/``select``
and the error hierarchy in ``krmfn.errors``. Everything else is internal.

The names are loaded on first use, so ``krmfn plan`` or ``krmfn version`` do not pay for the function
runtime and its YAML parsers.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from krmfn.function import Function
    from krmfn.resourcelist import ResourceList
    from krmfn.results import Results
    from krmfn.selector import Selector, select

__all__ = ["Function", "ResourceList", "Results", "Selector", "select"]
__version__ = "0.1.0"
_HOME = {
    "Function": "function", "ResourceList": "resourcelist", "Results": "results", "Selector": "selector",
    "select": "selector",
}  # fmt: skip


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'krmfn' has no attribute {name!r}")
    return getattr(importlib.import_module(f"krmfn.{module}"), name)
