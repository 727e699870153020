"""set-config-checksum: roll pods (and re-run hash-named Jobs) when their ConfigMaps or Secrets change.

Every pod template gets ``krmfn.dev/config-checksum: sha256:<hex>`` over the content of the ConfigMaps
and Secrets it references that are in the ResourceList. See README.md.
"""

from __future__ import annotations

from typing import NoReturn

from krmfn import Function
from krmfn.functions.set_config_checksum.config import PodTemplatePathConfig, SetConfigChecksumConfig
from krmfn.functions.set_config_checksum.transform import set_config_checksum

__all__ = ["FUNCTION", "PodTemplatePathConfig", "SetConfigChecksumConfig", "main"]


FUNCTION = Function(
    name="set-config-checksum",
    kind="SetConfigChecksum",
    config=SetConfigChecksumConfig,
    transform=set_config_checksum,
    summary="annotate pod templates with a checksum of the ConfigMaps and Secrets they use",
    example="""
apiVersion: fn.krmfn.dev/v1alpha1
kind: SetConfigChecksum
metadata:
  name: checksum
  annotations:
    config.kubernetes.io/local-config: "true"
strict: false
podTemplatePaths:
- kind: Rollout
  apiVersion: argoproj.io/v1alpha1
  path: spec.template
""",
)


def main() -> NoReturn:
    """The console script ``krmfn-<name>``."""
    FUNCTION.console()
