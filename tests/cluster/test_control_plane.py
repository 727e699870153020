"""The test control plane behaves like a real cluster in the ways krmfn's runner depends on.

Each test drives the upstream controllers (Job, Deployment, TTL, garbage collector, CRD establishing,
RBAC) and kwok's stages.yaml, and asserts on the conditions and reasons the runner will read.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from lightkube import ApiError, Client, KubeConfig, codecs
from lightkube.generic_resource import create_namespaced_resource
from lightkube.models.apps_v1 import DeploymentSpec
from lightkube.models.batch_v1 import JobSpec
from lightkube.models.core_v1 import Container, PodSpec, PodTemplateSpec
from lightkube.models.meta_v1 import LabelSelector, ObjectMeta
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.resources.apps_v1 import Deployment, ReplicaSet
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import Pod

from .cluster import Cluster
from .patience import EVENT_WAIT

pytestmark = pytest.mark.cluster

T = TypeVar("T")
TESTDATA = Path(__file__).parent / "testdata"
IMAGE = "registry.example/krmfn/noop:1"  # never pulled: kwok runs no containers
IMAGE_2 = "registry.example/krmfn/noop:2"


def wait_for(what: str, get: Callable[[], T], timeout: float = 30) -> T:
    """Polls get() every 100ms until it returns something truthy, and returns that (never giving up
    sooner than patience.EVENT_WAIT, as cluster.wait_until)."""
    timeout = max(timeout, EVENT_WAIT)
    deadline = time.monotonic() + timeout
    while not (value := get()):
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.1)
    return value


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    """The condition of that type if it is True, else None."""
    for c in obj.get("status", {}).get("conditions", []):
        if c["type"] == type_ and c["status"] == "True":
            return dict(c)
    return None


def get_job(client: Client, namespace: str, name: str) -> dict[str, Any]:
    return client.get(Job, name, namespace=namespace).to_dict()


def finished_job(
    client: Client, namespace: str, name: str, type_: str, timeout: float = 30
) -> dict[str, Any]:
    """Waits until the Job has the True condition type_ (Complete or Failed) and returns the Job."""

    def finished() -> dict[str, Any]:
        job = get_job(client, namespace, name)
        return job if condition(job, type_) else {}

    return wait_for(f"Job {name} {type_}", finished, timeout)


def job_pods(client: Client, namespace: str, name: str) -> list[dict[str, Any]]:
    pods = client.list(Pod, namespace=namespace, labels={"batch.kubernetes.io/job-name": name})
    return [p.to_dict() for p in pods]


def exit_code(pod: dict[str, Any]) -> int:
    return int(pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"])


def job(
    namespace: str, name: str, *, labels: dict[str, str] | None = None, image: str = IMAGE, **spec: Any
) -> Job:
    """A one-pod Job that kwok completes in 1s (or as the test.krmfn.dev/* labels say)."""
    template = PodTemplateSpec(
        metadata=ObjectMeta(labels=labels),
        spec=PodSpec(restartPolicy="Never", containers=[Container(name="main", image=image)]),
    )
    return Job(
        metadata=ObjectMeta(name=name, namespace=namespace),
        spec=JobSpec(template=template, **{"backoffLimit": 0, **spec}),
    )


def deployment(
    namespace: str, name: str, image: str = IMAGE, *, labels: dict[str, str] | None = None, **spec: Any
) -> Deployment:
    selector = {"app": name}
    template = PodTemplateSpec(
        metadata=ObjectMeta(labels=selector | (labels or {})),
        spec=PodSpec(containers=[Container(name="main", image=image)]),
    )
    return Deployment(
        metadata=ObjectMeta(name=name, namespace=namespace),
        spec=DeploymentSpec(
            selector=LabelSelector(matchLabels=selector), template=template, **{"replicas": 2, **spec}
        ),
    )


def test_job_completes(kube_client: Client, namespace: str) -> None:
    kube_client.apply(job(namespace, "ok"))

    done = finished_job(kube_client, namespace, "ok", "Complete")
    assert done["status"]["succeeded"] == 1
    assert condition(done, "SuccessCriteriaMet") is not None
    [pod] = job_pods(kube_client, namespace, "ok")
    assert pod["status"]["phase"] == "Succeeded"
    assert exit_code(pod) == 0


def test_failing_job_exhausts_backoff_limit(kube_client: Client, namespace: str) -> None:
    # backoffLimit 1: one retry, which the Job controller delays by its fixed 10s pod-failure backoff.
    kube_client.apply(job(namespace, "bad", labels={"test.krmfn.dev/fail": "3"}, backoffLimit=1))

    failed = finished_job(kube_client, namespace, "bad", "Failed", timeout=45)
    assert (condition(failed, "Failed") or {})["reason"] == "BackoffLimitExceeded"
    assert failed["status"]["failed"] == 2
    assert "succeeded" not in failed["status"]
    pods = job_pods(kube_client, namespace, "bad")
    assert [p["status"]["phase"] for p in pods] == ["Failed", "Failed"]
    assert [exit_code(p) for p in pods] == [3, 3]


def test_crash_looping_job_counts_restarts_against_backoff_limit(kube_client: Client, namespace: str) -> None:
    # restartPolicy OnFailure: the container restarts in place and the pod stays Running.
    crashing = job(namespace, "crash", labels={"test.krmfn.dev/fail": "2"}, backoffLimit=1)
    assert crashing.spec is not None and crashing.spec.template.spec is not None
    crashing.spec.template.spec.restartPolicy = "OnFailure"
    kube_client.apply(crashing)

    failed = finished_job(kube_client, namespace, "crash", "Failed")
    assert (condition(failed, "Failed") or {})["reason"] == "BackoffLimitExceeded"
    wait_for("the crash-looping pod to be deleted", lambda: not job_pods(kube_client, namespace, "crash"))


def test_reapplying_job_with_changed_template_is_rejected(kube_client: Client, namespace: str) -> None:
    kube_client.apply(job(namespace, "immutable"))

    with pytest.raises(ApiError) as err:
        kube_client.apply(job(namespace, "immutable", image=IMAGE_2))

    status = err.value.status
    assert (status.code, status.reason) == (422, "Invalid")
    assert "spec.template" in str(status.message)
    assert "field is immutable" in str(status.message)


def test_active_deadline_fails_slow_job(kube_client: Client, namespace: str) -> None:
    kube_client.apply(job(namespace, "slow", labels={"test.krmfn.dev/slow": "10m"}, activeDeadlineSeconds=2))

    failed = finished_job(kube_client, namespace, "slow", "Failed")
    assert (condition(failed, "Failed") or {})["reason"] == "DeadlineExceeded"
    assert failed["status"]["failed"] == 1
    # The Job controller deleted the running pod; kwok killed it and removed it.
    wait_for("the Job's pod to be deleted", lambda: not job_pods(kube_client, namespace, "slow"))


def test_finished_job_is_deleted_by_ttl_with_its_pods(kube_client: Client, namespace: str) -> None:
    kube_client.apply(job(namespace, "ttl", ttlSecondsAfterFinished=0))

    def job_gone() -> bool:
        try:
            kube_client.get(Job, "ttl", namespace=namespace)
        except ApiError as e:
            return e.status.code == 404
        return False

    wait_for("the TTL controller to delete the Job", job_gone)
    wait_for("the garbage collector to delete its pod", lambda: not job_pods(kube_client, namespace, "ttl"))


def test_deployment_becomes_available_and_rolls_out(kube_client: Client, namespace: str) -> None:
    def rolled_out(generation: int) -> dict[str, Any]:
        d = kube_client.get(Deployment, "web", namespace=namespace).to_dict()
        s = d.get("status", {})
        done = s.get("observedGeneration") == generation and condition(d, "Available")
        counts = [s.get(k) for k in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas")]
        return d if done and counts == [2, 2, 2, 2] else {}

    kube_client.apply(deployment(namespace, "web", IMAGE))
    wait_for("Deployment Available", lambda: rolled_out(1))

    kube_client.apply(deployment(namespace, "web", IMAGE_2))
    d = wait_for("rollout of the new template", lambda: rolled_out(2))

    assert (condition(d, "Progressing") or {})["reason"] == "NewReplicaSetAvailable"
    sets = {
        rs["spec"]["template"]["spec"]["containers"][0]["image"]: rs
        for rs in (r.to_dict() for r in kube_client.list(ReplicaSet, namespace=namespace))
    }
    assert set(sets) == {IMAGE, IMAGE_2}
    assert sets[IMAGE_2]["status"]["readyReplicas"] == 2
    assert sets[IMAGE]["spec"]["replicas"] == 0


def test_deployment_with_crash_looping_pods_exceeds_progress_deadline(
    kube_client: Client, namespace: str
) -> None:
    kube_client.apply(
        deployment(namespace, "crash", labels={"test.krmfn.dev/fail": "1"}, progressDeadlineSeconds=2)
    )

    def stuck() -> dict[str, Any]:
        d = kube_client.get(Deployment, "crash", namespace=namespace).to_dict()
        progressing = [c for c in d.get("status", {}).get("conditions", []) if c["type"] == "Progressing"]
        return d if progressing and progressing[0]["reason"] == "ProgressDeadlineExceeded" else {}

    d = wait_for("ProgressDeadlineExceeded", stuck)
    assert condition(d, "Available") is None
    assert d["status"].get("availableReplicas", 0) == 0
    pods = [p.to_dict() for p in kube_client.list(Pod, namespace=namespace, labels={"app": "crash"})]
    assert [p["status"]["phase"] for p in pods] == ["Running", "Running"]
    for p in pods:
        [status] = p["status"]["containerStatuses"]
        assert status["state"]["waiting"]["reason"] == "CrashLoopBackOff"
        assert status["lastState"]["terminated"]["exitCode"] == 1
        assert status["restartCount"] >= 1


def test_crd_is_established_and_its_resources_validated(kube_client: Client, namespace: str) -> None:
    # Left installed: CRDs are cluster-wide and deletion is asynchronous, so deleting would race with
    # any later test that applies the same CRD.
    [crd] = codecs.load_all_yaml((TESTDATA / "flux-kustomization-crd.yaml").read_text())
    kube_client.apply(crd, force=True)
    name = "kustomizations.kustomize.toolkit.fluxcd.io"
    wait_for(
        "CRD Established",
        lambda: condition(kube_client.get(CustomResourceDefinition, name).to_dict(), "Established"),
    )

    kustomization = create_namespaced_resource(
        "kustomize.toolkit.fluxcd.io", "v1", "Kustomization", "kustomizations"
    )
    meta: dict[str, Any] = {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": "app", "namespace": namespace},
    }
    spec = {
        "interval": "10m",
        "prune": True,
        "path": "./deploy",
        "sourceRef": {"kind": "GitRepository", "name": "app"},
    }
    kube_client.apply(kustomization.from_dict({**meta, "spec": spec}))

    ready = {
        "type": "Ready",
        "status": "True",
        "reason": "ReconciliationSucceeded",
        "message": "Applied revision: main@sha1:0123",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        "observedGeneration": 1,
    }
    status = {"observedGeneration": 1, "conditions": [ready]}
    kube_client.apply(
        kustomization.Status.from_dict({**meta, "status": status}), field_manager="kustomize-controller"
    )

    got = dict(kube_client.get(kustomization, "app", namespace=namespace))
    assert got["status"] == status
    assert got["spec"]["force"] is False  # defaulted by the real schema

    # The schema is enforced: an enum violation is rejected by the apiserver.
    with pytest.raises(ApiError) as err:
        kube_client.apply(kustomization.from_dict({**meta, "spec": {**spec, "deletionPolicy": "Sometimes"}}))
    assert err.value.status.code == 422
    assert "spec.deletionPolicy" in str(err.value.status.message)


def test_rbac_forbids_a_service_account_without_bindings(
    cluster: Cluster, namespace: str, tmp_path: Path
) -> None:
    config = cluster.service_account_kubeconfig(namespace, "nobody", tmp_path / "kubeconfig")
    client = Client(KubeConfig.from_file(config), trust_env=False, field_manager="nobody")

    with pytest.raises(ApiError) as err:
        client.apply(job(namespace, "denied"))

    assert err.value.status.code == 403
    assert f"system:serviceaccount:{namespace}:nobody" in str(err.value.status.message)
