"""The ConfigMap form of the config (what `kpt fn eval -- strict=true` sends) on both YAML paths."""

from __future__ import annotations

import pytest

from krmfn.functions.set_config_checksum import FUNCTION
from krmfn.yaml.io import _load_fast

TEXT = """\
apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: web}
  spec:
    template:
      spec:
        containers: [{name: c, image: x, envFrom: [{configMapRef: {name: absent}}]}]
functionConfig:
  apiVersion: v1
  kind: ConfigMap
  metadata: {name: function-input}
  data: {strict: "%s"}
"""


@pytest.mark.parametrize("mode", ["fast", "fidelity"])
@pytest.mark.parametrize(("strict", "severity", "code"), [("true", "error", 1), ("false", "warning", 0)])
def test_strict_from_a_configmap(mode: str, strict: str, severity: str, code: int) -> None:
    out, exit_code = FUNCTION.process(TEXT % strict, mode)
    assert exit_code == code
    results = _load_fast(out)["results"]
    assert [r["severity"] for r in results] == [severity, "info"]
    assert "ConfigMap absent is not in the ResourceList" in results[0]["message"]
