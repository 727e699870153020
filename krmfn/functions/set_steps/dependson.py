"""``config.kubernetes.io/depends-on`` references in the syntax of cli-utils (kpt live apply).

One reference is ``<group>/namespaces/<namespace>/<kind>/<name>`` for a namespaced object and
``<group>/<kind>/<name>`` for a cluster-scoped one; the core group is the empty string, so a ConfigMap
reads ``/namespaces/apps/ConfigMap/settings``. References are joined with ``,``. This mirrors
``FormatObjMetadata`` and ``ParseObjMetadata`` in cli-utils' pkg/object/dependson.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from krmfn.kobj import Obj, get_path

ANNOTATION = "config.kubernetes.io/depends-on"

# Built-in cluster-scoped kinds, by (group, kind). Anything else is namespaced unless a
# CustomResourceDefinition in the input or the config says otherwise.
BUILTIN_CLUSTER_SCOPED = frozenset(
    {
        ("", "Namespace"),
        ("", "Node"),
        ("", "PersistentVolume"),
        ("", "ComponentStatus"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("apiregistration.k8s.io", "APIService"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("storage.k8s.io", "StorageClass"),
        ("storage.k8s.io", "CSIDriver"),
        ("storage.k8s.io", "CSINode"),
        ("storage.k8s.io", "VolumeAttachment"),
        ("storage.k8s.io", "VolumeAttributesClass"),
        ("scheduling.k8s.io", "PriorityClass"),
        ("node.k8s.io", "RuntimeClass"),
        ("networking.k8s.io", "IngressClass"),
        ("networking.k8s.io", "IPAddress"),
        ("networking.k8s.io", "ServiceCIDR"),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
        ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
        ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding"),
        ("certificates.k8s.io", "CertificateSigningRequest"),
        ("certificates.k8s.io", "ClusterTrustBundle"),
        ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
        ("resource.k8s.io", "DeviceClass"),
        ("resource.k8s.io", "ResourceSlice"),
        ("internal.apiserver.k8s.io", "StorageVersion"),
    }
)


@dataclass(frozen=True, order=True)
class ObjRef:
    group: str
    kind: str
    name: str
    namespace: str = ""

    def format(self) -> str:
        if self.namespace:
            return f"{self.group}/namespaces/{self.namespace}/{self.kind}/{self.name}"
        return f"{self.group}/{self.kind}/{self.name}"


def parse_ref(text: str) -> ObjRef:
    """One reference; ValueError with the reason cli-utils would give."""
    text = text.strip()
    fields = text.split("/")
    if len(fields) == 3:
        group, kind, name = fields
        namespace = ""
    elif len(fields) == 5:
        if fields[1] != "namespaces":
            raise ValueError(f'missing "namespaces" field: {text!r}')
        group, _, namespace, kind, name = fields
    else:
        raise ValueError(f"expected 3 or 5 '/'-separated fields, got {len(fields)}: {text!r}")
    if not kind:
        raise ValueError(f"kind is empty: {text!r}")
    if not name:
        raise ValueError(f"name is empty: {text!r}")
    return ObjRef(group, kind, name, namespace)


def parse_set(text: str) -> list[ObjRef]:
    return [parse_ref(part) for part in text.split(",")]


def format_set(refs: Iterable[ObjRef]) -> str:
    return ",".join(ref.format() for ref in refs)


class Scopes:
    """Which kinds are cluster-scoped: built-ins, CRDs present in the input, and the config's list."""

    def __init__(self, items: Iterable[Obj], extra: Iterable[str] = ()) -> None:
        self._cluster = set(BUILTIN_CLUSTER_SCOPED)
        self._any_group: set[str] = set()
        for entry in extra:
            group, _, kind = entry.rpartition("/")
            if group:
                self._cluster.add((group, kind))
            else:
                self._any_group.add(kind)
        for obj in items:
            if obj.get("kind") != "CustomResourceDefinition":
                continue
            group, kind = get_path(obj, "spec.group"), get_path(obj, "spec.names.kind")
            if isinstance(group, str) and isinstance(kind, str) and get_path(obj, "spec.scope") == "Cluster":
                self._cluster.add((group, kind))

    def cluster_scoped(self, group: str, kind: str) -> bool:
        return kind in self._any_group or (group, kind) in self._cluster
