"""Which kinds are cluster-scoped, offline: the built-in kinds, the CustomResourceDefinitions in the same
stream, and kinds a config names. set-steps needs it to write depends-on references, ``krmfn export
resourceset`` to refuse a namespaced object without a namespace (the Flux Operator does not default one).
"""

from __future__ import annotations

from collections.abc import Iterable

from krmfn.k8s.kobj import Obj, get_path

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


# Built-in namespaced kinds, by (group, kind): enough to tell that an object without a namespace cannot be
# applied as written. Kinds in neither list are unknown unless a CRD in the input declares them.
BUILTIN_NAMESPACED = frozenset(
    {
        ("", "ConfigMap"),
        ("", "Secret"),
        ("", "Service"),
        ("", "ServiceAccount"),
        ("", "Pod"),
        ("", "PodTemplate"),
        ("", "PersistentVolumeClaim"),
        ("", "Endpoints"),
        ("", "Event"),
        ("", "LimitRange"),
        ("", "ResourceQuota"),
        ("", "ReplicationController"),
        ("apps", "Deployment"),
        ("apps", "StatefulSet"),
        ("apps", "DaemonSet"),
        ("apps", "ReplicaSet"),
        ("apps", "ControllerRevision"),
        ("batch", "Job"),
        ("batch", "CronJob"),
        ("autoscaling", "HorizontalPodAutoscaler"),
        ("policy", "PodDisruptionBudget"),
        ("networking.k8s.io", "Ingress"),
        ("networking.k8s.io", "NetworkPolicy"),
        ("rbac.authorization.k8s.io", "Role"),
        ("rbac.authorization.k8s.io", "RoleBinding"),
        ("coordination.k8s.io", "Lease"),
        ("discovery.k8s.io", "EndpointSlice"),
        ("events.k8s.io", "Event"),
        ("storage.k8s.io", "CSIStorageCapacity"),
    }
)


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
        self._namespaced = set(BUILTIN_NAMESPACED)
        for obj in items:
            if not isinstance(obj, dict) or obj.get("kind") != "CustomResourceDefinition":  # bad input is
                # reported by the caller, in stream order
                continue
            group, kind = get_path(obj, "spec.group"), get_path(obj, "spec.names.kind")
            if isinstance(group, str) and isinstance(kind, str):
                scope = get_path(obj, "spec.scope")
                if scope == "Cluster":
                    self._cluster.add((group, kind))
                elif scope == "Namespaced":
                    self._namespaced.add((group, kind))

    def cluster_scoped(self, group: str, kind: str) -> bool:
        return kind in self._any_group or (group, kind) in self._cluster

    def namespaced(self, group: str, kind: str) -> bool:
        """Known to be namespaced (a built-in, or a CRD in the input says so); False when unknown."""
        return not self.cluster_scoped(group, kind) and (group, kind) in self._namespaced
