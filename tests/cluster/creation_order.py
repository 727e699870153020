"""The order in which objects came to be on the control plane, as the API server recorded it: for each
object, the etcd revision of its creation (the resourceVersion of its watch ADDED event) and of the first
write that made it ready as krmfn's health rules say (a Job's success decided: SuccessCriteriaMet or
Complete; a Deployment's replicas available; a Pod Ready or Succeeded; a CRD Established; any other kind
once created). Every kind shares one revision counter, so revisions of different kinds compare as
integers. The watches start at a revision read before the apply, so they miss nothing however late they
connect.

    timeline = Timeline(kube_client, kinds_of(docs), since=revision_now(kube_client, namespace))
    ... krmfn apply ...
    timeline.assert_in_order(groups)   # every object of a group ready before any of the next is created
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterable
from typing import Any

from lightkube import ApiError, Client
from lightkube.core.resource import GlobalResource
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import (
    ConfigMap,
    Namespace,
    Pod,
    ResourceQuota,
    Secret,
    Service,
    ServiceAccount,
)
from lightkube.resources.policy_v1 import PodDisruptionBudget
from lightkube.resources.rbac_authorization_v1 import ClusterRole, ClusterRoleBinding, Role, RoleBinding
from lightkube.types import OnErrorAction, OnErrorResult

from .objects import meta
from .patience import EVENT_WAIT

KINDS: dict[str, Any] = {
    res.__name__: res
    for res in (
        ConfigMap, CustomResourceDefinition, ClusterRole, ClusterRoleBinding, Deployment, Job, Namespace,
        Pod, PodDisruptionBudget, ResourceQuota, Role, RoleBinding, Secret, Service, ServiceAccount,
    )
}  # fmt: skip
"""The kinds the peer charts and sets hold, by ``kind``; one outside it fails the test (never ignored)."""


def key(kind: str, namespace: str | None, name: str) -> str:
    """``Kind namespace/name`` (``Kind /name`` when cluster-scoped), as tests/peer_manifests.py keys."""
    return f"{kind} {namespace or ''}/{name}"


def resource(kind: str) -> Any:
    assert kind in KINDS, f"{kind}: no watch for this kind in tests/cluster/creation_order.py; add it"
    return KINDS[kind]


def cluster_scoped(kind: str) -> bool:
    return issubclass(resource(kind), GlobalResource)


def placed(docs: Iterable[dict[str, Any]], namespace: str) -> list[dict[str, Any]]:
    """``docs`` with the namespace ``krmfn apply -n namespace`` gives a namespaced object that has none."""
    for doc in docs:
        if not cluster_scoped(doc["kind"]):
            doc["metadata"].setdefault("namespace", namespace)
    return list(docs)


def kinds_of(docs: Iterable[dict[str, Any]]) -> set[str]:
    """The kinds to watch for ``docs``; Pods too when a Job runs them."""
    kinds = {doc["kind"] for doc in docs}
    return kinds | ({"Pod"} if kinds & {"Job", "Deployment"} else set())


def revision_now(client: Client, namespace: str) -> str:
    """A revision before anything the test applies: the test namespace's, created before it starts."""
    return str(meta(client.get(Namespace, namespace)).resourceVersion)


def _true(obj: Any, condition: str) -> bool:
    return any(
        c.type == condition and c.status == "True" for c in (obj.status and obj.status.conditions) or []
    )


def ready(obj: Any) -> bool:
    """Whether this state of ``obj`` is what krmfn (and the peer tool) waits for before the next step."""
    if isinstance(obj, Job):  # SuccessCriteriaMet decides the outcome; Complete follows once pods stopped
        return _true(obj, "SuccessCriteriaMet") or _true(obj, "Complete")
    if isinstance(obj, Deployment):
        want = obj.spec.replicas if obj.spec.replicas is not None else 1
        status = obj.status
        return (
            status is not None
            and (status.availableReplicas or 0) >= want
            and (status.updatedReplicas or 0) >= want
        )
    if isinstance(obj, Pod):
        return _true(obj, "Ready") or bool(obj.status and obj.status.phase == "Succeeded")
    if isinstance(obj, CustomResourceDefinition):
        return _true(obj, "Established")
    return True


