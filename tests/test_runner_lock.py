"""The inventory lock (lock.py, and how inventory.py takes, renews and releases it) against an in-memory
API server and a fake clock: no control plane (tests/cluster/test_apply_faults.py covers the real one)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

import pytest
from fake_kube import START, FakeApi, Harness

from krmfn.runner.errors import ClusterUnreachable, Interrupted, InventoryError, InventoryLocked
from krmfn.runner.events import Lock
from krmfn.runner.inventory.applyset import Parent
from krmfn.runner.inventory.inventory import Inventory
from krmfn.runner.inventory.lock import Lease, _boot_id, _pid_namespace, _process_start, held_by_other
from krmfn.runner.plan import Key
from krmfn.runner.reserved import LOCK

HOST = socket.gethostname()
ME = f"{HOST}/{os.getpid()}"
MY_START = _process_start(os.getpid())
HERE = {"boot": _boot_id(), "pidns": _pid_namespace()}
"""This machine's boot and this process's PID namespace: where a holder's pid means a process here."""


@pytest.fixture
def h() -> Iterator[Harness]:
    harness = Harness()
    yield harness
    harness.close()


def at(seconds: float) -> datetime:
    """``seconds`` after the fake clock's start."""
    return START + timedelta(seconds=seconds)


def foreign(expires_in: float, *, holder: str = "ci-7/4242", run: str = "0badc0de", start: str = "") -> Lease:
    return Lease(holder, run, since=at(-30), expires=at(expires_in), start=start, **HERE)


def widen_nothing(parent: Parent) -> None:
    pass


def existing_parent(h: Harness, lease: Lease | None = None, lock: str = "") -> None:
    """The parent Secret as an earlier run left it, holding ``lease`` (or ``lock``: any annotation value)."""
    obj = Parent("krmfn", "apps", "0.1.0", group_kinds={"ConfigMap"}).render()
    if lock:
        obj["metadata"]["annotations"][LOCK] = lock
    if lease is not None:
        obj["metadata"]["annotations"][LOCK] = lease.render()
    h.api.seed(obj)


