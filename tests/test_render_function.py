"""The combined function equals the chain of separate functions, and imports none of them."""

from __future__ import annotations

import ast
from typing import Any

import pytest
from e2e import ROOT

from krmfn.functions.render import FUNCTION as RENDER
from krmfn.kpt.pipeline import load_function
from krmfn.registry import CANONICAL_ORDER
from krmfn.sdk.config import yaml_key
from krmfn.yaml.io import dump_fast, load_all_fast

EXAMPLE = ROOT / "examples" / "staged-deploy"
CONFIGS = {
    "render-inputs": {"inputs": {"tag": "6.7.0"}},
    "set-image": {"images": [{"name": "curlimages/curl", "newTag": "8.11.1"}]},
    "set-config-checksum": {"strict": True},
    "hash-job-names": {},
    "set-steps": {
        "defaultStep": "deploy",
        "steps": [
            {
                "name": "pre-deploy",
                "timeout": "5m",
                "selectors": [
                    {"kind": "Job", "name": "db-migration"},
                    {"kind": "ConfigMap", "name": "podinfo-config"},
                ],
            },
            {"name": "deploy", "timeout": "10m"},
            {"name": "post-deploy", "selectors": [{"kind": "Job", "name": "cache-warmup"}]},
        ],
    },
    "validate-jobs": {},
}


def resources() -> list[dict[str, Any]]:
    names = ("config.yaml", "db-migration.yaml", "deployment.yaml", "cache-warmup.yaml")
    return [d for name in names for d in load_all_fast((EXAMPLE / name).read_text()) if d]


def resource_list(items: list[dict[str, Any]], config: dict[str, Any]) -> str:
    return dump_fast(
        {
            "apiVersion": "config.kubernetes.io/v1",
            "kind": "ResourceList",
            "items": items,
            "functionConfig": config,
        }
    )


def one_by_one(names: list[str], mode: str) -> list[dict[str, Any]]:
    items = resources()
    for name in names:
        function = load_function(name)
        config = {"apiVersion": "fn.krmfn.dev/v1alpha1", "kind": function.kind, "metadata": {"name": name}}
        text, code = function.process(resource_list(items, {**config, **CONFIGS[name]}), mode)
        assert code == 0, text
        items = next(load_all_fast(text))["items"]
    return items


def combined(names: list[str], mode: str) -> list[dict[str, Any]]:
    config: dict[str, Any] = {
        "apiVersion": "fn.krmfn.dev/v1alpha1",
        "kind": "Render",
        "metadata": {"name": "r"},
    }
    # reversed on purpose: the order of the keys must not matter
    for name in reversed(names):
        config[yaml_key(name.replace("-", "_"))] = CONFIGS[name]
    text, code = RENDER.process(resource_list(resources(), config), mode)
    assert code == 0, text
    items: list[dict[str, Any]] = next(load_all_fast(text))["items"]
    return items


SUBSETS = [
    list(CANONICAL_ORDER),
    ["render-inputs", "hash-job-names"],
    ["render-inputs", "set-config-checksum", "set-steps"],
]


@pytest.mark.parametrize("mode", ["fast", "fidelity"])
@pytest.mark.parametrize("names", SUBSETS, ids=["+".join(s) for s in SUBSETS])
def test_combined_equals_the_separate_functions_in_canonical_order(names: list[str], mode: str) -> None:
    assert combined(names, mode) == one_by_one(names, mode)


def test_combined_function_imports_no_other_function() -> None:
    tree = ast.parse((ROOT / "krmfn" / "functions" / "render" / "__init__.py").read_text())
    imported = [
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in (node.names if isinstance(node, ast.Import) else [node.names[0]])
    ]
    others = [m for m in imported if m and m.startswith("krmfn.functions") and m != "krmfn.functions.render"]
    assert not others, f"krmfn.functions.render must load the functions through the registry: {others}"
    assert any(m == "krmfn.kpt.pipeline" for m in imported)


def test_help_lists_every_function_key() -> None:
    text = RENDER.help_text()
    for name in CANONICAL_ORDER:
        assert yaml_key(name.replace("-", "_")) in text


def test_results_say_which_function_spoke() -> None:
    config = {"apiVersion": "fn.krmfn.dev/v1alpha1", "kind": "Render", "metadata": {"name": "r"}}
    config |= {"renderInputs": CONFIGS["render-inputs"], "hashJobNames": {}}
    text, code = RENDER.process(resource_list(resources(), config))
    assert code == 0
    messages = [r["message"] for r in next(load_all_fast(text))["results"]]
    assert messages[0].startswith("render-inputs: ") and messages[1].startswith("hash-job-names: ")
    assert messages[-1] == "ran 2 function(s): render-inputs, hash-job-names"
