"""set-image: kustomize's ``images`` transformer as a KRM function, reaching every pod spec, custom
resource image fields and Flux Kustomization ``spec.images``, with semver tag selection."""

from __future__ import annotations

from typing import NoReturn

from krmfn import Function
from krmfn.functions.set_image.config import SetImageConfig, from_configmap
from krmfn.functions.set_image.transform import set_image

FUNCTION = Function(
    name="set-image",
    kind="SetImage",
    config=SetImageConfig,
    transform=set_image,
    summary="set image names, tags and digests like kustomize's images field, everywhere images live",
    configmap=from_configmap,
    example="""
apiVersion: fn.krmfn.dev/v1alpha1
kind: SetImage
metadata:
  name: set-image
  annotations:
    config.kubernetes.io/local-config: "true"
images:
  - name: ghcr.io/acme/app
    newTag: "1.4.2"
  - name: nginx
    newName: registry.example.com/mirror/nginx
    digest: sha256:0000000000000000000000000000000000000000000000000000000000000000
  - name: ghcr.io/acme/worker
    semver: ">=1.2.0 <2.0.0"
    tags: ["1.2.0", "1.3.1", "2.0.0"]
additionalImageFields:
  - kind: Runner
    path: spec.image
""",
)


def main() -> NoReturn:
    """The console script ``krmfn-<name>``."""
    FUNCTION.console()