def eventually(condition: Callable[[], bool], what: str, timeout: float = 5.0) -> None:
    """Waits (real time) for a background thread of the inventory to make ``condition`` true."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


def expires(h: Harness) -> datetime | None:
    lease = h.lease()
    return lease.expires if lease is not None else None


def lost_lock(inventory: Inventory) -> bool:
    try:
        inventory.check()
    except InventoryError:
        return True
    return False


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


# --- the lease annotation -----------------------------------------------------------------------------------


def test_lease_renders_as_the_documented_json_and_parses_back() -> None:
    lease = Lease("ci-7/4242", "3f9a1c2e", at(0), at(60), start="81234")
    text = lease.render()
    assert json.loads(text) == {"holder": "ci-7/4242", "run": "3f9a1c2e", "since": "2025-06-01T10:00:00Z",
                                "expires": "2025-06-01T10:01:00Z", "start": "81234"}  # fmt: skip
    assert Lease.parse(text) == lease
    without_start = Lease("ci-7/4242", "3f9a1c2e", at(0), at(60))
    assert "start" not in json.loads(without_start.render())
    assert Lease.parse(without_start.render()) == without_start


def test_new_lease_names_this_process_and_lasts_the_lease() -> None:
    lease = Lease.new(at(0), 60.0)
    assert (lease.holder, lease.since, lease.expires, lease.start) == (ME, at(0), at(60), MY_START)
    assert len(lease.run) == 8
    assert Lease.new(at(0)).run != lease.run  # two runs of one process are different holders
    renewed = lease.renewed(at(40), 60.0)
    assert (renewed.run, renewed.since, renewed.expires) == (lease.run, at(0), at(100))


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("locked", id="not JSON"),
        pytest.param("[1, 2]", id="a list"),
        pytest.param('"text"', id="a string"),
        pytest.param('{"holder": "h", "run": "r"}', id="no times"),
        pytest.param(
            '{"holder": "h", "run": "r", "since": "yesterday", "expires": "tomorrow"}', id="bad times"
        ),
    ],
)
def test_annotation_that_is_not_a_lease_parses_to_none(text: str) -> None:
    assert Lease.parse(text) is None


@dataclass(frozen=True)
class Held:
    lease: Lease | None
    now: float
    blocked: bool
    why: str


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(Held(None, 0, False, ""), id="no lease"),
        pytest.param(Held(foreign(30, run="mine"), 0, False, ""), id="this run's own lease"),
        pytest.param(Held(foreign(30), 0, True, ""), id="live lease of another host"),
        pytest.param(Held(foreign(30), 29, True, ""), id="a second before it expires"),
        pytest.param(
            Held(foreign(30), 30, False, "its lease expired at 2025-06-01T10:00:30Z"), id="expires now"
        ),
        pytest.param(Held(foreign(-1), 0, False, "its lease expired at 2025-06-01T09:59:59Z"), id="expired"),
        pytest.param(
            Held(foreign(30, holder=ME, start=MY_START), 0, True, ""), id="another run of this process"
        ),
        pytest.param(
            Held(foreign(30, holder=ME, start="1"), 0, False, "its process no longer exists"),
            id="this host, pid reused by another process",
        ),
    ],
)
def test_which_leases_keep_a_run_out(case: Held) -> None:
    assert held_by_other(case.lease, "mine", at(case.now)) == (case.blocked, case.why)


@pytest.mark.parametrize(
    ("holder", "start", "gone"),
    [
        pytest.param("ci-7/4242", "", False, id="another host: never judged gone"),
        pytest.param(f"{HOST}/not-a-pid", "", False, id="no pid"),
        pytest.param(f"{HOST}/\u00b2", "", False, id="a digit int() refuses"),
        pytest.param(f"{HOST}/{'9' * 5000}", "", False, id="more digits than int() takes"),
        pytest.param(f"{HOST}/{2**70}", "", False, id="beyond any pid"),
        pytest.param(ME, "", False, id="this process, start unknown"),
        pytest.param(ME, MY_START, False, id="this process, same start"),
        pytest.param(ME, "1", True, id="this pid, another start: reused"),
        pytest.param("dead", "", True, id="a process of this host that exited"),
    ],
)
def test_holder_is_gone_only_when_its_process_certainly_is(holder: str, start: str, gone: bool) -> None:
    if holder == "dead":
        holder = f"{HOST}/{dead_pid()}"
    assert Lease(holder, "r", at(0), at(60), start=start, **HERE).holder_gone() is gone


@pytest.mark.parametrize(
    ("boot", "pidns"),
    [
        pytest.param(HERE["boot"], "4026531999", id="another PID namespace (a container, one hostname)"),
        pytest.param("00000000-0000-0000-0000-000000000000", HERE["pidns"], id="another boot"),
        pytest.param("", "", id="a lease that does not say (an older krmfn)"),
    ],
)
def test_a_dead_pid_means_nothing_outside_this_boot_and_pid_namespace(boot: str, pidns: str) -> None:
    """Two containers of one pod share a hostname but not their pids: a pid that does not exist here
    may be a live run there, so only the lease's expiry frees its lock."""
    lease = Lease(f"{HOST}/{dead_pid()}", "r", at(0), at(60), boot=boot, pidns=pidns)
    assert lease.holder_gone() is False
    assert held_by_other(lease, "mine", at(0)) == (True, "")
    assert Lease(f"{HOST}/{dead_pid()}", "r", at(0), at(60), **HERE).holder_gone() is True


def test_new_lease_records_this_boot_and_pid_namespace() -> None:
    lease = Lease.new(at(0))
    assert (lease.boot, lease.pidns) == (HERE["boot"], HERE["pidns"])
    assert HERE["boot"] and HERE["pidns"].isdigit()
    assert Lease.parse(lease.render()) == lease
    assert {"boot", "pidns"} <= set(json.loads(lease.render()))


# --- taking the lock ----------------------------------------------------------------------------------------


def test_lock_is_taken_on_a_fresh_parent_with_one_create(h: Harness) -> None:
    inventory = h.inventory()
    parent = inventory.acquire(0, widen_nothing)
    assert not parent.exists
    assert h.parent_writes() == ["create"]
    lease = h.lease()
    assert lease is not None
    assert (lease.holder, lease.since, lease.expires, lease.start) == (ME, at(0), at(60), MY_START)
    assert h.events == []  # a free lock is taken silently
    inventory.check()


def test_lock_of_an_earlier_run_that_released_it_is_taken_with_one_put(h: Harness) -> None:
    existing_parent(h)
    parent = h.inventory().acquire(0, widen_nothing)
    assert parent.exists
    assert h.parent_writes() == ["replace"]
    lease = h.lease()
    assert lease is not None
    assert lease.holder == ME
    assert h.events == []


