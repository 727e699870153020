"""The SetImage functionConfig: kustomize's ``images`` entries plus semver selection and extra fields."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from krmfn import Selector
from krmfn.errors import ConfigError
from krmfn.sdk.config import parse


@dataclass(frozen=True)
class ImageRule:
    """One rule of ``images``, as a kustomization's ``images`` entry."""

    name: str = field(
        metadata={
            "help": "the image to change, as written before any tag or digest (matched exactly, "
            "with its registry; a tag or digest here narrows the match)",
            "example": "ghcr.io/acme/app",
        }
    )
    new_name: str = field(default="", metadata={"help": "replaces the name", "example": "ghcr.io/acme/app2"})
    new_tag: str = field(
        default="", metadata={"help": "replaces tag and digest (both, with digest)", "example": "1.4.2"}
    )
    digest: str = field(default="", metadata={"help": "replaces tag and digest", "example": "sha256:..."})
    tag_suffix: str = field(
        default="",
        metadata={
            "help": "appended to the current tag once, when neither newTag nor digest is set",
            "example": "-alpine",
        },
    )
    semver: str = field(
        default="",
        metadata={
            "help": "instead of newTag: the highest tag satisfying this constraint (from tags or the "
            "registry)",
            "example": ">=1.2.0 <2.0.0",
        },
    )
    tags: list[str] = field(
        default_factory=list, metadata={"help": "candidate tags for semver", "example": "[1.2.0, 1.3.1]"}
    )
    registry: bool = field(
        default=False,
        metadata={"help": "read candidate tags for semver from the image's registry (network)"},
    )

    def validate(self, path: str) -> None:
        where = f"{path}." if path else ""
        if not self.name:
            raise ConfigError("must not be empty", f"{where}name")
        if self.semver:
            if self.new_tag:
                raise ConfigError("give either newTag or semver, not both", f"{where}semver")
            if not self.tags and not self.registry:
                raise ConfigError("semver needs candidate tags: set tags or registry: true", f"{where}semver")
            from krmfn.functions.set_image.semver import (  # only rules with semver
                SemverError,
                parse_constraint,
            )

            try:
                parse_constraint(self.semver)
            except SemverError as err:
                raise ConfigError(str(err), f"{where}semver") from None
        elif self.tags or self.registry:
            raise ConfigError("tags and registry only apply with semver", f"{where}semver")


@dataclass(frozen=True)
class ImageField:
    """Like a kustomize fieldSpec: where an image reference lives in some kinds (a CR's ``spec.image``)."""

    path: str = field(
        metadata={
            "help": "dotted (or slash-separated) path; [] walks every list entry",
            "example": "spec.runners[].image",
        }
    )
    group: str = field(default="", metadata={"help": "API group (empty: any)", "example": "example.com"})
    version: str = field(default="", metadata={"help": "API version (empty: any)", "example": "v1"})
    kind: str = field(default="", metadata={"help": "kind (empty: any)", "example": "Runner"})

    def validate(self, path: str) -> None:
        if not self.steps():
            raise ConfigError("must not be empty", f"{path}.path" if path else "path")

    def steps(self) -> list[str]:
        return [s for s in self.path.replace("/", ".").replace("[]", ".[]").split(".") if s]

    def applies_to(self, obj: dict[str, Any]) -> bool:
        group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
        return (
            (not self.group or self.group == group)
            and (not self.version or self.version == version)
            and (not self.kind or self.kind == obj.get("kind"))
        )


@dataclass(frozen=True)
class SetImageConfig:
    """The SetImage functionConfig."""

    images: list[ImageRule] = field(
        default_factory=list,
        metadata={"help": "rules applied in order, exactly like a kustomization's images field"},
    )
    additional_image_fields: list[ImageField] = field(
        default_factory=list,
        metadata={"help": "more image fields, beyond containers and image volumes, for custom resources"},
    )
    selectors: list[Selector] = field(
        default_factory=list, metadata={"help": "which resources to change (default: all)"}
    )
    exclude: list[Selector] = field(default_factory=list, metadata={"help": "resources to leave alone"})


_RULE_KEYS = ("name", "newName", "newTag", "digest", "tagSuffix", "semver", "tags", "registry")


def from_configmap(data: dict[str, Any]) -> SetImageConfig:
    """``kpt fn eval --exec krmfn-set-image -- name=nginx newTag=1.27``: the keys of one image rule."""
    unknown = [k for k in data if k not in _RULE_KEYS]
    if unknown:
        known = ", ".join(_RULE_KEYS)
        raise ConfigError(f"unknown key {unknown[0]!r}; known keys: {known}", f"data.{unknown[0]}")
    rule: dict[str, Any] = {k: v for k, v in data.items() if k not in ("tags", "registry")}
    if "tags" in data:
        rule["tags"] = [t.strip() for t in str(data["tags"]).split(",") if t.strip()]
    if "registry" in data:
        flag = str(data["registry"]).strip().lower()
        if flag not in ("true", "false"):
            raise ConfigError(f"expected true or false, got {data['registry']!r}", "data.registry")
        rule["registry"] = flag == "true"
    return parse(SetImageConfig, {"images": [rule]})
