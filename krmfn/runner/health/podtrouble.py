"""What a pod's status says about why it will not become healthy by itself: the waiting reasons that make
a step fail at once (instead of at its timeout), restart counts, and one line per pod that is not ready.

Pure: the engine lists the pods (workloads.py for Deployments, StatefulSets and DaemonSets, the Job's
label for a Job) and passes them here. Every text comes from the cluster and is hostile: it is cut at
``MAX_TEXT`` characters here, and escaped by the printers (terminal.py) like any other message.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

IMAGE_REASONS = frozenset({"ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName"})
"""The image cannot be had: absent under ``imagePullPolicy: Never``, not found, refused, malformed."""
START_REASONS = frozenset({"CreateContainerConfigError", "CreateContainerError", "RunContainerError"})
"""The container cannot be created or started: a ConfigMap, Secret or key it refers to is missing, an
invalid mount, a command that does not exist."""
CRASH_LOOP = "CrashLoopBackOff"
"""The container exited and the kubelet waits before restarting it (10 s, doubling up to 5 min). A real
kubelet (1.35) writes this waiting reason into the pod's status only for moments: through most of a
back-off the status shows the container ``terminated`` (the run that ended), so a container of a pod that
restarts it, ended again after a restart, is read as this reason too (``_backing_off``)."""
FAIL_FAST = IMAGE_REASONS | START_REASONS | {CRASH_LOOP}
MAX_TEXT = 400


def cut(text: object, limit: int = MAX_TEXT) -> str:
    """``text`` as one bounded line (a message of the cluster may hold anything, newlines included)."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[:limit] + f"... ({len(line) - limit} more characters)"


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _name(pod: dict[str, Any]) -> str:
    return str(_mapping(pod.get("metadata")).get("name", ""))


def _uid(pod: dict[str, Any]) -> str:
    meta = _mapping(pod.get("metadata"))
    return str(meta.get("uid") or meta.get("name", ""))