@pytest.mark.parametrize(
    ("lease", "expected"),
    [
        pytest.param(
            foreign(30),
            "ApplySet apps/krmfn is locked by another run: ci-7/4242 (run 0badc0de since "
            "2025-06-01T09:59:30Z, lease expires in 30s); pass --wait-for-lock DURATION to wait for it",
            id="another host",
        ),
        pytest.param(
            foreign(45, holder=ME, run="5eba5e11", start=MY_START),
            f"ApplySet apps/krmfn is locked by another run: {ME} (run 5eba5e11 since "
            "2025-06-01T09:59:30Z, lease expires in 45s); pass --wait-for-lock DURATION to wait for it",
            id="another run of this process",
        ),
    ],
)
def test_live_lease_of_another_run_refuses_at_once_naming_the_holder(
    h: Harness, lease: Lease, expected: str
) -> None:
    existing_parent(h, lease)
    with pytest.raises(InventoryLocked) as caught:
        h.inventory().acquire(0, widen_nothing)
    assert str(caught.value) == expected
    assert h.parent_writes() == []
    assert h.lease() == lease
    assert h.events == []


def test_waiting_for_a_live_lease_gives_up_after_the_wait(h: Harness) -> None:
    existing_parent(h, foreign(30))
    polls: list[float] = []
    with pytest.raises(InventoryLocked) as caught:
        h.inventory(check_stop=lambda: polls.append(h.clock.monotonic())).acquire(5, widen_nothing)
    assert str(caught.value).endswith("lease expires in 25s) (waited 5s)")
    assert len(polls) == 10  # every 0.5 s, looking for a signal each time
    assert h.events == [
        Lock("waiting", "ci-7/4242", "run 0badc0de since 2025-06-01T09:59:30Z, lease expires in 30s; "
             "waiting up to 5s")
    ]  # fmt: skip
    assert h.parent_writes() == []


def test_waiting_for_a_live_lease_stops_on_a_signal(h: Harness) -> None:
    existing_parent(h, foreign(30))

    def signalled() -> None:
        raise Interrupted(2, "waiting for the inventory lock")

    with pytest.raises(Interrupted):
        h.inventory(check_stop=signalled).acquire(60, widen_nothing)
    assert h.parent_writes() == []


def test_lock_released_while_waiting_is_acquired(h: Harness) -> None:
    existing_parent(h, foreign(30))
    polls = 0

    def sleep(seconds: float) -> None:
        nonlocal polls
        polls += 1
        h.clock.advance(seconds)
        if polls == 3:
            h.api.annotate("v1", "Secret", "apps", "krmfn", {LOCK: None})  # the other run ends

    h.inventory(sleep=sleep).acquire(10, widen_nothing)
    assert [(e.action, e.holder) for e in h.events if isinstance(e, Lock)] == [
        ("waiting", "ci-7/4242"),
        ("acquired", "ci-7/4242"),
    ]
    assert h.events[-1] == Lock("acquired", "ci-7/4242", "after it was released")
    lease = h.lease()
    assert lease is not None
    assert (lease.holder, lease.since) == (ME, at(1))  # taken after 1.5 s; the annotation keeps seconds


@pytest.mark.parametrize(
    ("lease", "detail"),
    [
        pytest.param(foreign(-1), "its lease expired at 2025-06-01T09:59:59Z", id="expired lease"),
        pytest.param(
            foreign(0), "its lease expired at 2025-06-01T10:00:00Z", id="lease that expires this second"
        ),
        pytest.param(
            foreign(50, holder="dead"), "its process no longer exists", id="holder on this host exited"
        ),
        pytest.param(
            foreign(50, holder=ME, start="1"), "its process no longer exists", id="holder's pid reused"
        ),
    ],
)
def test_lease_of_a_run_that_is_gone_is_taken_over(h: Harness, lease: Lease, detail: str) -> None:
    if lease.holder == "dead":
        lease = foreign(50, holder=f"{HOST}/{dead_pid()}")
    existing_parent(h, lease)
    h.inventory().acquire(0, widen_nothing)
    assert h.events == [Lock("taken-over", lease.holder, detail)]
    mine = h.lease()
    assert mine is not None
    assert (mine.holder, mine.since, mine.expires) == (ME, at(0), at(60))
    assert mine.run != lease.run
    assert h.parent_writes() == ["replace"]


def test_lock_annotation_that_is_not_a_lease_is_overwritten(h: Harness) -> None:
    existing_parent(h, lock="held by Bob")
    h.inventory().acquire(0, widen_nothing)
    lease = h.lease()
    assert lease is not None
    assert lease.holder == ME
    assert h.events == []


