"""The settle rule and the fail-fast reasons (settle.py, podtrouble.py, workloads.py), generated over the
class: every workload kind x every pattern of restarts a pod can show while a step waits, every waiting
reason a kubelet writes, hostile status text. The real kubelet's side:
tests/cluster/test_real_node_pods.py."""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from krmfn.runner.errors import SourceError
from krmfn.runner.health import blocked, podtrouble
from krmfn.runner.health.settle import Settler
from krmfn.runner.health.status import Health
from krmfn.runner.health.workloads import current, shared_selector
from krmfn.runner.plan import build_plan
from krmfn.runner.settle_annotations import DEFAULT_WINDOW, BadAnnotation, budget_of, window_of

Doc = dict[str, Any]
KINDS = ("Deployment", "StatefulSet", "DaemonSet")
ROLLED_OUT = Health("current", "rolled out (1 available)")


def pod(
    name: str = "web-1",
    *,
    restarts: int = 0,
    ready: bool = True,
    waiting: tuple[str, str] | None = None,
    last: tuple[str, int] | None = None,
    owner: str = "rs-new",
    deleting: bool = False,
    labels: dict[str, str] | None = None,
) -> Doc:
    state: Doc = {"waiting": {"reason": waiting[0], "message": waiting[1]}} if waiting else {"running": {}}
    container: Doc = {"name": "app", "ready": ready and not waiting, "restartCount": restarts, "state": state}
    if last:
        container["lastState"] = {"terminated": {"reason": last[0], "exitCode": last[1]}}
    meta: Doc = {"name": name, "uid": f"uid-{name}", "ownerReferences": [{"uid": owner}],
                 "creationTimestamp": "2026-12-02T18:00:00Z", "labels": labels or {}}  # fmt: skip
    if deleting:
        meta["deletionTimestamp"] = "2026-12-02T18:00:05Z"
    conditions = [{"type": "Ready", "status": "True" if ready and not waiting else "False"}]
    return {"metadata": meta, "status": {"phase": "Running", "conditions": conditions,
                                         "containerStatuses": [container]}}  # fmt: skip


# --- what a pod shows, tick by tick: each pattern is the pod at t = 0, 1, 2, ... seconds ----------------