def statuses(pod: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod's init and regular container statuses, those that are mappings."""
    return [container for _, container in _statuses(pod)]


def _statuses(pod: dict[str, Any]) -> list[tuple[bool, dict[str, Any]]]:
    """(is an init container's, status) for each of the pod's container statuses that is a mapping."""
    status = _mapping(pod.get("status"))
    found = []
    for key, init in (("initContainerStatuses", True), ("containerStatuses", False)):
        listed = status.get(key)
        found += [(init, s) for s in listed if isinstance(s, dict)] if isinstance(listed, list) else []
    return found


def last_run(container: dict[str, Any]) -> str:
    """How the container's previous run ended (``Error (exit code 1)``), or "" if it has not restarted."""
    return ended(_mapping(_mapping(container.get("lastState")).get("terminated")))


def ended(term: dict[str, Any]) -> str:
    """How a run ended, from its ``terminated`` state (``Error (exit code 1)``), or "" for none."""
    if not term:
        return ""
    text = f"{cut(term.get('reason') or 'terminated', 64)} (exit code {cut(term.get('exitCode'), 16)})"
    if term.get("message"):
        text += f": {cut(term['message'], 200)}"
    return text


@dataclass(frozen=True)
class Trouble:
    """One container of one pod waiting for something that will not come by itself."""

    pod: str
    container: str
    reason: str
    message: str
    restarts: int = 0
    last: str = ""
    """How its previous run ended, for a container that restarted."""

    def describe(self) -> str:
        text = f"pod {self.pod} container {self.container}: {self.reason}"
        if self.message:
            text += f": {self.message}"
        if self.last and self.restarts:
            times = f"{self.restarts} time{'s' if self.restarts != 1 else ''}"
            text += f" (restarted {times}, last run: {self.last})"
        elif self.last:  # a start that failed is a run too, before any restart (StartError)
            text += f" (last run: {self.last})"
        return text


def stuck(pods: list[dict[str, Any]], *, crash_loops: bool = True) -> list[Trouble]:
    """The containers of ``pods`` (not being deleted) in a waiting reason of ``FAIL_FAST``, oldest pod
    first; ``crash_loops`` False leaves CrashLoopBackOff out (a Job's restarts are its backoffLimit's to
    judge, a workload's under ``krmfn.dev/max-restarts`` the budget's)."""
    found: list[Trouble] = []
    for pod in _live(pods):
        for init, container in _statuses(pod):
            if crash_loops and _backing_off(pod, container, init):
                term = _mapping(_mapping(container.get("state")).get("terminated"))
                count = _count(container.get("restartCount"))
                found.append(
                    Trouble(
                        cut(_name(pod), 253), cut(container.get("name", ""), 64), CRASH_LOOP,
                        "ended again after a restart; the kubelet restarts it after a back-off", count,
                        ended(term),
                    )
                )  # fmt: skip
                continue
            waiting = _mapping(_mapping(container.get("state")).get("waiting"))
            reason = waiting.get("reason")
            if reason not in FAIL_FAST or (reason == CRASH_LOOP and not crash_loops):
                continue
            found.append(
                Trouble(
                    cut(_name(pod), 253), cut(container.get("name", ""), 64), str(reason),
                    cut(waiting.get("message") or ""), _count(container.get("restartCount")),
                    last_run(container),
                )
            )  # fmt: skip
    return found


def _backing_off(pod: dict[str, Any], container: dict[str, Any], init: bool) -> bool:
    """Whether ``container`` shows the run that ended after at least one restart, in a pod that restarts
    it: the kubelet's CrashLoopBackOff, whatever its status says at this moment. The first exit is
    restarted at once (restartCount 0: not yet); the back-off starts with the second. An init container
    that completed (exit code 0) is done, not crashing; a ``Never`` pod restarts nothing."""
    term = _mapping(_mapping(container.get("state")).get("terminated"))
    if not term or not _count(container.get("restartCount")):
        return False
    policy = _mapping(pod.get("spec")).get("restartPolicy") or "Always"
    failed = term.get("exitCode") != 0
    if init:
        return policy != "Never" and failed
    return policy == "Always" or (policy == "OnFailure" and failed)


def _live(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``pods`` not being deleted, oldest first (a deleted pod's containers are stopping: not a sign)."""
    alive = [p for p in pods if not _mapping(p.get("metadata")).get("deletionTimestamp")]
    return sorted(
        alive, key=lambda p: (str(_mapping(p.get("metadata")).get("creationTimestamp", "")), _name(p))
    )


def restarts(pods: list[dict[str, Any]]) -> dict[str, int]:
    """Container restarts of each live pod (by UID), init containers included."""
    return {_uid(p): sum(_count(c.get("restartCount")) for c in statuses(p)) for p in _live(pods)}


def restarted(before: dict[str, int], pods: list[dict[str, Any]]) -> str:
    """The first container of ``pods`` that restarted since ``before`` (restarts by pod UID), as a line
    (``pod web-1 container app restarted (2 restarts, last run: Error (exit code 1))``), or ""."""
    for pod in _live(pods):
        if sum(_count(c.get("restartCount")) for c in statuses(pod)) <= before.get(_uid(pod), 0):
            continue
        for container in statuses(pod):
            count = _count(container.get("restartCount"))
            if count:
                last = last_run(container)
                detail = f"{count} restart{'s' if count != 1 else ''}" + (f", last run: {last}" * bool(last))
                where = f"pod {cut(_name(pod), 253)} container {cut(container.get('name', ''), 64)}"
                return f"{where} restarted ({detail})"
    return ""


def spent(before: dict[str, int], pods: list[dict[str, Any]]) -> int:
    """Container restarts of ``pods`` since ``before`` (a pod not in it counts from 0)."""
    return sum(max(0, n - before.get(uid, 0)) for uid, n in restarts(pods).items())


def ready(pod: dict[str, Any]) -> bool:
    conditions = _mapping(pod.get("status")).get("conditions")
    for cond in conditions if isinstance(conditions, list) else []:
        if isinstance(cond, dict) and cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def steady_since(pods: list[dict[str, Any]]) -> datetime | None:
    """Since when (the API server's clock) every live pod of ``pods`` has been ready with no container
    ended: the latest of their Ready conditions' transitions and their containers' last exits; None when
    a pod is not ready or a time cannot be read (hostile or missing: never taken as long ago)."""
    latest: datetime | None = None
    alive = _live(pods)
    for pod in alive:
        if not ready(pod):
            return None
        conditions = _mapping(pod.get("status")).get("conditions")  # a list: ready() found Ready in it
        ready_at = [
            c.get("lastTransitionTime")
            for c in conditions or []
            if isinstance(c, dict) and c.get("type") == "Ready"
        ]
        ended = [
            _mapping(_mapping(c.get("lastState")).get("terminated")).get("finishedAt") for c in statuses(pod)
        ]
        for text in [*ready_at, *(t for t in ended if t is not None)]:
            moment = timestamp(text)
            if moment is None:
                return None
            latest = moment if latest is None else max(latest, moment)
    return latest if alive else None


def timestamp(text: object) -> datetime | None:
    """An RFC 3339 time as the API server writes it (``2026-12-03T07:40:01Z``), or None."""
    if not isinstance(text, str) or len(text) > 40:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def not_ready(pods: list[dict[str, Any]], limit: int = 3) -> list[str]:
    """One line for each of the first ``limit`` live pods that are not ready, saying why as far as the
    pod's status does: a waiting or terminated container's reason, else the Ready condition's message
    (``containers with unready status: [app]``: running, its readiness probe not passing)."""
    lines = []
    for pod in _live(pods):
        if ready(pod):
            continue
        lines.append(f"pod {cut(_name(pod), 253)} not ready: {_why_not_ready(pod)}")
        if len(lines) == limit:
            break
    return lines


def _why_not_ready(pod: dict[str, Any]) -> str:
    status = _mapping(pod.get("status"))
    for container in statuses(pod):
        if container.get("ready") is True:
            continue
        state = _mapping(container.get("state"))
        name = cut(container.get("name", ""), 64)
        for which in ("waiting", "terminated"):
            detail = _mapping(state.get(which))
            if detail.get("reason"):
                text = f"container {name} {which}: {cut(detail['reason'], 64)}"
                return text + (f": {cut(detail['message'], 200)}" if detail.get("message") else "")
        if "running" in state:
            restarts = _count(container.get("restartCount"))
            again = f" ({restarts} restarts, last run: {last_run(container)})" if restarts else ""
            return f"container {name} running, readiness probe not passing{again}"
    conditions = status.get("conditions")
    for cond in conditions if isinstance(conditions, list) else []:
        if isinstance(cond, dict) and cond.get("status") != "True" and cond.get("type") == "PodScheduled":
            return f"not scheduled: {cut(cond.get('message') or cond.get('reason') or '', 200)}"
    return f"phase {cut(status.get('phase') or 'Pending', 32)}"
