"""JSON Schemas of the functionConfig kinds, derived from the config dataclasses that krmfn.sdk.config reads.

Editors with a YAML language server validate and complete a function config against them
(``# yaml-language-server: $schema=.../schemas/SetImage.json``). They say what ``krmfn.sdk.config.parse``
accepts field by field; cross-field rules (a config's ``validate()``) stay with the function.
``python -m krmfn.schema DIR`` writes them; a test checks that the committed files are current.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import types
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from krmfn.sdk.config import API_VERSION, yaml_key
from krmfn.sdk.function import Function

DRAFT = "https://json-schema.org/draft/2020-12/schema"


def type_schema(tp: Any) -> dict[str, Any]:
    """The schema of one config field type (the types krmfn.sdk.config supports)."""
    origin = get_origin(tp)
    simple = {str: "string", bool: "boolean", int: "integer", float: "number"}
    if tp in simple:
        return {"type": simple[tp]}
    if tp is Any:
        return {}
    if origin is Literal:
        return {"enum": list(get_args(tp))}
    if origin in (Union, types.UnionType):
        options = [type_schema(a) for a in get_args(tp) if a is not type(None)]
        if type(None) in get_args(tp):
            options.append({"type": "null"})
        return options[0] if len(options) == 1 else {"anyOf": options}
    if origin is list:
        return {"type": "array", "items": type_schema(get_args(tp)[0])}
    if origin is dict:
        return {"type": "object", "additionalProperties": type_schema(get_args(tp)[1])}
    if dataclasses.is_dataclass(tp):
        return body_schema(tp)
    raise TypeError(f"no schema for config field type {tp!r}")


def body_schema(cls: Any, overrides: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """An object schema of a config dataclass: camelCase keys, required fields, nothing else allowed."""
    hints = get_type_hints(cls)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for spec in dataclasses.fields(cls):
        key = yaml_key(spec.name)
        prop = dict((overrides or {}).get(key) or type_schema(hints[spec.name]))
        if spec.metadata.get("help"):
            prop["description"] = spec.metadata["help"]
        if spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING:
            required.append(key)
        properties[key] = prop
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


def config_schema(
    function: Function[Any], overrides: dict[str, dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The whole typed functionConfig object of ``function``."""
    body = body_schema(function.config, overrides)
    body["properties"] = {
        "apiVersion": {"const": API_VERSION},
        "kind": {"const": function.kind},
        "metadata": {"type": "object"},
        **body["properties"],
    }
    body["required"] = ["apiVersion", "kind", *body.get("required", [])]
    return {
        "$schema": DRAFT,
        "title": f"{function.kind} ({API_VERSION})",
        "description": function.summary,
        **body,
    }


def all_schemas() -> dict[str, dict[str, Any]]:
    """Every kind's schema by kind; Render's keys take the schema of the function they configure."""
    from krmfn.kpt.pipeline import COMBINED, load_function
    from krmfn.registry import CANONICAL_ORDER

    schemas: dict[str, dict[str, Any]] = {}
    bodies: dict[str, dict[str, Any]] = {}
    for name in CANONICAL_ORDER:
        function = load_function(name)
        schemas[function.kind] = config_schema(function)
        body = body_schema(function.config)
        bodies[yaml_key(name.replace("-", "_"))] = {"anyOf": [body, {"type": "null"}]}
    for name in COMBINED:
        function = load_function(name)
        schemas[function.kind] = config_schema(function, bodies)
    return schemas


def render_files() -> dict[str, str]:
    """File name -> text, exactly as committed under schemas/."""
    return {
        f"{kind}.json": json.dumps(schema, indent=2) + "\n" for kind, schema in sorted(all_schemas().items())
    }


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        from krmfn.terminal import write_line

        write_line(sys.stderr, "usage: python -m krmfn.schema DIR")
        return 2
    out = Path(args[0])
    out.mkdir(parents=True, exist_ok=True)
    for name, text in render_files().items():
        (out / name).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