@pytest.mark.parametrize(
    ("exists", "losing_write"),
    [
        pytest.param(False, "create", id="fresh parent: both create it, the second gets AlreadyExists"),
        pytest.param(True, "replace", id="existing parent: both PUT one version, the second gets Conflict"),
    ],
)
def test_of_two_runs_that_read_the_same_version_only_one_gets_the_lock(
    h: Harness, exists: bool, losing_write: str
) -> None:
    if exists:
        existing_parent(h)
    first, second = h.inventory(), h.inventory()
    winner: list[Parent] = []

    def the_other_run_writes_first(parent: Parent) -> None:
        # Runs between the second run's read and its write: the first run takes the lock meanwhile.
        if not winner:
            winner.append(first.acquire(0, widen_nothing))

    with pytest.raises(InventoryLocked) as caught:
        second.acquire(0, the_other_run_writes_first)
    held = h.lease()
    assert held is not None
    assert f"is locked by another run: {ME} (run {held.run} since " in str(caught.value)
    # The winner's write, the loser's refused one; the loser read the winner's lock and wrote nothing else.
    assert h.parent_writes() == [losing_write, losing_write]
    second.abandon()
    assert h.lease() == held
    assert h.parent_writes() == [losing_write, losing_write]
    first.check()
    first.close(winner[0])
    assert h.lease() is None
    # Once the winner released it, the loser's next attempt gets the lock.
    h.inventory().acquire(0, widen_nothing)
    lease = h.lease()
    assert lease is not None
    assert lease.run != held.run


# --- keeping and releasing it -------------------------------------------------------------------------------


def test_close_releases_the_lock_with_the_last_record(h: Harness) -> None:
    inventory = h.inventory()
    parent = inventory.acquire(0, widen_nothing)
    parent.group_kinds = {"ConfigMap"}
    inventory.close(parent)
    assert LOCK not in h.annotations()
    assert h.annotations()["applyset.kubernetes.io/contains-group-kinds"] == "ConfigMap"
    assert h.parent_writes() == ["create", "replace"]
    inventory.abandon()  # after close: nothing more to release
    assert h.parent_writes() == ["create", "replace"]


def test_abandon_after_a_failure_releases_the_lock_and_keeps_the_record(h: Harness) -> None:
    inventory = h.inventory()

    def widen(parent: Parent) -> None:
        parent.group_kinds |= {"ConfigMap", "Deployment.apps"}

    inventory.acquire(0, widen)
    inventory.abandon()
    assert LOCK not in h.annotations()
    assert h.annotations()["applyset.kubernetes.io/contains-group-kinds"] == "ConfigMap,Deployment.apps"
    assert h.parent_writes() == ["create", "replace"]
    # A released lock is free for the next run at once.
    h.inventory().acquire(0, widen_nothing)
    assert h.events == []


def test_release_that_fails_is_best_effort(h: Harness) -> None:
    inventory = h.inventory()
    inventory.acquire(0, widen_nothing)

    def unreachable(verb: str, key: Key) -> None:
        raise ClusterUnreachable("cannot reach the API server at https://127.0.0.1:6443: refused")

    h.api.before.append(unreachable)
    inventory.abandon()  # no error: one is already on its way, and the lease expires by itself
    assert h.lease() is not None


def test_renewal_extends_the_lease_while_the_run_lasts(h: Harness) -> None:
    inventory = h.inventory(renew=0.01)
    inventory.acquire(0, widen_nothing)
    h.clock.advance(30)
    eventually(lambda: expires(h) == at(90), "a renewal after 30s")
    lease = h.lease()
    assert lease is not None
    assert (lease.holder, lease.since) == (ME, at(0))
    h.clock.advance(40)  # 70s after the lock was taken: past the first lease, not past the renewed one
    inventory.check()


def test_run_that_cannot_renew_stops_one_renewal_interval_before_its_lease_ends(h: Harness) -> None:
    inventory = h.inventory()  # renewals every 15 s of real time: none during this test
    inventory.acquire(0, widen_nothing)
    h.clock.advance(45)
    inventory.check()
    h.clock.advance(1)
    with pytest.raises(InventoryError) as caught:
        inventory.check()
    assert str(caught.value) == (
        "could not renew the lock of ApplySet apps/krmfn for 45s; stopping before its lease runs out and "
        "another run takes it over"
    )


