"""The hand-written records (krmfn/records.py) keep what dataclass guaranteed: a field declared in the
class body is a field, settable through ``__init__`` in its order, in ``repr`` and ``==``.

A field added the dataclass way (``name: int = default`` in the class body) to a record would be a
class attribute its constructor refuses (``Limits(max_render_bytes=...)`` was a TypeError after a merge).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import krmfn
from krmfn.limits import ENV, Limits
from krmfn.records import FrozenRecord, OrderedRecord, Record


def _records() -> list[type[Record]]:
    for info in pkgutil.walk_packages(krmfn.__path__, "krmfn."):
        if not info.name.startswith("krmfn.runner"):
            importlib.import_module(info.name)
    found: list[type[Record]] = []
    pending: list[type[Record]] = [Record]
    while pending:
        for sub in pending.pop().__subclasses__():
            pending.append(sub)
            if sub not in (FrozenRecord, OrderedRecord):
                found.append(sub)
    return found


RECORDS = _records()


def test_the_records_are_found() -> None:
    names = {cls.__name__ for cls in RECORDS}
    assert {"Limits", "Result", "ResourceList", "Ref", "Nodes", "Fallback", "ConfigRef"} <= names


@pytest.mark.parametrize("cls", RECORDS, ids=[f"{c.__module__}.{c.__qualname__}" for c in RECORDS])
def test_every_declared_field_is_a_constructor_field(cls: type[Record]) -> None:
    declared = [name for name, kind in vars(cls).get("__annotations__", {}).items() if "ClassVar" not in kind]
    assert set(declared) <= set(cls._fields), f"declared but not fields: {set(declared) - set(cls._fields)}"
    params = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    if cls.__name__ != "Nodes":  # Nodes builds its own empty arrays
        assert params == list(cls._fields)
    for name in cls._fields:
        assert not (name in vars(cls) and not inspect.isdatadescriptor(vars(cls)[name])), name


def test_every_limit_has_its_variable_and_its_field() -> None:
    assert list(ENV) == list(Limits._fields)
    limits = Limits(**dict.fromkeys(ENV, 7))
    assert [getattr(limits, name) for name in ENV] == [7] * len(ENV)