CRASHED = ("Error", 1)
PATTERNS: dict[str, list[Doc]] = {
    "steady": [pod()] * 8,
    "restarted long ago": [pod(restarts=4, last=CRASHED)] * 8,
    "exits at once, ready for a moment": [
        pod(),
        pod(ready=False),
        pod(restarts=1, last=CRASHED),
        pod(restarts=1, ready=False, last=CRASHED),
    ]
    + [
        pod(
            restarts=1,
            waiting=("CrashLoopBackOff", "back-off 10s restarting failed container=app"),
            last=CRASHED,
        )
    ]
    * 4,
    "restarts quietly every 2 s": [pod(restarts=n // 2, last=CRASHED if n > 1 else None) for n in range(8)],
    "unready once": [pod(), pod(), pod(ready=False)] + [pod()] * 6,
}
EXPECTED = {  # (healthy, failed); neither: still waiting at the end
    "steady": (True, False),
    "restarted long ago": (True, False),
    "exits at once, ready for a moment": (False, True),
    "restarts quietly every 2 s": (False, False),
    "unready once": (True, False),
}


def play(
    ticks: list[Doc], settler: Settler, status: Callable[[int], Health] = lambda _: ROLLED_OUT
) -> list[Health]:
    """The health the engine would report at each second: a look at the pods, then the judgement."""
    seen = []
    for second, shown in enumerate(ticks):
        failure = settler.observe([shown])
        seen.append(failure or settler.judge(status(second), float(second)))
        if seen[-1].done:
            break
    return seen


def as_kind(kind: str, shown: Doc, name: str, *, new: bool = True) -> Doc:
    """``shown`` as a pod of ``kind``'s current template (``new``) or of an older one."""
    meta = {**shown["metadata"], "name": name, "uid": f"uid-{name}"}
    if kind == "Deployment":
        meta["ownerReferences"] = [{"uid": "rs-new" if new else "rs-old"}]
    else:
        meta["ownerReferences"] = [{"uid": "wl"}]
        meta["labels"] = {"controller-revision-hash": "web-new" if new or kind == "DaemonSet" else "web-old"}
    return {**shown, "metadata": meta}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("pattern", sorted(PATTERNS))
def test_a_workload_is_done_only_once_its_pods_held_for_the_window(kind: str, pattern: str) -> None:
    settler, sets = Settler(window=3), [replicaset("rs-new", "2"), replicaset("rs-old", "1")]
    # An old template's pod crash-looping beside (a StatefulSet's or Deployment's, on its way out) says
    # nothing about this rollout; a DaemonSet's status names no revision, so its pods all count.
    old = as_kind(
        kind, pod(restarts=9, waiting=("CrashLoopBackOff", "old"), last=CRASHED), "web-old", new=False
    )
    seen: list[Health] = []
    for second, shown in enumerate(PATTERNS[pattern]):
        pods = [as_kind(kind, shown, "web-1")] + ([old] if kind != "DaemonSet" else [])
        failure = settler.observe(current(workload(kind), pods, sets))
        seen.append(failure or settler.judge(ROLLED_OUT, float(second)))
        if seen[-1].done:
            break
    healthy, failed = EXPECTED[pattern]
    assert (seen[-1].state == "current") is healthy, (kind, seen)
    assert (seen[-1].state == "failed") is failed, seen
    if healthy:
        first_ready = next(i for i, h in enumerate(seen) if "settling" in h.message)
        assert len(seen) - 1 - first_ready >= 3, seen  # never before the window has passed
        assert seen[-1].message == "rolled out (1 available), held for 3s"
    for health in seen[:-1]:
        assert not health.done, seen  # nothing is reported healthy while a restart is pending


def test_a_crash_loop_fails_with_the_pod_container_reason_message_and_last_run() -> None:
    [*_, last] = play(PATTERNS["exits at once, ready for a moment"], Settler(window=3))
    why = "back-off 10s restarting failed container=app (restarted 1 time, last run: Error (exit code 1))"
    assert last == Health("failed", f"pod web-1 container app: CrashLoopBackOff: {why}")


@pytest.mark.parametrize("budget", [0, 1, 2, 5])
def test_the_restart_budget_tolerates_crash_loops_up_to_max_restarts(budget: int) -> None:
    # A pod that restarts once a second and shows CrashLoopBackOff in between.
    loop = ("CrashLoopBackOff", "back-off")
    ticks = [pod(restarts=n, waiting=loop if n else None, last=CRASHED if n else None) for n in range(9)]
    seen = play(ticks, Settler(window=3, budget=budget))
    assert seen[-1].state == "failed", seen
    assert len(seen) - 1 == budget + 1  # the budget+1st restart fails it, not one earlier
    assert f"{budget + 1} container restarts during the wait, more than krmfn.dev/max-restarts: {budget}" in (
        seen[-1].message
    )
    assert "pod web-1 container app restarted" in seen[-1].message


def test_a_restart_during_the_window_starts_it_again_and_says_why() -> None:
    ticks = [pod(), pod(), pod(restarts=1, last=CRASHED)] + [pod(restarts=1, last=CRASHED)] * 6
    seen = play(ticks, Settler(window=3))
    assert seen[-1].state == "current"
    assert len(seen) == 6  # ready from t=2 again, held until t=5
    again = "again: pod web-1 container app restarted (1 restart, last run: Error (exit code 1))"
    assert any(again in h.message for h in seen), seen


def test_the_window_waits_for_the_status_too() -> None:
    # The status flips back to in-progress (the Deployment counted the pod unavailable): start over.
    status = [ROLLED_OUT, ROLLED_OUT, Health("in-progress", "0 of 1 updated replicas available")] + [
        ROLLED_OUT
    ] * 6
    seen = play([pod()] * 9, Settler(window=3), lambda s: status[s])
    assert seen[-1].state == "current" and len(seen) == 7


def test_a_list_from_before_the_pods_existed_does_not_make_the_workload_healthy() -> None:
    # The last look found no pods (they were created since); the status already says rolled out.
    settler = Settler(window=3)
    assert settler.observe([]) is None
    assert not settler.judge(ROLLED_OUT, 0.0).done
    loop = ("CrashLoopBackOff", "back-off")
    assert settler.observe([pod(restarts=1, waiting=loop, last=CRASHED)]) is not None  # next look: fails
    quiet = Settler(window=3)
    quiet.observe([])
    assert not quiet.judge(ROLLED_OUT, 0.0).done
    quiet.observe([pod(restarts=1, last=CRASHED)])  # a restart since the window began: start over
    assert not quiet.judge(ROLLED_OUT, 3.0).done
    assert quiet.judge(ROLLED_OUT, 6.0).done


def test_window_zero_and_unlisted_pods_leave_the_status_alone() -> None:
    assert Settler(window=0).judge(ROLLED_OUT, 0.0) == ROLLED_OUT
    unlisted = Settler(window=3)
    assert unlisted.observe(None) is None
    assert unlisted.judge(ROLLED_OUT, 0.0) == ROLLED_OUT


@pytest.mark.parametrize("reason", sorted(podtrouble.FAIL_FAST))
@pytest.mark.parametrize("crash_loops", [True, False])
def test_every_fail_fast_reason_is_named_with_its_message(reason: str, crash_loops: bool) -> None:
    message = 'configmap "settings" not found'
    found = podtrouble.stuck([pod(waiting=(reason, message))], crash_loops=crash_loops)
    if reason == "CrashLoopBackOff" and not crash_loops:
        assert found == []
        return
    assert [t.describe() for t in found] == [f"pod web-1 container app: {reason}: {message}"]


def test_pods_being_deleted_and_other_waiting_reasons_do_not_fail() -> None:
    assert (
        podtrouble.stuck([pod(waiting=("ContainerCreating", "")), pod(waiting=("PodInitializing", ""))]) == []
    )
    assert podtrouble.stuck([pod(waiting=("CrashLoopBackOff", "x"), deleting=True)]) == []


def test_hostile_status_text_is_one_bounded_line() -> None:
    hostile = "line one\nline two\r\x1b[2J " + "A" * 5000
    [trouble] = podtrouble.stuck([pod(waiting=("ErrImagePull", hostile))])
    assert "\n" not in trouble.describe() and "\r" not in trouble.message.replace("\\r", "")
    assert len(trouble.message) < podtrouble.MAX_TEXT + 40
    assert trouble.message.endswith("more characters)")
    shown = podtrouble.not_ready([{"metadata": {"name": "p\nq"}, "status": {"phase": "\n" * 3 + "x" * 900}}])
    assert shown == ["pod p q not ready: phase x" + "x" * 31 + "... (868 more characters)"]


def test_not_ready_says_why_a_pod_is_not_ready() -> None:
    running = pod(ready=False)
    assert podtrouble.not_ready([running]) == [
        "pod web-1 not ready: container app running, readiness probe not passing"
    ]
    config = pod(waiting=("CreateContainerConfigError", 'secret "db" not found'))
    assert podtrouble.not_ready([config]) == [
        'pod web-1 not ready: container app waiting: CreateContainerConfigError: secret "db" not found'
    ]
    pending = {"metadata": {"name": "p"}, "status": {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "message": "0/2 nodes are available"}]}}  # fmt: skip
    assert podtrouble.not_ready([pending]) == ["pod p not ready: not scheduled: 0/2 nodes are available"]