def test_failed_renewals_are_retried_until_one_lands(h: Harness) -> None:
    inventory = h.inventory(lease=60, renew=0.01)
    inventory.acquire(0, widen_nothing)
    failures = 0

    def unreachable(verb: str, key: Key) -> None:
        nonlocal failures
        if verb == "replace":
            failures += 1
            raise ClusterUnreachable("cannot reach the API server at https://127.0.0.1:6443: refused")

    h.api.before.append(unreachable)
    h.clock.advance(61)
    eventually(lambda: failures >= 3, "three failed renewals")
    assert lost_lock(inventory)  # not renewed for longer than the lease minus one interval
    assert expires(h) == at(60)
    h.api.before.remove(unreachable)
    eventually(lambda: not lost_lock(inventory), "a renewal once the API server answers again")
    assert expires(h) == at(121)


def test_slow_write_does_not_count_as_renewed_when_it_ended(h: Harness) -> None:
    def slow_create(verb: str, key: Key) -> None:
        if verb == "create":
            h.clock.advance(20)  # the request was retried for 20 s before it went through

    h.api.before.append(slow_create)
    inventory = h.inventory()
    inventory.acquire(0, widen_nothing)
    lease = h.lease()
    assert lease is not None
    assert lease.expires == at(60)  # stamped when the lease was made, before the write
    h.clock.advance(26)  # 46 s after the lease was made: within its last renewal interval
    with pytest.raises(InventoryError, match="could not renew the lock of ApplySet apps/krmfn"):
        inventory.check()


def test_write_that_carries_the_old_lease_is_not_a_renewal(h: Harness) -> None:
    inventory = h.inventory()
    parent = inventory.acquire(0, widen_nothing)
    h.clock.advance(30)
    parent.group_kinds = {"ConfigMap"}
    inventory.write(parent)
    inventory.flush()
    lease = h.lease()
    assert lease is not None
    assert lease.expires == at(60)
    h.clock.advance(16)
    with pytest.raises(InventoryError, match="could not renew the lock of ApplySet apps/krmfn"):
        inventory.check()


# --- losing it ----------------------------------------------------------------------------------------------


def usurp(api: FakeApi) -> Lease:
    """Another run takes the lock over (as if this run's lease had expired): a write of the parent."""
    lease = Lease("ci-9/77", "feedf00d", at(0), at(60))
    api.annotate("v1", "Secret", "apps", "krmfn", {LOCK: lease.render()})
    return lease


LOST = (
    "lost the lock of ApplySet apps/krmfn: the parent Secret was changed by another run; now held by "
    "ci-9/77 (run feedf00d since 2025-06-01T10:00:00Z, lease expires in 60s)"
)


def test_lock_lost_mid_run_is_detected_by_the_renewal(h: Harness) -> None:
    inventory = h.inventory(renew=0.01)
    inventory.acquire(0, widen_nothing)
    inventory.check()
    theirs = usurp(h.api)
    eventually(lambda: lost_lock(inventory), "the renewal to find the other run's lock")
    with pytest.raises(InventoryError) as caught:
        inventory.check()
    assert str(caught.value) == LOST
    inventory.abandon()
    assert h.lease() == theirs  # neither renewed over nor released: the other run's record stands


def test_lock_lost_mid_run_is_detected_by_the_next_write(h: Harness) -> None:
    inventory = h.inventory()
    parent = inventory.acquire(0, widen_nothing)
    theirs = usurp(h.api)
    parent.group_kinds = {"ConfigMap"}
    inventory.write(parent)
    with pytest.raises(InventoryError) as caught:
        inventory.flush()
    assert str(caught.value) == LOST
    with pytest.raises(InventoryError):
        inventory.check()
    inventory.abandon()
    assert h.lease() == theirs
    assert "applyset.kubernetes.io/contains-group-kinds" in h.annotations()
    assert h.annotations()["applyset.kubernetes.io/contains-group-kinds"] == ""


@pytest.mark.parametrize("then", ["write", "close"])
def test_nothing_is_written_after_the_lock_was_lost(h: Harness, then: str) -> None:
    inventory = h.inventory(renew=0.01)
    parent = inventory.acquire(0, widen_nothing)
    theirs = usurp(h.api)
    eventually(lambda: lost_lock(inventory), "the renewal to find the other run's lock")
    writes = h.parent_writes()
    parent.group_kinds = {"ConfigMap", "Job.batch"}
    with pytest.raises(InventoryError) as caught:
        if then == "write":
            inventory.write(parent)
            inventory.flush()
        else:
            inventory.close(parent)
    assert str(caught.value) == LOST
    assert h.lease() == theirs
    assert h.parent_writes() == writes
    assert h.annotations()["applyset.kubernetes.io/contains-group-kinds"] == ""
