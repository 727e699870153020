"""A crash loop as a real kubelet shows it (issue 32): through most of a back-off the pod's status shows
the container ``terminated`` (the run that ended), and the waiting reason CrashLoopBackOff only for
moments, which a look once a second misses. Seen on the real node: a Deployment's pod terminated after 2
restarts for 75 s while the kubelet logged "back-off 20s", "back-off 40s", and krmfn failed only when a
look happened to fall on CrashLoopBackOff. A container ended again after a restart, in a pod that
restarts it, is that crash loop; generated here over the ways a run ends, the pod's restart policy, init
or regular containers and the restart count, in the pure rule, the settle state and the engine."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from test_runner_settle_engine import Kubelet, run, web

from krmfn.runner.errors import StepFailed
from krmfn.runner.health import podtrouble
from krmfn.runner.health.settle import Settler
from krmfn.runner.health.status import Health

Doc = dict[str, Any]
ENDINGS = {"Error": 1, "Completed": 0, "OOMKilled": 137, "ContainerCannotRun": 128}
POLICIES = ("Always", "OnFailure", "Never", None)  # None: unset, the API server's default Always
ROLLED_OUT = Health("current", "rolled out (1 available)")


def shown(
    state: str = "running",
    *,
    restarts: int = 0,
    ending: str = "Error",
    init: bool = False,
    policy: str | None = "Always",
    name: str = "web-1",
) -> Doc:
    """A pod of one container (init or regular) whose status shows ``state`` after ``restarts``."""
    ended = {"reason": ending, "exitCode": ENDINGS[ending], "finishedAt": "2026-12-03T08:23:14Z"}
    now: Doc = {"terminated": ended} if state == "terminated" else {"running": {}}
    container: Doc = {"name": "app", "ready": state == "running", "restartCount": restarts, "state": now}
    if restarts:
        container["lastState"] = {"terminated": {"reason": ending, "exitCode": ENDINGS[ending]}}
    status: Doc = {"phase": "Pending" if init else "Running",
                   "conditions": [{"type": "Ready", "status": "True" if state == "running" else "False"}],
                   "initContainerStatuses" if init else "containerStatuses": [container]}  # fmt: skip
    spec = {"restartPolicy": policy} if policy else {}
    meta = {"name": name, "uid": f"uid-{name}", "ownerReferences": [{"uid": "rs-1"}],
            "creationTimestamp": "2026-12-03T08:22:59Z"}  # fmt: skip
    return {"metadata": meta, "spec": spec, "status": status}


def kubelet_restarts(policy: str | None, ending: str, init: bool) -> bool:
    """Whether the kubelet restarts a container that ended so (its restart policy's rule: an init
    container runs until it succeeds unless the pod is ``Never``)."""
    failed = ENDINGS[ending] != 0
    if init:
        return policy != "Never" and failed
    return policy in ("Always", None) or (policy == "OnFailure" and failed)


@pytest.mark.parametrize(
    ("ending", "policy", "init", "restarts"),
    list(itertools.product(sorted(ENDINGS), POLICIES, [False, True], [0, 1, 3])),
)
def test_a_container_ended_again_after_a_restart_is_the_crash_loop(
    ending: str, policy: str | None, init: bool, restarts: int
) -> None:
    pod = shown("terminated", restarts=restarts, ending=ending, init=init, policy=policy)
    found = podtrouble.stuck([pod])
    # The first exit is restarted at once; the kubelet's back-off starts with the second (restarts 1).
    if not (restarts and kubelet_restarts(policy, ending, init)):
        assert found == [], found
        return
    times = f"{restarts} time{'s' if restarts != 1 else ''}"
    assert [t.describe() for t in found] == [
        "pod web-1 container app: CrashLoopBackOff: ended again after a restart; the kubelet restarts it "
        f"after a back-off (restarted {times}, last run: {ending} (exit code {ENDINGS[ending]}))"
    ]
    # Under a restart budget the restarts are the budget's to count, as for the waiting reason; and a
    # pod being deleted is stopping, not crashing.
    assert podtrouble.stuck([pod], crash_loops=False) == []
    pod["metadata"]["deletionTimestamp"] = "2026-12-03T08:23:20Z"
    assert podtrouble.stuck([pod]) == []


# The real node's timeline, one look a second: started, exited, restarted at once, exited again, then the
# back-off with the container shown terminated throughout (the waiting reason never caught).
TIMELINE = [shown(), shown("terminated"), shown(restarts=1), *[shown("terminated", restarts=1)] * 20]


@pytest.mark.parametrize("window", [3.0, 5.0, 30.0])
def test_a_settling_workload_fails_at_the_first_look_at_its_back_off(window: float) -> None:
    settler, seen = Settler(window=window), []
    for second, pod in enumerate(TIMELINE):
        health = settler.observe([pod]) or settler.judge(ROLLED_OUT, float(second))
        seen.append(health)
        if health.done:
            break
    assert seen[-1].state == "failed" and "CrashLoopBackOff" in seen[-1].message, seen
    assert len(seen) == 4, seen  # the first look at the second exit: the first back-off, 10 s before it ends


def test_the_engine_fails_the_step_on_a_back_off_shown_as_terminated() -> None:
    api = Kubelet([[pod] for pod in TIMELINE])
    result, statuses = run(api, web())
    assert isinstance(result.error, StepFailed), result.error
    assert all(s.state != "current" for s in statuses), statuses
    assert str(result.error) == (
        "step default: Deployment.apps apps/web failed: pod web-1 container app: CrashLoopBackOff: ended "
        "again after a restart; the kubelet restarts it after a back-off (restarted 1 time, last run: Error "
        "(exit code 1))"
    )
    assert api.pod_lists == 4  # at its first look at the back-off, not at a later moment of it


def test_a_restart_budget_counts_the_restarts_instead() -> None:
    # With krmfn.dev/max-restarts: 2 the ended run is the budget's: it fails at the third restart.
    ticks = [shown("terminated" if n % 2 else "running", restarts=n // 2) for n in range(10)]
    settler, seen = Settler(window=3.0, budget=2), []
    for second, pod in enumerate(ticks):
        health = settler.observe([pod]) or settler.judge(ROLLED_OUT, float(second))
        seen.append(health)
        if health.done:
            break
    assert seen[-1].state == "failed", seen
    assert "3 container restarts during the wait, more than krmfn.dev/max-restarts: 2" in seen[-1].message


@pytest.mark.parametrize("restarts", [0, 1, 2])
def test_a_failed_start_is_named_as_the_last_run_without_restarts_it_did_not_have(restarts: int) -> None:
    # The real node's RunContainerError: restartCount 0 and a last run StartError (exit code 128).
    pod = shown(restarts=restarts)
    why = 'exec: "/krmfn-absent-command": stat /krmfn-absent-command: no such file or directory'
    container = pod["status"]["containerStatuses"][0]
    container["state"] = {"waiting": {"reason": "RunContainerError", "message": why}}
    container["lastState"] = {"terminated": {"reason": "StartError", "exitCode": 128, "message": why}}
    [trouble] = podtrouble.stuck([pod])
    times = f"restarted {restarts} time{'s' if restarts != 1 else ''}, " if restarts else ""
    last = f"last run: StartError (exit code 128): {why}"
    assert trouble.describe() == f"pod web-1 container app: RunContainerError: {why} ({times}{last})"
