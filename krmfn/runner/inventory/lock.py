"""The inventory lock: one run at a time per ApplySet, as a lease in an annotation of the parent Secret.

    krmfn.dev/lock: {"holder":"ci-7/4242","run":"3f9a1c2e","since":"2025-06-01T10:00:00Z",
                     "expires":"2025-06-01T10:01:00Z","start":"81234",
                     "boot":"6d93987d-014a-44a9-996e-24ad5840838e","pidns":"4026531836"}

Why the parent and not a coordination.k8s.io Lease: the parent is the object every run reads and writes
anyway, so locking needs no RBAC beyond the inventory's and the lock cannot drift from what it guards.
Why it is safe: every write of the parent is a create (when it does not exist) or a read-modify-write
``PUT`` carrying the resourceVersion of the last read (see inventory.py). Two runs that read the same
version cannot both write it: the loser gets 409, reads the winner's lock and refuses or waits.

The lease lasts ``LEASE`` seconds and is renewed every ``RENEW`` seconds while the run lasts; the run
removes it when it ends, whatever the outcome. A run killed with SIGKILL leaves its lock behind: it
expires after at most ``LEASE`` seconds, and a run takes it over at once when the holding process no
longer exists. That is judged only where the holder's pid means the same process as here: the same
hostname, the same boot (``/proc/sys/kernel/random/boot_id``) and the same PID namespace
(``/proc/self/ns/pid``); two containers share a hostname in a pod but not their pids. The process start
time guards against a reused pid. Expiry compares the wall clocks of two machines; a skew of seconds is
harmless here.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from krmfn.numbers import whole
from krmfn.runner.cluster.api import parse_json
from krmfn.terminal import cut

LEASE = 60.0
RENEW = LEASE / 4
_TIME = "%Y-%m-%dT%H:%M:%SZ"


def _format(t: datetime) -> str:
    return t.astimezone(UTC).strftime(_TIME)


def _parse_time(text: Any) -> datetime:
    return datetime.strptime(str(text), _TIME).replace(tzinfo=UTC)


def _process_start(pid: int) -> str:
    """Start time of ``pid`` in clock ticks since boot (Linux); "" where /proc does not tell, and
    "exited" for a zombie (killed, not yet reaped: it runs nothing)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    # The command name (field 2) may contain spaces and parentheses; fields after the last ")" are fixed.
    fields = stat.rpartition(")")[2].split()
    if fields and fields[0] in ("Z", "X"):
        return "exited"
    return fields[19] if len(fields) > 19 else ""


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _pid_namespace() -> str:
    """The inode of this process's PID namespace (``pid:[4026531836]`` -> ``4026531836``)."""
    try:
        link = os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""
    return link.partition("[")[2].rstrip("]")


@dataclass(frozen=True)
class Lease:
    holder: str
    """``<hostname>/<pid>`` of the process that holds the lock."""
    run: str
    """Random id of the run: two runs of one process are different holders."""
    since: datetime
    expires: datetime
    start: str = ""
    boot: str = ""
    """Boot id of the holder's machine: a pid means nothing across reboots or machines."""
    pidns: str = ""
    """The holder's PID namespace: a pid means nothing in another one (another container)."""

    @classmethod
    def new(cls, now: datetime, duration: float = LEASE) -> Lease:
        pid = os.getpid()
        return cls(
            holder=f"{socket.gethostname()}/{pid}",
            run=os.urandom(4).hex(),
            since=now,
            expires=now + timedelta(seconds=duration),
            start=_process_start(pid),
            boot=_boot_id(),
            pidns=_pid_namespace(),
        )

    def renewed(self, now: datetime, duration: float = LEASE) -> Lease:
        return replace(self, expires=now + timedelta(seconds=duration))

    def render(self) -> str:
        data = {"holder": self.holder, "run": self.run, "since": _format(self.since),
                "expires": _format(self.expires)}  # fmt: skip
        for name in ("start", "boot", "pidns"):
            if getattr(self, name):
                data[name] = getattr(self, name)
        return json.dumps(data, separators=(",", ":"))

    @classmethod
    def parse(cls, text: str) -> Lease | None:
        """The lease in an annotation value; None when it is not one (nothing to respect). The holder
        and the run are cut as runs.py cuts a record's texts: they are shown, and anyone may write them."""
        try:
            data = parse_json(text)
            return cls(cut(str(data["holder"]), 253), cut(str(data["run"]), 64), _parse_time(data["since"]),
                       _parse_time(data["expires"]), str(data.get("start", "")),
                       str(data.get("boot", "")), str(data.get("pidns", "")))  # fmt: skip
        except (ValueError, TypeError, KeyError):
            return None

    def expired(self, now: datetime) -> bool:
        return now >= self.expires

    def holder_gone(self) -> bool:
        """True only when the holder ran here (this hostname, boot and PID namespace) and that process is
        certainly gone. A lease that does not say its boot and PID namespace is never judged gone."""
        host, _, pid_text = self.holder.rpartition("/")
        # The lease comes from the cluster (krmfn.numbers says why not int()); os.kill refuses a pid
        # beyond a C int, and 0 or 1 is never a krmfn run.
        pid = whole(pid_text, 2**31 - 1, low=2)
        if host != socket.gethostname() or pid is None:
            return False
        here = (_boot_id(), _pid_namespace())
        if "" in here or (self.boot, self.pidns) != here:
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            pass  # it exists, owned by someone else
        return bool(self.start) and _process_start(pid) not in ("", self.start)

    def status(self, now: datetime) -> str:
        left = max(0, round((self.expires - now).total_seconds()))
        return f"run {self.run} since {_format(self.since)}, lease expires in {left}s"

    def describe(self, now: datetime) -> str:
        return f"{self.holder} ({self.status(now)})"


def held_by_other(lease: Lease | None, run: str, now: datetime) -> tuple[bool, str]:
    """Whether ``lease`` keeps run ``run`` out, and when not, why a foreign lease may be taken over."""
    if lease is None or lease.run == run:
        return False, ""
    if lease.expired(now):
        return False, f"its lease expired at {_format(lease.expires)}"
    if lease.holder_gone():
        return False, "its process no longer exists"
    return True, ""
