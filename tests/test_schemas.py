"""The committed JSON Schemas are current, accept every documented config and agree with the config reader."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from e2e import ROOT

from krmfn.errors import ConfigError
from krmfn.kpt.pipeline import COMBINED, load_function
from krmfn.registry import CANONICAL_ORDER
from krmfn.schema import all_schemas, render_files
from krmfn.yaml.io import load_all_fast

NAMES = [*CANONICAL_ORDER, *COMBINED]
SCHEMAS = all_schemas()
# A value of the wrong JSON type for each schema type: the reader must refuse it, and so must the schema.
WRONG = {"string": 7, "integer": "seven", "number": "seven", "boolean": "yes", "array": "x", "object": "x"}


def test_committed_schemas_are_current() -> None:
    committed = {p.name: p.read_text() for p in (ROOT / "schemas").glob("*.json")}
    assert committed == render_files(), "regenerate with: python -m krmfn.schema schemas"


@pytest.mark.parametrize("name", NAMES)
def test_the_documented_example_is_valid(name: str) -> None:
    function = load_function(name)
    (example,) = list(load_all_fast(function.example))
    jsonschema.validate(example, SCHEMAS[function.kind])
    function.read_config(example)  # and the reader takes it too


def _mutations(schema: dict[str, Any]) -> list[tuple[str, Any]]:
    """(key, wrong value) for every property whose schema names a single JSON type."""
    out: list[tuple[str, Any]] = [("noSuchField", 1)]
    for key, prop in schema["properties"].items():
        if key in ("apiVersion", "kind", "metadata"):
            continue
        kind = prop.get("type")
        if isinstance(kind, str) and kind in WRONG:
            out.append((key, WRONG[kind]))
        elif "enum" in prop:
            out.append((key, "not-one-of-them"))
    return out


CASES = [(name, key, value) for name in NAMES for key, value in _mutations(SCHEMAS[load_function(name).kind])]


@pytest.mark.parametrize(("name", "key", "value"), CASES, ids=[f"{n}-{k}" for n, k, _ in CASES])
def test_schema_and_reader_refuse_the_same_wrong_fields(name: str, key: str, value: Any) -> None:
    function = load_function(name)
    (example,) = list(load_all_fast(function.example))
    example[key] = value
    schema = SCHEMAS[function.kind]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(example, schema)
    with pytest.raises(ConfigError):
        function.read_config(json.loads(json.dumps(example)))