# --- whose pods: the current template only ------------------------------------------------------------


def workload(kind: str) -> Doc:
    meta: Doc = {"name": "web", "uid": "wl", "annotations": {"deployment.kubernetes.io/revision": "2"}}
    spec = {"selector": {"matchLabels": {"app": "web", "tier": "x"}}}
    return {"kind": kind, "metadata": meta, "spec": spec, "status": {"updateRevision": "web-new"}}


def replicaset(uid: str, revision: str, owner: str = "wl") -> Doc:
    return {"metadata": {"uid": uid, "ownerReferences": [{"uid": owner}],
                         "annotations": {"deployment.kubernetes.io/revision": revision}}}  # fmt: skip


def test_a_deployments_pods_are_its_new_replicasets() -> None:
    new, old, foreign = (
        pod("new", owner="rs-new"),
        pod("old", owner="rs-old"),
        pod("foreign", owner="rs-other"),
    )
    sets = [
        replicaset("rs-new", "2"),
        replicaset("rs-old", "1"),
        replicaset("rs-other", "2", owner="another"),
    ]
    assert current(workload("Deployment"), [new, old, foreign], sets) == [new]
    assert current(workload("Deployment"), [new], []) == []  # the new ReplicaSet not created yet


def test_a_statefulsets_pods_are_its_update_revisions_and_a_daemonsets_its_own() -> None:
    new = pod("web-0", owner="wl", labels={"controller-revision-hash": "web-new"})
    old = pod("web-1", owner="wl", labels={"controller-revision-hash": "web-old"})
    stranger = pod("other-0", owner="x", labels={"controller-revision-hash": "web-new"})
    assert current(workload("StatefulSet"), [new, old, stranger]) == [new]
    assert current(workload("DaemonSet"), [new, old, stranger]) == [new, old]


