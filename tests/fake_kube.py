"""An in-memory ``krmfn.runner.cluster.api.Api`` for fast tests of the runner's cluster-facing code.

Faithful where the inventory, the lock and prune depend on the API server:

- one resourceVersion counter for the whole store (etcd's revision): every write that changes an object
  gives it a new, higher resourceVersion; a write that changes nothing keeps it, as the API server does;
- ``create`` of an existing object answers 409 ``AlreadyExists``; ``replace`` (PUT) carrying a
  resourceVersion or uid that is not the live one answers 409 ``Conflict``, and of a missing object 404
  ``NotFound`` (Secrets cannot be created by PUT), with the API server's reasons and messages;
- errors are raised the way the edge (``kube.HttpApi``) raises them: ``ApiStatusError``. Like
  ``HttpApi``, ``get`` returns None for a missing object and ``delete`` returns False when the object
  is gone or its UID precondition fails (HttpApi turns those answers into values);
- uid, creationTimestamp and resourceVersion are the server's: a client cannot change them; objects
  handed out are copies, so a caller that keeps one holds a stale version, as over HTTP.

Not modelled: namespaces' existence, admission, field ownership (``apply`` replaces the object with the
applied configuration, keeping its status: one field manager), generations, watches, logs.

``before`` hooks run before each request is served, outside the store's lock, with the verb and the
object's ``Key``: they may raise (a fault: 503, connection lost), change the store as another client
would, or advance a fake clock (a request that took long). ``controllers`` run after each apply and may
set the status a controller would (a Job completing); the apply answers with what they set, as if the
controller had been quick.

``FakeClock`` and ``Harness`` build inventories (inventory.py) on a ``FakeApi`` the way the engine does,
with a clock that moves only when a test says so.
"""

from __future__ import annotations

import builtins
import copy
import itertools
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from krmfn.runner.cluster.api import ApiStatusError, NoSuchKind, Resource, WatchEvent, call
from krmfn.runner.events import Event
from krmfn.runner.inventory.inventory import Inventory, lease_of
from krmfn.runner.inventory.lock import LEASE, RENEW, Lease
from krmfn.runner.plan import Key

Obj = dict[str, Any]
Hook = Callable[[str, Key], None]
Controller = Callable[[Obj], None]

