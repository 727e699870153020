"""functionConfig parsing: a plain dataclass describes the config, this module validates input against it.

A config dataclass is plain data. Field names are snake_case in Python and camelCase in YAML. Each field
may carry ``metadata={"help": ..., "example": ...}``; ``--help`` prints both. A field without a default is
required. Supported field types: str, int, bool, float, Literal[...], nested config dataclasses,
``list[T]``, ``dict[str, T]`` and ``X | None``.

Two input forms are accepted, as kpt and kustomize users expect:
- the typed object, ``apiVersion: fn.krmfn.dev/v1alpha1`` with ``kind`` the function's kind;
- a ConfigMap (``kpt fn eval -- key=value`` builds one named ``function-input``), whose string values
  are read as YAML when the field is not a string, and as comma-separated lists for ``list[str]``.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from functools import cache
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

from krmfn.errors import ConfigError

API_VERSION = "fn.krmfn.dev/v1alpha1"
C = TypeVar("C")
_CAMEL = re.compile(r"_([a-z])")


def yaml_key(name: str) -> str:
    return _CAMEL.sub(lambda m: m.group(1).upper(), name)


@cache
def _cached_hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls)


def _hints(cls: Any) -> dict[str, Any]:
    return _cached_hints(cls)


def describe_type(tp: Any) -> str:
    """How a field's expected form reads in an error message."""
    origin = get_origin(tp)
    if tp is str:
        return "a string"
    if tp is bool:
        return "true or false"
    if tp is int:
        return "a whole number"
    if tp is float:
        return "a number"
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in get_args(tp))
    if origin in (Union, types.UnionType):
        return " or ".join(describe_type(a) for a in get_args(tp) if a is not type(None))
    if origin is list:
        return f"a list, each {describe_type(get_args(tp)[0])}"
    if origin is dict:
        return f"a mapping, each value {describe_type(get_args(tp)[1])}"
    if dataclasses.is_dataclass(tp):
        keys = ", ".join(yaml_key(f.name) for f in dataclasses.fields(tp))
        return f"a mapping with keys {keys}"
    return getattr(tp, "__name__", str(tp))


def parse(cls: type[C], data: Any, path: str = "") -> C:
    """Build ``cls`` from ``data``; raise ConfigError naming the first wrong field and the expected form."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"expected {describe_type(cls)}, got {_kind_of(data)}", path)
    fields = {yaml_key(f.name): f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = [k for k in data if k not in fields]
    if unknown:
        raise ConfigError(
            f"unknown field {unknown[0]!r}; known fields: {', '.join(fields)}", _join(path, str(unknown[0]))
        )
    hints = _hints(cls)
    values: dict[str, Any] = {}
    for key, spec in fields.items():
        if key not in data:
            if spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING:
                raise ConfigError(
                    f"required field is missing; expected {describe_type(hints[spec.name])}", _join(path, key)
                )
            continue
        values[spec.name] = _convert(hints[spec.name], data[key], _join(path, key))
    result = cls(**values)
    check = getattr(result, "validate", None)
    if callable(check):
        check(path)
    return result


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"number {value}"
    if isinstance(value, str):
        return f"string {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _convert(tp: Any, value: Any, path: str) -> Any:
    origin = get_origin(tp)
    wrong = ConfigError(f"expected {describe_type(tp)}, got {_kind_of(value)}", path)
    if origin in (Union, types.UnionType):
        options = [a for a in get_args(tp) if a is not type(None)]
        if value is None and len(options) < len(get_args(tp)):
            return None
        for option in options:
            try:
                return _convert(option, value, path)
            except ConfigError:
                continue
        raise wrong
    if tp is str:
        if isinstance(value, str):
            return str(value)
        raise wrong
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise wrong
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return int(value)
        raise wrong
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise wrong
    if origin is Literal:
        if value in get_args(tp):
            return value
        raise wrong
    if origin is list:
        if not isinstance(value, list):
            raise wrong
        (item_tp,) = get_args(tp)
        return [_convert(item_tp, item, f"{path}[{i}]") for i, item in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise wrong
        _, value_tp = get_args(tp)
        return {str(k): _convert(value_tp, v, _join(path, str(k))) for k, v in value.items()}
    if dataclasses.is_dataclass(tp):
        return parse(typing.cast(type, tp), value, path)
    if tp is Any:
        return value
    raise TypeError(f"unsupported config field type {tp!r} at {path}")


def from_configmap(cls: type[C], data: dict[str, Any]) -> C:
    """The ConfigMap form: every value is a string; read each according to its field's type."""
    hints = _hints(cls)
    fields = {yaml_key(f.name): f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    typed: dict[str, Any] = {}
    for key, raw in data.items():
        spec = fields.get(str(key))
        if spec is None or not isinstance(raw, str):
            typed[str(key)] = raw  # parse() reports it with the right message
            continue
        typed[str(key)] = _from_string(hints[spec.name], raw)
    return parse(cls, typed)


def _from_string(tp: Any, raw: str) -> Any:
    raw = str(raw)  # ruamel hands over its quoted-string subclasses; libyaml wants a plain str
    options = (
        [a for a in get_args(tp) if a is not type(None)]
        if get_origin(tp) in (Union, types.UnionType)
        else [tp]
    )
    if str in options:
        return raw
    if any(
        get_origin(o) is list and _is_stringish(get_args(o)[0]) for o in options
    ) and not raw.lstrip().startswith("["):
        return [part.strip() for part in raw.split(",") if part.strip()]
    if any(get_origin(o) is Literal for o in options):
        return raw
    from krmfn.yaml.io import _load_fast

    try:
        return _load_fast(raw)
    except Exception:
        return raw


def _is_stringish(tp: Any) -> bool:
    return tp is str or (get_origin(tp) is Literal and all(isinstance(a, str) for a in get_args(tp)))


def field_docs(cls: type) -> list[tuple[str, str, str, str]]:
    """(yaml key, expected form, help, example) for every field, nested configs flattened with dots."""
    rows: list[tuple[str, str, str, str]] = []
    hints = _hints(cls)
    for spec in dataclasses.fields(cls):
        tp = hints[spec.name]
        key = yaml_key(spec.name)
        required = spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING
        # "required" first and apart: after "a mapping with keys a, b" it would read as another key.
        form = ("required; " if required else "") + describe_type(tp)
        rows.append((key, form, spec.metadata.get("help", ""), spec.metadata.get("example", "")))
    return rows