def test_one_list_selects_the_pods_of_many_workloads() -> None:
    def selecting(**labels: object) -> Doc:
        return {"spec": {"selector": {"matchLabels": labels}}}

    assert shared_selector([workload("DaemonSet")]) == "app=web"
    assert shared_selector([selecting(app="a", tier="x"), selecting(app="b")]) == "app in (a,b)"
    assert shared_selector([selecting(app="a"), selecting(name="b")]) == ""  # no key in common: all pods
    assert shared_selector([selecting(app="a"), {"spec": {"selector": {"matchExpressions": []}}}]) == ""
    assert shared_selector([selecting(app=3)]) == ""


# --- the annotations ----------------------------------------------------------------------------------


def test_the_annotations_and_their_defaults() -> None:
    assert window_of({}) == DEFAULT_WINDOW == 5.0
    assert window_of({"krmfn.dev/settle": "1m30s"}) == 90.0
    assert window_of({"krmfn.dev/settle": "0s"}) == 0.0
    assert budget_of({}) is None
    assert budget_of({"krmfn.dev/max-restarts": "3"}) == 3
    for bad in (
        {"krmfn.dev/settle": "soon"},
        {"krmfn.dev/max-restarts": "-1"},
        {"krmfn.dev/max-restarts": "x"},
    ):
        with pytest.raises(BadAnnotation):
            window_of(bad), budget_of(bad)


