"""Watch-based waiting: watches feed a queue of object updates; the engine consumes.

``follow_all`` watches the objects of one kind in one namespace with one watch of that collection (not
one per object: a step of 500 Deployments is one connection and one thread, not 500). The watch starts
at the oldest resourceVersion among them, so no change of any of them after its applied state is missed;
an event no newer than what is already known of its object (or about another object of the kind) is
dropped. That comparison needs resourceVersions that are integers, as the API server's etcd-backed ones
are; where one is not (an aggregated API server's own), or where a group has one object, each object
gets its own watch with a field selector on its name. So does each object of a collection whose watch
is forbidden (RBAC that grants watch by name only, with ``resourceNames``).

A dropped watch (connection lost, API server restarted, server-side timeout) resumes from the last
resourceVersion seen, bookmarks included; a 410 Gone starts over from the current state. Threads are
daemons and stop at the next event after ``stop`` is set, so an abandoned wait never blocks exit.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from krmfn.errors import RunnerError
from krmfn.numbers import whole
from krmfn.runner.cluster.api import TRANSIENT, Api, ApiStatusError, Resource
from krmfn.runner.plan import Key

# A queue entry: the object (None: deleted), or the error that ended the watch for good.
Update = tuple[Key, dict[str, Any] | RunnerError | None]


@dataclass
class Watched:
    key: Key
    res: Resource
    resource_version: str


class Watcher:
    def __init__(self, api: Api, sleep: Callable[[float], None] = time.sleep) -> None:
        self.api = api
        self.updates: queue.Queue[Update] = queue.Queue()
        self.stop = threading.Event()
        self._sleep = sleep

    def follow(self, watched: Watched) -> None:
        """One object, with a watch of its own."""
        self._start(_Collection(watched.res, watched.key.namespace, [watched], by_name=True))

    def follow_all(self, watched: Iterable[Watched]) -> None:
        """Objects, with one watch per kind and namespace where their resourceVersions allow it."""
        grouped: dict[tuple[Resource, str], list[Watched]] = {}
        for w in watched:
            grouped.setdefault((w.res, w.key.namespace), []).append(w)
        for (res, namespace), members in grouped.items():
            if len(members) > 1 and all(_version(w.resource_version) is not None for w in members):
                self._start(_Collection(res, namespace, members, by_name=False))
            else:
                for w in members:
                    self.follow(w)

    def close(self) -> None:
        self.stop.set()

    def _start(self, collection: _Collection) -> None:
        name = f"watch {collection}"
        threading.Thread(target=self._run, args=(collection,), daemon=True, name=name).start()

    def _run(self, c: _Collection) -> None:
        version = c.start
        delay = 0.05
        while not self.stop.is_set():
            try:
                for kind, obj in self.api.watch(c.res, c.name, c.namespace, version, self.stop):
                    delay = 0.05
                    if kind == "ERROR":
                        if obj.get("code") == 410:
                            version = ""  # too old: restart from the current state (sent as ADDED)
                            break
                        code = obj.get("code")  # cluster data: a code that is not a number reads as 0
                        raise ApiStatusError(code if type(code) is int else 0, str(obj.get("reason", "")),
                                             str(obj.get("message", "")))  # fmt: skip
                    meta = obj.get("metadata")
                    meta = meta if isinstance(meta, dict) else {}
                    version = str(meta.get("resourceVersion") or version)
                    if kind == "BOOKMARK":
                        continue
                    key = c.news(str(meta.get("name") or ""), version)
                    if key is not None:
                        self.updates.put((key, None if kind == "DELETED" else obj))
            except ApiStatusError as err:
                if err.code == 410:
                    version = ""
                elif err.code == 403 and not c.name:
                    # RBAC that grants watch by name only (resourceNames): a watch per object, each from
                    # the newest state known of it.
                    for single in c.singles():
                        self._start(single)
                    return
                elif err.code not in TRANSIENT:
                    for key in c.members():
                        self.updates.put((key, err))
                    return
            except RunnerError:
                pass  # dropped connection: resume below from the last version seen
            if self.stop.is_set():
                return
            self._sleep(delay)
            delay = min(delay * 2, 2.0)


class _Collection:
    """What one watch follows: one object by name, or several objects of one kind in one namespace."""

    def __init__(self, res: Resource, namespace: str, members: list[Watched], *, by_name: bool) -> None:
        self.res = res
        self.namespace = namespace
        self.name = members[0].key.name if by_name else ""
        self._keys = {w.key.name: w.key for w in members}
        # The newest state known of each object (None: not comparable, every event is news).
        self._known = {w.key.name: _version(w.resource_version) for w in members}
        versions = [v for v in self._known.values() if v is not None]
        if by_name:
            self.start = members[0].resource_version
        else:
            self.start = str(min(versions)) if versions else ""

    def members(self) -> list[Key]:
        return list(self._keys.values())

    def singles(self) -> list[_Collection]:
        """One watch by name per object, each from the newest version known of it."""
        res, namespace = self.res, self.namespace
        return [
            _Collection(res, namespace, [Watched(key, res, str(self._known[name]))], by_name=True)
            for name, key in self._keys.items()
        ]

    def news(self, name: str, version: str) -> Key | None:
        """The key of ``name`` if an event at ``version`` tells something not known yet about it."""
        key = self._keys.get(name)
        if key is None:
            return None  # another object of the kind in the namespace
        known, seen = self._known[name], _version(version)
        if known is not None and seen is not None:
            if seen <= known:
                return None  # a state older than (or the same as) the one already known
            self._known[name] = seen
        return key

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.res.plural} {where}{self.name or '*'}"


def _version(text: str) -> int | None:
    """``text`` as a comparable integer, or None. A version comes from the cluster: one that is not an
    etcd revision (an int64) is not compared (``int()`` raises past 4,300 digits: the watch would end)."""
    return whole(text, 2**63 - 1)
