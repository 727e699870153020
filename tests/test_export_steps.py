"""What ``krmfn export`` checks around the shared grouping: duplicates, empty input, error order."""

from __future__ import annotations

from typing import Any

import pytest

from krmfn.errors import InputError
from krmfn.export.steps import group


def cm(name: str, namespace: str = "", **annotations: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "annotations": annotations}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


def test_namespaces_are_identity_as_written() -> None:
    found = group([cm("a"), cm("a", "apps"), cm("a", "other")])
    assert [len(step.items) for step in found.steps] == [3]


@pytest.mark.parametrize(
    ("objects", "message"),
    [
        pytest.param([], "is empty: it has no objects to deploy", id="nothing-to-export"),
        pytest.param(
            [cm("a", "apps"), cm("a", "apps")], "ConfigMap apps/a appears twice in the input", id="duplicate"
        ),
        pytest.param(
            [cm("a", "apps", **{"krmfn.dev/step-index": "x"}), cm("a", "apps")],
            "ConfigMap apps/a: annotation krmfn.dev/step-index must be a whole number from 0 to 2147483647, "
            "got 'x'",
            id="bad-index-before-a-later-duplicate",
        ),
        pytest.param(
            [cm("a", "apps"), cm("a", "apps", **{"krmfn.dev/step-index": "x"})],
            "ConfigMap apps/a appears twice in the input",
            id="duplicate-before-its-own-bad-index",
        ),
        pytest.param(
            [cm("a", **{"krmfn.dev/step-index": "+1"})],
            "ConfigMap a: annotation krmfn.dev/step-index must be a whole number from 0 to 2147483647, "
            "got '+1'",
            id="index-with-a-sign",
        ),
    ],
)
def test_input_errors(objects: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(InputError) as raised:
        group(objects)
    assert str(raised.value) == message or (message.startswith("is empty") and message in str(raised.value))
