"""render-inputs: render ``<< inputs.x >>`` expressions (the Flux ResourceSet convention) in every
resource, from inputs in the functionConfig and ConfigMaps in the resource list."""

from __future__ import annotations

from typing import NoReturn

from krmfn import Function
from krmfn.functions.render_inputs.config import RenderInputsConfig, from_configmap
from krmfn.functions.render_inputs.transform import render_inputs

FUNCTION = Function(
    name="render-inputs",
    kind="RenderInputs",
    config=RenderInputsConfig,
    transform=render_inputs,
    summary="render << inputs.x >> expressions in every resource, ResourceSet style",
    configmap=from_configmap,
    example="""
apiVersion: fn.krmfn.dev/v1alpha1
kind: RenderInputs
metadata:
  name: render-inputs
  annotations:
    config.kubernetes.io/local-config: "true"
inputs:
  tag: "6.7.1"
  replicas: 3
  config:
    logLevel: info
inputsFrom:
  - name: podinfo-image
    namespace: apps
""",
)


def main() -> NoReturn:
    """The console script ``krmfn-<name>``."""
    FUNCTION.console()