@pytest.mark.parametrize(("key", "value"), [("krmfn.dev/settle", "soon"), ("krmfn.dev/max-restarts", "lots")])
def test_a_bad_annotation_is_an_input_error_naming_the_object(key: str, value: str) -> None:
    doc = {"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "web", "namespace": "apps", "annotations": {key: value}}}  # fmt: skip
    with pytest.raises(SourceError) as err:
        build_plan([doc], namespace="apps", default_timeout=60)
    assert str(err.value).startswith(f"Deployment.apps apps/web: {key}: '{value}'")
    assert "\n" not in str(err.value)


# --- why blocked ----------------------------------------------------------------------------------------


def test_a_blocked_workload_says_what_it_waits_for_where_it_is_and_its_unready_pods() -> None:
    web = {"kind": "Deployment", "spec": {"replicas": 2}}
    waiting = Health("in-progress", "1 of 2 updated replicas available")
    pods = [pod("web-a"), pod("web-b", ready=False)] + [pod(f"web-{n}", ready=False) for n in range(4)]
    assert blocked.line(web, waiting, pods) == (
        "waits for 2 updated replicas available; now 1 of 2 updated replicas available; "
        "pod web-0 not ready: container app running, readiness probe not passing; "
        "pod web-1 not ready: container app running, readiness probe not passing; "
        "pod web-2 not ready: container app running, readiness probe not passing (and 2 more not ready)"
    )
    job = {"kind": "Job"}
    assert blocked.line(job, Health("in-progress", "running: 1 active"), None) == (
        "waits for Complete; now running: 1 active"
    )
    gone = blocked.line(None, Health("in-progress", "deleted"), None)
    assert gone == "waits for the object to exist; now deleted"


def test_an_unready_pods_latest_probe_failure_is_named() -> None:
    def unhealthy(name: str, when: str, message: str, kind: str = "Pod") -> Doc:
        return {"reason": "Unhealthy", "involvedObject": {"kind": kind, "name": name}, "lastTimestamp": when,
                "message": message}  # fmt: skip

    events = [
        unhealthy("web-1", "2026-12-02T18:00:03Z", "Readiness probe failed: schema 9.9.9 missing"),
        unhealthy("web-1", "2026-12-02T18:00:01Z", "Readiness probe failed: connection refused"),
        unhealthy("web-2", "2026-12-02T18:00:01Z", "Readiness probe failed: \x1b[2J\n" + "x" * 900),
        unhealthy("web-1", "2026-12-02T18:00:09Z", "not a pod's", kind="Node"),
        {"reason": "Scheduled", "involvedObject": {"kind": "Pod", "name": "web-1"}, "message": "assigned"},
    ]
    probes = blocked.probe_failures(events)
    assert probes["web-1"] == "Readiness probe failed: schema 9.9.9 missing"
    assert "\n" not in probes["web-2"] and probes["web-2"].endswith("more characters)")
    web = {"kind": "Deployment", "spec": {"replicas": 1}}
    shown = blocked.line(
        web, Health("in-progress", "0 of 1 updated replicas available"), [pod(ready=False)], probes
    )
    assert shown == (
        "waits for 1 updated replicas available; now 0 of 1 updated replicas available; "
        "pod web-1 not ready: readiness probe failed: schema 9.9.9 missing"
    )


# --- rule 4: a workload the run left unchanged, whose pods held already by the server's clock -------------

LONG_AGO = "2026-12-03T07:00:00Z"
JUST_NOW = "2026-12-03T07:59:58Z"
HELD_BEFORE = datetime(2026, 12, 3, 7, 59, 55, tzinfo=UTC)  # the server's now (08:00:00) minus a 5 s window


def timed(shown: Doc, ready_at: str | None, ended_at: str | None = None) -> Doc:
    """``shown`` with its Ready condition's transition at ``ready_at`` and its container's last exit."""
    out = copy.deepcopy(shown)
    if ready_at is not None:
        out["status"]["conditions"][0]["lastTransitionTime"] = ready_at
    last = out["status"]["containerStatuses"][0].get("lastState")
    if last and ended_at is not None:
        last["terminated"]["finishedAt"] = ended_at
    return out


TIMES = {  # (Ready transition, last exit) of every tick's pod (the exit where the pod has ended a run)
    "ready long ago": (LONG_AGO, None),
    "ready just now": (JUST_NOW, None),
    "ready long ago, exited just now": (LONG_AGO, JUST_NOW),
    "no transition time": (None, None),
    "a hostile time": ("tomorrow", None),
    "a time without a zone": ("2026-12-03T07:00:00", None),
}


@pytest.mark.parametrize("times", sorted(TIMES))
@pytest.mark.parametrize("pattern", sorted(PATTERNS))
@pytest.mark.parametrize("unchanged", [True, False], ids=["unchanged", "changed"])
def test_an_unchanged_workload_whose_pods_held_by_the_servers_clock_is_done_at_once(
    pattern: str, times: str, unchanged: bool
) -> None:
    ready_at, ended_at = TIMES[times]
    ticks = [timed(shown, ready_at, ended_at or LONG_AGO) for shown in PATTERNS[pattern]]
    settler = Settler(window=3, held_before=HELD_BEFORE if unchanged else None)
    seen = play(ticks, settler)
    # Held: the first look's pod ready since before the window, by a time that can be read, and no run of
    # its containers ended within the window.
    first = ticks[0]
    ended = (first["status"]["containerStatuses"][0].get("lastState") or {}).get("terminated", {})
    held = unchanged and times.startswith("ready long ago") and ended.get("finishedAt", LONG_AGO) == LONG_AGO
    if held:
        assert seen == [Health("current", "rolled out (1 available), unchanged and held for 3s already")]
        return
    healthy, failed = EXPECTED[pattern]  # otherwise: the window, exactly as for a change
    assert (seen[-1].state == "current") is healthy, seen
    assert (seen[-1].state == "failed") is failed, seen
    if healthy:
        assert len(seen) > 3, seen  # not before the window has passed


def test_held_already_is_asked_at_the_first_judgement_only() -> None:
    """A pod that turns steady later is judged by the window, not by rule 4 (the look that counts is
    the one right after the apply)."""
    settler = Settler(window=3, held_before=HELD_BEFORE)
    assert settler.observe([]) is None
    assert settler.judge(Health("in-progress", "rolling"), 0.0).state == "in-progress"
    settler.observe([timed(pod(), LONG_AGO)])
    assert settler.judge(ROLLED_OUT, 1.0).message.endswith("settling: no container restart for 3s")
