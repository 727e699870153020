"""Watch-based waiting: one thread per object follows its watch and feeds a queue; the engine consumes.

A dropped watch (connection lost, API server restarted, server-side timeout) resumes from the last
resourceVersion seen, bookmarks included; a 410 Gone starts over from the current state. Threads are
daemons and stop at the next event after ``stop`` is set, so an abandoned wait never blocks exit.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from krmfn.errors import RunnerError
from krmfn.runner.api import Api, ApiStatusError, Resource
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
        self._threads: list[threading.Thread] = []

    def follow(self, watched: Watched) -> None:
        thread = threading.Thread(target=self._run, args=(watched,), daemon=True, name=f"watch {watched.key}")
        self._threads.append(thread)
        thread.start()

    def close(self) -> None:
        self.stop.set()

    def _run(self, watched: Watched) -> None:
        key, res, version = watched.key, watched.res, watched.resource_version
        delay = 0.05
        while not self.stop.is_set():
            try:
                for kind, obj in self.api.watch(res, key.name, key.namespace, version, self.stop):
                    delay = 0.05
                    if kind == "ERROR":
                        if obj.get("code") == 410:
                            version = ""  # too old: restart from the current state (sent as ADDED)
                            break
                        raise ApiStatusError(int(obj.get("code") or 0), str(obj.get("reason", "")),
                                             str(obj.get("message", "")))  # fmt: skip
                    version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
                    if kind == "BOOKMARK":
                        continue
                    self.updates.put((key, None if kind == "DELETED" else obj))
            except ApiStatusError as err:
                if err.code == 410:
                    version = ""
                elif err.code not in (429, 500, 502, 503, 504):
                    self.updates.put((key, err))
                    return
            except RunnerError:
                pass  # dropped connection: resume below from the last version seen
            if self.stop.is_set():
                return
            self._sleep(delay)
            delay = min(delay * 2, 2.0)