RESOURCES = [
    Resource("", "v1", "ConfigMap", "configmaps", True),
    Resource("", "v1", "Secret", "secrets", True),
    Resource("", "v1", "Namespace", "namespaces", False),
    Resource("batch", "v1", "Job", "jobs", True),
    Resource("", "v1", "Pod", "pods", True),
    Resource("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False),
    Resource("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False),
]
SERVER_FIELDS = ("uid", "creationTimestamp", "resourceVersion")


def _qualified(res: Resource) -> str:
    """The resource as the API server names it in messages: ``secrets``, ``jobs.batch``."""
    return f"{res.plural}.{res.group}" if res.group else res.plural


def not_found(res: Resource, name: str) -> ApiStatusError:
    return ApiStatusError(404, "NotFound", f'{_qualified(res)} "{name}" not found')


def already_exists(res: Resource, name: str) -> ApiStatusError:
    return ApiStatusError(409, "AlreadyExists", f'{_qualified(res)} "{name}" already exists')


def modified(res: Resource, name: str) -> ApiStatusError:
    return ApiStatusError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {_qualified(res)} "{name}": the object has been modified; '
        "please apply your changes to the latest version and try again",
    )


class FakeApi:
    def __init__(self, default_namespace: str = "default") -> None:
        self.default_namespace = default_namespace
        self.before: list[Hook] = []
        self.controllers: list[Controller] = []
        self.requests: list[tuple[str, str]] = []
        """(verb, object) of every request served, in order; ``object`` is ``str(Key)``."""
        self.log_lines: dict[tuple[str, str, bool], str] = {}
        """(pod, container, previous) -> the log a test gives that container."""
        self.log_requests: list[tuple[str, str, bool]] = []
        self.log_streams: dict[tuple[str, str], list[list[str]]] = {}
        """``follow_logs``: per (pod, container), the streams its follow requests get, in order."""
        self.follow_requests: list[tuple[str, str, str]] = []
        self.server_now: datetime | None = None
        """What ``server_time`` answers (None: the server's time is not known, as before any answer)."""
        self._objects: dict[Key, Obj] = {}
        self._revision = itertools.count(1)
        self._uids = (str(uuid.UUID(int=i)) for i in itertools.count(1))
        self._lock = threading.RLock()
        self._by_kind = {(r.api_version, r.kind): r for r in RESOURCES}

    # --- discovery ---------------------------------------------------------------------------------------

    def resource(self, api_version: str, kind: str) -> Resource:
        found = self._by_kind.get((api_version, kind))
        if found is None:
            raise NoSuchKind(f"the cluster does not serve kind {kind} in {api_version}")
        return found

    def forget(self, api_version: str) -> None:
        pass

    def resource_for_group_kind(self, group: str, kind: str) -> Resource:
        for res in RESOURCES:
            if (res.group, res.kind) == (group, kind):
                return res
        raise NoSuchKind(f"the cluster no longer serves the group {group}")

    # --- requests ----------------------------------------------------------------------------------------

    def create(self, res: Resource, obj: Obj, *, field_manager: str) -> Obj:
        key = self._key(res, obj)
        self._serve("create", key)
        with self._lock:
            if key in self._objects:
                raise already_exists(res, key.name)
            if obj["metadata"].get("resourceVersion"):
                raise ApiStatusError(
                    500, "InternalError", "resourceVersion should not be set on objects to be created"
                )
            return self._store(res, key, None, obj, field_manager)

    def replace(self, res: Resource, obj: Obj, *, field_manager: str) -> Obj:
        key = self._key(res, obj)
        self._serve("replace", key)
        with self._lock:
            live = self._objects.get(key)
            if live is None:
                raise not_found(res, key.name)
            meta, live_meta = obj["metadata"], live["metadata"]
            version = meta.get("resourceVersion")
            if version and version != live_meta["resourceVersion"]:
                raise modified(res, key.name)
            if meta.get("uid") and meta["uid"] != live_meta["uid"]:
                raise ApiStatusError(
                    409,
                    "Conflict",
                    f'Operation cannot be fulfilled on {_qualified(res)} "{key.name}": Precondition failed: '
                    f"UID in precondition: {meta['uid']}, UID in object meta: {live_meta['uid']}",
                )
            return self._store(res, key, live, obj, field_manager)

    def apply(
        self, res: Resource, obj: Obj, *, field_manager: str, force: bool, dry_run: bool
    ) -> tuple[Obj, bool]:
        key = self._key(res, obj)
        self._serve("apply-dry-run" if dry_run else "apply", key)
        with self._lock:
            live = self._objects.get(key)
            wanted = copy.deepcopy(obj)
            if live is not None and "status" in live:
                wanted["status"] = copy.deepcopy(live["status"])
            if dry_run:  # what the write would store, as the API server answers a dry run
                return self._store(res, key, live, wanted, field_manager, persist=False), live is None
            stored = self._store(res, key, live, wanted, field_manager)
            for controller in self.controllers:
                updated = copy.deepcopy(self._objects[key])
                controller(updated)
                stored = self._store(res, key, self._objects[key], updated, "controller")
            return stored, live is None

    def get(self, res: Resource, name: str, namespace: str) -> Obj | None:
        key = Key(res.group, res.kind, namespace if res.namespaced else "", name)
        self._serve("get", key)
        with self._lock:
            live = self._objects.get(key)
            return copy.deepcopy(live) if live is not None else None

    def list(self, res: Resource, namespace: str, label_selector: str) -> list[Obj]:
        self._serve("list", Key(res.group, res.kind, namespace, ""))
        wanted = dict(part.split("=", 1) for part in label_selector.split(",") if part)
        with self._lock:
            found = []
            for key, obj in sorted(self._objects.items()):
                if (key.group, key.kind) != (res.group, res.kind):
                    continue
                if res.namespaced and namespace and key.namespace != namespace:
                    continue
                labels = obj["metadata"].get("labels") or {}
                if all(labels.get(k) == v for k, v in wanted.items()):
                    found.append(copy.deepcopy(obj))
            return found

    def delete(self, res: Resource, name: str, namespace: str, *, uid: str, propagation: str) -> bool:
        assert uid, "every delete carries a UID precondition"
        key = Key(res.group, res.kind, namespace if res.namespaced else "", name)
        self._serve("delete", key)
        with self._lock:
            live = self._objects.get(key)
            if live is None or live["metadata"]["uid"] != uid:
                return False  # HttpApi: 404, or 409 on the UID precondition
            del self._objects[key]
            next(self._revision)
            return True

    def watch(
        self, res: Resource, name: str, namespace: str, resource_version: str, stop: threading.Event
    ) -> Iterator[WatchEvent]:
        raise AssertionError("FakeApi does not model watches: use objects that are healthy once applied")

    def logs(
        self, name: str, namespace: str, container: str, tail: int, previous: bool = False
    ) -> str | None:
        self.log_requests.append((name, container, previous))
        return self.log_lines.get((name, container, previous))

    def server_time(self) -> datetime | None:
        return self.server_now

    def follow_logs(
        self, name: str, namespace: str, container: str, since: str, stop: threading.Event
    ) -> Iterator[str]:
        """The next of ``log_streams[(pod, container)]``'s streams (each a list of timestamped lines, as
        the kubelet sends them with ``timestamps=true``); none left: an empty stream."""
        self.follow_requests.append((name, container, since))
        streams = self.log_streams.get((name, container)) or []
        yield from streams.pop(0) if streams else []

    # --- for tests: the store as another client sees it ----------------------------------------------------

    def object(self, api_version: str, kind: str, namespace: str, name: str) -> Obj | None:
        """The stored object, without a request being recorded."""
        res = self.resource(api_version, kind)
        with self._lock:
            live = self._objects.get(Key(res.group, res.kind, namespace if res.namespaced else "", name))
            return copy.deepcopy(live) if live is not None else None

    def seed(self, obj: Obj) -> Obj:
        """Creates ``obj`` as another client would (no hooks, not recorded)."""
        res = self.resource(obj["apiVersion"], obj["kind"])
        key = self._key(res, obj)
        with self._lock:
            if key in self._objects:
                raise already_exists(res, key.name)
            return self._store(res, key, None, obj, "test")

    def annotate(
        self, api_version: str, kind: str, namespace: str, name: str, changes: dict[str, str | None]
    ) -> Obj:
        """A merge patch of annotations by another client (``None`` removes one): no resourceVersion
        precondition, so it always lands and gives the object a new resourceVersion."""
        res = self.resource(api_version, kind)
        key = Key(res.group, res.kind, namespace if res.namespaced else "", name)
        with self._lock:
            live = self._objects.get(key)
            if live is None:
                raise not_found(res, name)
            patched = copy.deepcopy(live)
            notes = patched["metadata"].setdefault("annotations", {})
            for k, v in changes.items():
                if v is None:
                    notes.pop(k, None)
                else:
                    notes[k] = v
            return self._store(res, key, live, patched, "test")

    def remove(self, api_version: str, kind: str, namespace: str, name: str) -> None:
        """Deletes as another client (a TTL controller, a person)."""
        res = self.resource(api_version, kind)
        with self._lock:
            del self._objects[Key(res.group, res.kind, namespace if res.namespaced else "", name)]
            next(self._revision)

    def writes(self, obj: str) -> builtins.list[str]:
        """The verbs of the write requests served for ``obj`` (``str(Key)``), in order."""
        return [verb for verb, o in self.requests if o == obj and verb not in ("get", "list")]

    # --- internals ---------------------------------------------------------------------------------------

    def _key(self, res: Resource, obj: Obj) -> Key:
        meta = obj["metadata"]
        namespace = str(meta.get("namespace") or "") if res.namespaced else ""
        if res.namespaced and not namespace:
            raise ApiStatusError(404, "NotFound", "the server could not find the requested resource")
        return Key(res.group, res.kind, namespace, str(meta["name"]))

    def _serve(self, verb: str, key: Key) -> None:
        for hook in list(self.before):
            hook(verb, key)
        with self._lock:
            self.requests.append((verb, str(key)))

    def _store(
        self, res: Resource, key: Key, live: Obj | None, obj: Obj, field_manager: str, *, persist: bool = True
    ) -> Obj:
        new = copy.deepcopy(obj)
        new.setdefault("apiVersion", res.api_version)
        new.setdefault("kind", res.kind)
        meta = new["metadata"]
        meta["namespace"] = key.namespace
        if not key.namespace:
            meta.pop("namespace")
        meta.pop("managedFields", None)
        if live is not None:
            for name in SERVER_FIELDS:
                meta[name] = live["metadata"][name]
            if _without_server_fields(new) == _without_server_fields(live):
                return copy.deepcopy(live)  # a no-op write: nothing changes, not even resourceVersion
        else:
            meta["uid"] = "" if not persist else next(self._uids)
            meta["creationTimestamp"] = "2025-06-01T00:00:00Z"
        meta["managedFields"] = [{"manager": field_manager, "operation": "Update"}]
        if not persist:  # a dry run keeps the live resourceVersion, as the API server's dry run does
            return copy.deepcopy(new)
        meta["resourceVersion"] = str(next(self._revision))
        self._objects[key] = new
        return copy.deepcopy(new)


def _without_server_fields(obj: Obj) -> Obj:
    meta = {k: v for k, v in obj["metadata"].items() if k not in (*SERVER_FIELDS, "managedFields")}
    return {**obj, "metadata": meta}


# --- the inventory on a fake cluster and a fake clock -------------------------------------------------------

START = datetime(2025, 6, 1, 10, 0, 0, tzinfo=UTC)


class FakeClock:
    """A wall clock and a monotonic clock that move together, only when advanced or slept on."""

    def __init__(self, wall: datetime = START) -> None:
        self.wall = wall
        self.mono = 1000.0
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self.wall

    def monotonic(self) -> float:
        with self._lock:
            return self.mono

    def sleep(self, seconds: float) -> None:
        self.advance(seconds)

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.mono += seconds
            self.wall += timedelta(seconds=seconds)


@dataclass
class Harness:
    """Inventories of the parent ``apps/krmfn`` on one fake cluster, as runs of one process see it."""

    api: FakeApi = field(default_factory=lambda: FakeApi("apps"))
    clock: FakeClock = field(default_factory=FakeClock)
    events: list[Event] = field(default_factory=list)
    made: list[Inventory] = field(default_factory=list)

    def inventory(
        self,
        *,
        lease: float = LEASE,
        renew: float = RENEW,
        sleep: Callable[[float], None] | None = None,
        check_stop: Callable[[], None] | None = None,
    ) -> Inventory:
        """An inventory as the engine builds one, its requests mapped to errors by ``errors.call``.
        The lease is renewed every ``renew`` seconds of real time (the default: not during a test)."""
        inventory = Inventory(
            self.api, "krmfn", "apps", field_manager="krmfn", version="0.1.0",
            call=call, emit=self.events.append,
            check_stop=check_stop or (lambda: None), sleep=sleep or self.clock.sleep,
            monotonic=self.clock.monotonic, now=self.clock.now, lease=lease, renew=renew,
        )  # fmt: skip
        self.made.append(inventory)
        return inventory

    def parent(self) -> Obj | None:
        return self.api.object("v1", "Secret", "apps", "krmfn")

    def annotations(self) -> dict[str, str]:
        parent = self.parent()
        assert parent is not None, "the parent Secret does not exist"
        return dict(parent["metadata"].get("annotations") or {})

    def lease(self) -> Lease | None:
        return lease_of(self.parent())

    def parent_writes(self) -> list[str]:
        return self.api.writes("Secret apps/krmfn")

    def close(self) -> None:
        for inventory in self.made:
            inventory.abandon()
