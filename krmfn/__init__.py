"""krmfn: KRM functions and a step-by-step apply runner for Jobs that run in order with deployments.

Public surface: ``Function`` (write a function), ``ResourceList``, ``Results``, ``Selector``/``select``
and the error hierarchy in ``krmfn.errors``. Everything else is internal.

The names are loaded on first use, so ``krmfn plan`` or ``krmfn version`` do not pay for the function
runtime and its YAML parsers.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any


class _DeferredModule(types.ModuleType):
    """A stand-in in ``sys.modules`` until the module is used: its first missing attribute imports the
    real module, which then replaces it everywhere it was bound (its namespace is copied in)."""

    def __getattr__(self, name: str) -> Any:
        del sys.modules[self.__name__]
        real = importlib.import_module(self.__name__)
        self.__dict__.update(real.__dict__)
        return getattr(real, name)


def _defer_inspect() -> None:
    """``dataclasses`` imports ``inspect`` (with ast, dis and tokenize: ~7 ms of every function's start)
    for one thing: a signature for the docstring of a dataclass that has none. Every krmfn dataclass has
    a docstring, so ``inspect`` waits for a real use (tests/test_startup_imports.py keeps it so). The
    stand-in carries the real module's spec, so an ``import inspect`` statement takes it as loaded
    (``importlib.util.LazyLoader`` cannot do this: the import statement reads ``__spec__``, which loads
    the lazy module)."""
    if "inspect" in sys.modules or "dataclasses" in sys.modules:
        return
    from importlib.machinery import PathFinder

    spec = PathFinder.find_spec("inspect")
    if spec is None:
        return
    stand_in = _DeferredModule("inspect")
    stand_in.__spec__ = spec
    stand_in.__file__ = spec.origin
    sys.modules["inspect"] = stand_in


_defer_inspect()

if TYPE_CHECKING:
    from krmfn.sdk.function import Function
    from krmfn.sdk.resourcelist import ResourceList
    from krmfn.sdk.results import Results
    from krmfn.sdk.selector import Selector, select

__all__ = ["Function", "ResourceList", "Results", "Selector", "select"]
_HOME = {
    "Function": "sdk.function", "ResourceList": "sdk.resourcelist", "Results": "sdk.results",
    "Selector": "sdk.selector", "select": "sdk.selector",
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
