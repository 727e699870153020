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
_HOME = {
    "Function": "function", "ResourceList": "resourcelist", "Results": "results", "Selector": "selector",
    "select": "selector",
}  # fmt: skip


def __getattr__(name: str) -> Any:
    if name == "__version__":
        return _version()
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'krmfn' has no attribute {name!r}")
    return getattr(importlib.import_module(f"krmfn.{module}"), name)


def _version() -> str:
    """The installed distribution's version: pyproject.toml is its one source (read lazily: start-up time)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("krmfn")
    except PackageNotFoundError:  # a source tree on sys.path without an install
        return "0+unknown"