class Timeline:
    """For each object of ``kinds`` written after revision ``since``, in any namespace: the revision it was
    created at, the revision it was first seen ready at, and its uid."""

    def __init__(self, client: Client, kinds: Iterable[str], since: str) -> None:
        self.added: dict[str, int] = {}
        self.ready: dict[str, int] = {}
        self.uids: dict[str, str] = {}
        self.errors: list[str] = []
        self._changed = threading.Condition()
        for kind in sorted(kinds):
            res = resource(kind)
            threading.Thread(target=self._watch, args=(client, kind, res, since), daemon=True).start()

    def _watch(self, client: Client, kind: str, res: Any, since: str) -> None:
        events = (
            client.watch(res, resource_version=since, on_error=self._on_error(kind))
            if cluster_scoped(kind)
            else client.watch(res, namespace="*", resource_version=since, on_error=self._on_error(kind))
        )
        try:
            for op, obj in events:
                what = key(kind, meta(obj).namespace, meta(obj).name or "")
                revision = int(meta(obj).resourceVersion or 0)
                with self._changed:
                    if op == "ADDED":
                        self.added.setdefault(what, revision)
                        self.uids.setdefault(what, str(meta(obj).uid))
                    if op in ("ADDED", "MODIFIED") and what in self.added and ready(obj):
                        self.ready.setdefault(what, revision)
                    self._changed.notify_all()
        except Exception as err:
            with self._changed:  # and if not, a failure says why nothing more was seen
                self.errors.append(f"{kind} watch ended: {err!r}")

    def _on_error(self, kind: str) -> Callable[[Exception, int], OnErrorResult]:
        """A dropped watch resumes from the last revision it delivered (lightkube's retry), and says so in
        a failure; one the server no longer holds the history of (410 Gone) stops: restarted from now, it
        would report existing objects as created at the current revision."""

        def handle(err: Exception, count: int) -> OnErrorResult:
            with self._changed:
                self.errors.append(f"{kind} watch: {err!r}")
            gone = isinstance(err, ApiError) and err.status.code == 410
            return OnErrorResult(OnErrorAction.STOP if gone or count > 20 else OnErrorAction.RETRY, sleep=0.5)

        return handle

    def wait_ready(self, keys: Iterable[str]) -> None:
        """Until every one of ``keys`` has been seen created and ready (the watches may lag the apply)."""
        wanted = set(keys)
        with self._changed:
            done = self._changed.wait_for(lambda: wanted <= self.ready.keys(), EVENT_WAIT)
            missing = sorted(wanted - self.ready.keys())
            assert done, f"never seen ready on the cluster: {missing}; watch errors: {self.errors}"

    def assert_in_order(self, groups: list[set[str]]) -> None:
        """Each group's objects all ready on the cluster before any object of the next group was created:
        the tool's order, as the API server saw it."""
        assert len(groups) > 1, f"nothing to order: {groups}"
        self.wait_ready(set().union(*groups))
        for before, after in itertools.pairwise(groups):
            last_ready = max(before, key=lambda k: self.ready[k])
            first_added = min(after, key=lambda k: self.added[k])
            assert self.ready[last_ready] < self.added[first_added], (
                f"{first_added} was created (revision {self.added[first_added]}) before {last_ready} was "
                f"ready (revision {self.ready[last_ready]})"
            )


def live_uids(client: Client, docs: Iterable[dict[str, Any]]) -> dict[str, str]:
    """uid of each object of ``docs`` and of every Pod in their namespaces, read now (a quorum read, no
    watch lag): the same map after a second apply means it created, recreated or re-ran nothing."""
    uids, namespaces = {}, set()
    for doc in docs:
        name, namespace = doc["metadata"]["name"], doc["metadata"].get("namespace")
        obj = client.get(resource(doc["kind"]), name, **({"namespace": namespace} if namespace else {}))
        uids[key(doc["kind"], namespace, name)] = str(meta(obj).uid)
        namespaces |= {namespace} if namespace else set()
    for namespace in namespaces:
        for pod in client.list(Pod, namespace=namespace):
            uids[key("Pod", namespace, meta(pod).name or "")] = str(meta(pod).uid)
    return uids
