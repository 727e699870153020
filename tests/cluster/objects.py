"""Typed access to the fields lightkube's models declare optional, for objects read back from the cluster.

lightkube types nearly every field as ``X | None`` (``metadata``, ``spec``, ``status``, ``uid``, ...)
because a client may omit it. An object the API server returns does carry them; these helpers state that
expectation and fail the test with a message naming what is missing, rather than with an
``AttributeError`` on ``None``.

    from .objects import meta, status_of
    assert status_of(kube_client.get(Job, "migrate", namespace=ns)).succeeded == 1
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol, TypeVar

import pytest
from lightkube import ApiError, Client
from lightkube.models.core_v1 import PodSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.batch_v1 import Job

T = TypeVar("T")
S_co = TypeVar("S_co", covariant=True)


class HasMetadata(Protocol):
    @property
    def metadata(self) -> ObjectMeta | None: ...


class HasStatus(Protocol[S_co]):
    @property
    def status(self) -> S_co | None: ...


def present(value: T | None, what: str) -> T:
    """``value``; fails the test with "``what`` is missing" if it is None."""
    if value is None:
        pytest.fail(f"{what} is missing")
    return value


def describe(obj: object) -> str:
    """``Kind name`` of a lightkube object, for messages."""
    metadata: Any = getattr(obj, "metadata", None)
    name = getattr(metadata, "name", None)
    return f"{type(obj).__name__} {name}" if name else type(obj).__name__


def meta(obj: HasMetadata) -> ObjectMeta:
    """The object's metadata."""
    return present(obj.metadata, f"metadata of the {type(obj).__name__}")


def name_of(obj: HasMetadata) -> str:
    return present(meta(obj).name, f"metadata.name of the {type(obj).__name__}")


def annotations_of(obj: HasMetadata) -> dict[str, str]:
    """The object's annotations; the test expects it to have some."""
    notes: dict[str, str] = present(meta(obj).annotations, f"metadata.annotations of {describe(obj)}")
    return notes


def created(obj: HasMetadata) -> datetime:
    return present(meta(obj).creationTimestamp, f"metadata.creationTimestamp of {describe(obj)}")


def status_of(obj: HasStatus[T]) -> T:
    """The object's status, as its controller (kwok, the Job controller, ...) last wrote it."""
    return present(obj.status, f"status of {describe(obj)}")


def pod_spec(workload: Job | Deployment) -> PodSpec:
    """``spec.template.spec`` of a Job or Deployment."""
    if isinstance(workload, Job):  # a Deployment's spec is required; a Job's is typed optional
        template = present(workload.spec, f"spec of {describe(workload)}").template
    else:
        template = workload.spec.template
    return present(template.spec, f"spec.template.spec of {describe(workload)}")


def exists(client: Client, res: type, name: str, namespace: str) -> bool:
    """Whether the object is there (a 404 says no; any other error fails the test)."""
    try:
        client.get(res, name, namespace=namespace)
    except ApiError as err:
        if err.status.code == 404:
            return False
        raise
    return True
