"""The SetConfigChecksum functionConfig: strictness, extra pod-template paths, selection, keyed mode."""

from __future__ import annotations

from dataclasses import dataclass, field

from krmfn import Selector
from krmfn.errors import ConfigError


@dataclass(frozen=True)
class PodTemplatePathConfig:
    """Where a custom kind holds its pod template."""

    kind: str = field(metadata={"help": "kind that holds a pod template", "example": "Rollout"})
    path: str = field(
        metadata={"help": "dotted path of the pod template (a PodTemplateSpec)", "example": "spec.template"}
    )
    api_version: str = field(
        default="", metadata={"help": "exact apiVersion (default: any)", "example": "argoproj.io/v1alpha1"}
    )

    def validate(self, path: str) -> None:
        if not self.kind:
            raise ConfigError("must not be empty", f"{path}.kind")
        if not self.path or not all(self.path.split(".")):
            raise ConfigError(
                f"{self.path!r} is not a dotted field path such as spec.template", f"{path}.path"
            )


@dataclass(frozen=True)
class SetConfigChecksumConfig:
    """The SetConfigChecksum functionConfig."""

    strict: bool = field(
        default=False,
        metadata={
            "help": "a reference to a ConfigMap/Secret that is not in the ResourceList is an error "
            "(default: a warning, as it may exist in the cluster)",
            "example": "true",
        },
    )
    pod_template_paths: list[PodTemplatePathConfig] = field(
        default_factory=list,
        metadata={
            "help": "pod templates in other kinds (built in: Deployment, StatefulSet, DaemonSet, "
            "ReplicaSet, ReplicationController, Job, CronJob, Pod, PodTemplate)",
            "example": "[{kind: Rollout, path: spec.template}]",
        },
    )
    selectors: list[Selector] = field(
        default_factory=list, metadata={"help": "which workloads (default: all)"}
    )
    exclude: list[Selector] = field(default_factory=list, metadata={"help": "workloads to leave alone"})
    hmac_key_env: str = field(
        default="",
        metadata={
            "help": "keyed mode: an environment variable holding a key (16 bytes or more); the "
            "annotation is then hmac-sha256:<hex>, which cannot be brute-forced without the key",
            "example": "KRMFN_CHECKSUM_KEY",
        },
    )
    hmac_key_file: str = field(
        default="",
        metadata={
            "help": "keyed mode: a file holding the key instead",
            "example": "/run/secrets/checksum-key",
        },
    )
