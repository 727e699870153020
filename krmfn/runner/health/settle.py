"""The settle rule: a Deployment, StatefulSet or DaemonSet is healthy only once its rollout has held.

Its status alone can say "rolled out" while its pods crash: with no readiness probe a container is Ready
the moment it starts, so a pod that exits at once is Available for a moment between restarts, and a
Deployment is counted available then (issue 32: reported rolled out in 2 of 5 runs). So, on top of the
status rules (status.py), while a step waits:

1. **Fail fast.** A pod of the current template (workloads.py) with a container waiting in
   CrashLoopBackOff (or ended again after a restart: the back-off as a real kubelet mostly shows it),
   ErrImagePull, ImagePullBackOff, ErrImageNeverPull, InvalidImageName, CreateContainerConfigError,
   CreateContainerError or RunContainerError fails the step at once, naming the pod, the container, the
   reason and the kubelet's message (podtrouble.py).
2. **Restart budget.** ``krmfn.dev/max-restarts: N`` on the workload tolerates crash loops while its
   pods' containers restart at most N times in all during the wait (an app that crashes until its
   database is up); the N+1st restart fails the step. Without it, the first CrashLoopBackOff fails.
3. **Settle window.** Once the status says rolled out, the step is done only after ``window`` seconds
   (``krmfn.dev/settle``, a duration, default ``DEFAULT_WINDOW``; ``0s`` turns it off, as does
   ``spec.replicas: 0``: no pod is wanted, none can crash) in which every
   pod of the current template stayed ready and no container restarted; a restart or an unready pod
   starts the window again, once the status is back to rolled out. It plays ``minReadySeconds``'s part
   for every workload, judged by the runner (a workload's own ``minReadySeconds`` still counts, in its
   status). Only when the pods cannot be listed does the status alone decide, as before.
4. **Held already.** A workload this run left as it was (the server changed nothing) whose pods, at the
   first look, have all been ready with no container ended for at least the window, by the API server's
   own clock (its ``Date`` header against the pods' Ready transitions and last exits), has held already:
   re-running an unchanged deploy does not wait the window again. Anything less (a pod not ready, a time
   that cannot be read, a recent restart, no server time) and the window applies as for a change.

Pure: the engine lists the pods and passes the clock's time. The annotations are read in
``runner/settle_annotations.py``, where the plan checks them before anything is applied.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from krmfn.duration import SECOND, format_duration
from krmfn.runner.health import podtrouble
from krmfn.runner.health.status import Health
from krmfn.runner.settle_annotations import DEFAULT_WINDOW, MAX_RESTARTS


@dataclass
class Settler:
    """The settle state of one workload during one wait."""

    window: float = DEFAULT_WINDOW
    budget: int | None = None
    pods: list[dict[str, Any]] | None = None
    """The current template's pods at the last look; None: not listed (or not listable)."""
    first: dict[str, int] | None = None
    """Restarts by pod UID at the first look: the budget counts from there."""
    since: float | None = None
    """When the status last turned rolled out with every pod ready (the window's start)."""
    at_since: dict[str, int] = field(default_factory=dict)
    broke: str = ""
    """Why the last window started again (a restart, an unready pod), for the status line."""
    held_before: datetime | None = None
    """Set when this run left the workload unchanged: the server's time ``window`` ago. Pods steady since
    then have held already (rule 4); only the first judgement asks."""
    judged: bool = False
    behind: bool = False
    """The status says rolled out but the last look at the pods, older, shows one not ready: a new look
    now starts the window when the rollout ends, not up to a pod poll later."""

    def observe(self, pods: list[dict[str, Any]] | None) -> Health | None:
        """Takes a new look at the pods; the failure they show, if any."""
        self.pods = pods
        if pods is None:
            return None
        if self.first is None:
            self.first = podtrouble.restarts(pods)
        trouble = podtrouble.stuck(pods, crash_loops=self.budget is None)
        if trouble:
            return Health("failed", trouble[0].describe())
        if self.budget is not None:
            spent = podtrouble.spent(self.first, pods)
            if spent > self.budget:
                latest = podtrouble.restarted(self.first, pods)
                return Health(
                    "failed",
                    f"{spent} container restarts during the wait, more than {MAX_RESTARTS}: {self.budget}; "
                    f"{latest}",
                )
        if self.since is not None:
            why = podtrouble.restarted(self.at_since, pods) or "; ".join(podtrouble.not_ready(pods, 1))
            if why:
                self.since, self.broke = None, why
        return None

    def judge(self, found: Health, now: float) -> Health:
        """``found`` (the status rules' health) with the settle window applied."""
        first, self.judged, self.behind = not self.judged, True, False
        # No pods listed yet is not "no pods to judge": the last list may predate the pods' creation (the
        # window then starts without them, and their first look counts their restarts from 0).
        if found.state != "current" or self.window <= 0 or self.pods is None:
            if found.state != "current":
                self.since = None
            return found
        unready = podtrouble.not_ready(self.pods, 1)
        if unready:
            self.since, self.behind = None, True
            return Health("in-progress", f"{found.message}, but {unready[0]}")
        if first and self.held_before is not None:
            steady = podtrouble.steady_since(self.pods)
            if steady is not None and steady <= self.held_before:
                return Health(
                    "current", f"{found.message}, unchanged and held for {self.window_text} already"
                )
        if self.since is None:
            self.since, self.at_since = now, podtrouble.restarts(self.pods)
        if now - self.since >= self.window:
            return Health("current", f"{found.message}, held for {self.window_text}")
        again = f" (again: {self.broke})" if self.broke else ""
        return Health(
            "in-progress", f"{found.message}; settling: no container restart for {self.window_text}{again}"
        )

    @property
    def window_text(self) -> str:
        return format_duration(round(self.window * SECOND))
