"""Fixture cases: tests/fixtures/<function>/<case>/ with config.yaml, input.yaml, expected.yaml or errors.txt.

- ``input.yaml``: a ResourceList, or a plain stream of manifests (then ``config.yaml`` is the functionConfig).
- ``expected.yaml``: the whole output ResourceList of the fast path, results included, byte for byte.
- ``errors.txt``: one regex per line; each must match the output or stderr, and the exit code must be 1.
- ``mode``: optional, ``fast`` or ``fidelity``; by default both paths run and must agree semantically.

Set KRMFN_UPDATE_FIXTURES=1 to rewrite expected.yaml from the current output.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from krmfn.registry import CANONICAL_ORDER
from krmfn.sdk.function import Function
from krmfn.yaml.io import dump_fast, load_all_fast

FIXTURES = Path(__file__).parent / "fixtures"
EXTRA_FUNCTIONS = {"example-annotate": "example_function", "render": "krmfn.functions.render"}


@dataclass(frozen=True)
class Case:
    function: str
    name: str
    path: Path

    @property
    def id(self) -> str:
        return f"{self.function}/{self.name}"


def discover() -> list[Case]:
    return [
        Case(fn_dir.name, case_dir.name, case_dir)
        for fn_dir in sorted(FIXTURES.iterdir())
        if fn_dir.is_dir()
        for case_dir in sorted(fn_dir.iterdir())
        if (case_dir / "input.yaml").exists()
    ]


def load_function(name: str) -> Function[Any]:
    module = CANONICAL_ORDER.get(name) or EXTRA_FUNCTIONS[name]
    found: Function[Any] = importlib.import_module(module).FUNCTION
    return found


def resource_list_text(case: Case) -> str:
    text = (case.path / "input.yaml").read_text()
    docs = [d for d in load_all_fast(text) if d is not None]
    if len(docs) == 1 and isinstance(docs[0], dict) and docs[0].get("kind") == "ResourceList":
        return text
    config_path = case.path / "config.yaml"
    root: dict[str, Any] = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": docs}
    if config_path.exists():
        root["functionConfig"] = next(iter(load_all_fast(config_path.read_text())))
    return dump_fast(root)
