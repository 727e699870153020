"""Custom resource definitions the runner's cluster tests install: one kind whose objects hold any JSON
(``x-kubernetes-preserve-unknown-fields``), with a status subresource a test writes as a controller."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, cast

from lightkube import ApiError, Client
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.types import PatchType

from .cluster import wait_until

Doc = dict[str, Any]


ANYTHING = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}


def open_crd(group: str, kind: str, plural: str) -> Doc:
    """A namespaced kind ``kind`` of ``group``/v1 whose objects may hold anything."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind, "listKind": f"{kind}List"},
            "versions": [{
                "name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                "schema": ANYTHING,
            }],
        },
    }  # fmt: skip


def install(client: Client, crd: Doc, resource: Any) -> None:
    """``crd`` created unless it exists, then waited for until Established and its kind served."""
    name = crd["metadata"]["name"]
    try:
        client.get(CustomResourceDefinition, name)
    except ApiError:
        client.create(cast(CustomResourceDefinition, CustomResourceDefinition.from_dict(crd)))

    def established() -> bool:
        found = client.get(CustomResourceDefinition, name)
        conditions = (found.status.conditions if found.status else None) or []
        return any(c.type == "Established" and c.status == "True" for c in conditions)

    def served() -> bool:
        try:
            list(client.list(resource, namespace="default"))
        except Exception:  # a plain-text 404 until discovery serves the kind
            return False
        return True

    wait_until(f"the CRD {name} established", established, 30)
    wait_until(f"{crd['spec']['names']['plural']} served", served, 30)


Controller = Callable[[str, float, Doc], None]


@contextlib.contextmanager
def controller(client: Client, namespace: str, resource: Any) -> Iterator[Controller]:
    """``drive(name, delay, status)``: writes ``status`` on the object ``name`` of ``resource`` ``delay``
    seconds after it appears, as its controller would; the threads end with the block."""
    stop = threading.Event()
    threads: list[threading.Thread] = []

    def drive(name: str, delay: float, status: Doc) -> None:
        def run() -> None:
            while not stop.wait(0.05):
                try:
                    client.get(resource, name, namespace=namespace)
                except ApiError:
                    continue
                time.sleep(delay)
                client.patch(resource.Status, name, {"status": status}, namespace=namespace,
                             patch_type=PatchType.MERGE)  # fmt: skip
                return

        threads.append(threading.Thread(target=run, daemon=True))
        threads[-1].start()

    try:
        yield drive
    finally:
        stop.set()
        for thread in threads:
            thread.join(10)
