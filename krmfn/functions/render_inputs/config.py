"""The RenderInputs functionConfig."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from krmfn.errors import ConfigError
from krmfn.sdk.config import parse


@dataclass(frozen=True)
class InputsRef:
    """A ConfigMap whose data is merged over the inputs."""

    name: str = field(metadata={"help": "ConfigMap name", "example": "podinfo-image"})
    namespace: str = field(
        default="",
        metadata={"help": "ConfigMap namespace (empty: the only one by that name)", "example": "apps"},
    )


@dataclass(frozen=True)
class RenderInputsConfig:
    """The RenderInputs functionConfig."""

    inputs: dict[str, Any] = field(
        default_factory=dict,
        metadata={
            "help": "values for << inputs.<key> >> expressions; any YAML, nested mappings too",
            "example": "{tag: 6.7.1, config: {logLevel: info}}",
        },
    )
    inputs_from: list[InputsRef] = field(
        default_factory=list,
        metadata={
            "help": "ConfigMaps in the resource list whose data is merged over inputs, in order "
            "(a later source wins over an earlier one, every source over inputs)",
        },
    )
    render_secrets: bool = field(
        default=False,
        metadata={
            "help": "also render expressions in Secret data and stringData (off: a Secret's payload is "
            "left as it is, with a warning naming the field, and its errors never quote it)",
        },
    )


def from_configmap(data: dict[str, Any]) -> RenderInputsConfig:
    """``kpt fn eval --exec krmfn-render-inputs -- tag=6.7.1``: every key is an input, as a string."""
    for key, value in data.items():
        if not isinstance(value, str):
            raise ConfigError(STRING_VALUES, f"functionConfig.data.{key}")
    return parse(RenderInputsConfig, {"inputs": dict(data)})


STRING_VALUES = "a ConfigMap's data values are strings; quote the value (and use | int for a number)"
