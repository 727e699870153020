"""The ApplySet parent on the server: read it, lock it, record the run in it, release it.

Every write is a create (the parent does not exist yet: 409 if another run created it first) or a
read-modify-write ``PUT`` of the last object read or written, so its resourceVersion is the
precondition (lock.py says why that makes the lock safe). Only krmfn's own labels and annotations are
replaced; other tools' fields on the Secret are kept. A 409 on a later write means the parent changed
since: if the lock is still this run's (another tool touched the Secret, or an earlier attempt went
through without its answer arriving), the write is merged again; if the parent already holds exactly this
write (it went through, its answer was lost and the retried PUT carried the old resourceVersion: the
release of the lock ends this way), it is done; otherwise the lock was lost and the run stops before it
can overwrite what the other run recorded.

After the lock is taken, writes run in the background one at a time (a single worker), so a step does
not wait for its inventory record; ``flush`` collects the outcome. A thread renews the lease.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from krmfn.errors import RunnerError
from krmfn.k8s.kobj import annotations_of
from krmfn.runner.cluster.api import Api
from krmfn.runner.errors import InventoryError, InventoryLocked, ObjectError
from krmfn.runner.events import Event, Lock
from krmfn.runner.inventory.applyset import GROUP_KINDS, NAMESPACES, TOOLING, Parent
from krmfn.runner.inventory.lock import LEASE, RENEW, Lease, held_by_other
from krmfn.runner.plan import Key
from krmfn.runner.reserved import JOB_RECORDS, LAST_PLAN, LEGACY_COMPLETED_JOBS, LOCK, ON_DELETE_STEPS, RUNS

Call = Callable[..., Any]
OWNED = (
    TOOLING,
    GROUP_KINDS,
    NAMESPACES,
    JOB_RECORDS,
    LEGACY_COMPLETED_JOBS,
    LOCK,
    RUNS,
    LAST_PLAN,
    ON_DELETE_STEPS,
)
"""The parent's annotations krmfn writes; a write replaces exactly these."""
LOCK_POLL = 0.5
CONFLICT_RETRIES = 5


def _utc_now() -> datetime:
    return datetime.now(UTC)


def lease_of(obj: dict[str, Any] | None) -> Lease | None:
    raw = annotations_of(obj or {}).get(LOCK)
    return Lease.parse(str(raw)) if raw else None


def merged(live: dict[str, Any], wanted: dict[str, Any]) -> dict[str, Any]:
    """``live`` with krmfn's labels and annotations replaced by ``wanted``'s; resourceVersion kept."""
    obj = dict(live)
    meta = {k: v for k, v in (live.get("metadata") or {}).items() if k != "managedFields"}
    meta["labels"] = {**(meta.get("labels") or {}), **wanted["metadata"]["labels"]}
    kept = {k: v for k, v in annotations_of(live).items() if k not in OWNED}
    meta["annotations"] = {**kept, **wanted["metadata"]["annotations"]}
    obj["metadata"] = meta
    return obj


def _is_conflict(err: RunnerError) -> bool:
    return isinstance(err, ObjectError) and err.code == 409


class Inventory:
    """The parent Secret ``namespace/name`` as one run sees it. ``call(key, request, *args)`` performs a
    request and turns API errors into errors naming ``key`` (the engine's ``_call``)."""

    def __init__(
        self,
        api: Api,
        name: str,
        namespace: str,
        *,
        field_manager: str,
        version: str,
        call: Call,
        emit: Callable[[Event], None],
        check_stop: Callable[[], None],
        sleep: Callable[[float], None],
        monotonic: Callable[[], float],
        now: Callable[[], datetime] = _utc_now,
        lease: float = LEASE,
        renew: float = RENEW,
    ) -> None:
        self.name, self.namespace, self.version = name, namespace, version
        self.key = Key("", "Secret", namespace, name)
        self._api, self._field_manager, self._call = api, field_manager, call
        self._emit, self._check_stop, self._sleep, self._monotonic, self._now = (
            emit, check_stop, sleep, monotonic, now
        )  # fmt: skip
        self._lease_seconds, self._renew_seconds = lease, renew
        self._res = api.resource("v1", "Secret")
        self._live: dict[str, Any] | None = None
        self._lease: Lease | None = None
        self._run = ""
        """Id of this run's lease: a lock with this id is ours."""
        self._stored: dict[str, Any] | None = None
        """The last render stored (without the lock)."""
        self._submitted: dict[str, Any] | None = None
        self._io = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._pending: Future[None] | None = None
        self._stamped_at = 0.0
        """Monotonic time at which the current lease's expiry was computed."""
        self._renewed_at = 0.0
        """``_stamped_at`` of the lease last stored: the server's copy expires ``lease`` seconds after it."""
        self._lost: RunnerError | None = None
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None

    # --- reading and locking -----------------------------------------------------------------------------

    def read(self) -> Parent:
        """The parent as recorded, without locking (server dry run: nothing is written)."""
        self._live = self._get()
        return Parent.from_live(self.name, self.namespace, self.version, self._live)

    def acquire(self, wait: float, widen: Callable[[Parent], None]) -> Parent:
        """Takes the lock (waiting up to ``wait`` seconds for another run to release it) with one write
        that also stores the parent as ``widen`` extends it. Returns that parent."""
        mine = Lease.new(self._now(), self._lease_seconds)
        self._run = mine.run
        deadline = self._monotonic() + wait
        waited_for: Lease | None = None
        conflicts = 0
        while True:
            self._live = self._get()
            parent = Parent.from_live(self.name, self.namespace, self.version, self._live)
            current, now, stamped = lease_of(self._live), self._now(), self._monotonic()
            blocked, why = held_by_other(current, mine.run, now)
            if blocked and current is not None:
                if self._monotonic() >= deadline:
                    raise InventoryLocked(self._locked_message(current, now, wait))
                if waited_for is None or waited_for.run != current.run:
                    self._emit(Lock("waiting", current.holder, self._waiting_detail(current, now, deadline)))
                    waited_for = current
                self._check_stop()
                self._sleep(LOCK_POLL)
                conflicts = 0  # only conflicts in a row, with no run holding the lock, mean a busy Secret
                continue
            widen(parent)
            self._lease = replace(mine, since=now, expires=now + timedelta(seconds=self._lease_seconds))
            self._stamped_at = stamped
            try:
                self._store(parent.render(), acquiring=True)
            except RunnerError as err:
                self._lease = None
                if not _is_conflict(err):
                    raise
                conflicts += 1  # another run wrote first (read its lock), or another tool keeps writing
                if conflicts >= CONFLICT_RETRIES:
                    raise InventoryError(
                        f"ApplySet {self.namespace}/{self.name} keeps changing under this run"
                    ) from None
                self._check_stop()
                continue
            break
        self._submitted = self._stored
        if current is not None and why:
            self._emit(Lock("taken-over", current.holder, why))
        elif waited_for is not None:
            self._emit(Lock("acquired", waited_for.holder, "after it was released"))
        self._renewer = threading.Thread(target=self._renew_loop, daemon=True, name="krmfn-lock-renewal")
        self._renewer.start()
        return parent

    def check(self) -> None:
        """Raises when the run must stop because its lock was lost or could not be renewed in time."""
        if self._lost is not None:
            raise self._lost
        # One renewal interval before the lease runs out: the margin for the clocks and this check's tick.
        limit = self._lease_seconds - self._renew_seconds
        if self._lease is not None and self._monotonic() - self._renewed_at > limit:
            raise InventoryError(
                f"could not renew the lock of ApplySet {self.namespace}/{self.name} for {limit:.0f}s; "
                "stopping before its lease runs out and another run takes it over"
            )

    # --- writing -----------------------------------------------------------------------------------------

    def write(self, parent: Parent) -> None:
        """Stores ``parent`` in the background; nothing when it is what was last submitted."""
        wanted = parent.render()
        if wanted == self._submitted:
            return
        self.flush()
        self._submitted = wanted
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="krmfn-inventory")
        self._pending = self._pool.submit(self._store, wanted)

    def flush(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def close(self, parent: Parent) -> None:
        """The run succeeded: one last write stores ``parent`` and releases the lock."""
        self.flush()
        self._stop_renewal()
        self._lease = None
        self._store(parent.render())
        self._shutdown()

    def end_for_delete(self) -> dict[str, Any] | None:
        """``krmfn delete`` is about to delete the parent itself: no more writes, no more renewals (a PUT
        after the DELETE would fail, or worse, re-create it). Returns the parent as last stored, whose UID
        the delete is conditioned on; the lock goes with it."""
        self.flush()
        self._stop_renewal()
        self._lease = None
        self._shutdown()
        return self._live

    def abandon(self, final: Parent | None = None) -> None:
        """The run failed (or ``close`` already ran): release the lock if still held, storing ``final``
        (the record of how the run ended) if given, best effort -- an error is already on its way, and an
        unreleased lease expires by itself."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.exception()
        self._stop_renewal()
        if self._lease is not None and self._lost is None:
            self._lease = None
            with contextlib.suppress(RunnerError):
                self._store(final.render() if final is not None else None)
        self._shutdown()

    # --- internals ---------------------------------------------------------------------------------------

    def _get(self) -> dict[str, Any] | None:
        ns = self.namespace
        live: dict[str, Any] | None = self._call(self.key, self._api.get, self._res, self.name, ns)
        return live

    def _store(
        self, wanted: dict[str, Any] | None = None, *, acquiring: bool = False, renewing: bool = False
    ) -> None:
        """Writes ``wanted`` (None: the last render stored, again) with the current lease, if any."""
        with self._io:
            if self._lost is not None:
                raise self._lost  # the parent holds another run's lock and record now: never overwrite them
            wanted = wanted if wanted is not None else self._stored
            if wanted is None or (renewing and self._lease is None):
                return  # nothing stored yet, or released meanwhile
            if renewing and self._lease is not None:
                self._lease = self._lease.renewed(self._now(), self._lease_seconds)
                self._stamped_at = self._monotonic()
            for _ in range(CONFLICT_RETRIES):
                try:
                    self._live = self._put(wanted)
                except RunnerError as err:
                    if acquiring or not _is_conflict(err):
                        raise
                    self._live = self._get()
                    current = lease_of(self._live)
                    if not self._carries(self._live, wanted):
                        if self._live is None or current is None or current.run != self._run:
                            self._lost = InventoryError(self._lost_message(current))
                            raise self._lost from None
                        continue  # still ours: someone else touched the Secret; merge again
                    # Else this very write went through and only its answer was lost (the retried PUT
                    # carried the old resourceVersion): the release of the lock looks like this.
                self._stored = wanted
                if self._lease is not None:
                    # Not the time the write ended: a write retried for long, or one carrying a lease
                    # stamped earlier, extends the lease only to its expiry.
                    self._renewed_at = self._stamped_at
                return
            raise InventoryError(f"ApplySet {self.namespace}/{self.name} keeps changing under this run")

    def _with_lease(self, wanted: dict[str, Any]) -> dict[str, Any]:
        annotations = dict(wanted["metadata"]["annotations"])
        if self._lease is not None:
            annotations[LOCK] = self._lease.render()
        return {**wanted, "metadata": {**wanted["metadata"], "annotations": annotations}}

    def _carries(self, live: dict[str, Any] | None, wanted: dict[str, Any]) -> bool:
        """Whether ``live`` already holds exactly what writing ``wanted`` now would store: krmfn's
        annotations (the lock included, or its absence) and labels."""
        if live is None:
            return False
        obj, notes = self._with_lease(wanted), annotations_of(live)
        labels = (live.get("metadata") or {}).get("labels") or {}
        return all(notes.get(k) == obj["metadata"]["annotations"].get(k) for k in OWNED) and all(
            labels.get(k) == v for k, v in obj["metadata"]["labels"].items()
        )

    def _put(self, wanted: dict[str, Any]) -> dict[str, Any]:
        obj = self._with_lease(wanted)
        if self._live is None:
            try:
                created: dict[str, Any] = self._call(
                    self.key, self._api.create, self._res, obj, field_manager=self._field_manager
                )
            except ObjectError as err:
                if err.code == 404:  # a create answers 404 only when the namespace does not exist
                    raise InventoryError(
                        f"the inventory Secret {self.name} lives in namespace {self.namespace}, which does "
                        "not exist: create it first, or pass -n"
                    ) from None
                raise
            return created
        replaced: dict[str, Any] = self._call(
            self.key, self._api.replace, self._res, merged(self._live, obj), field_manager=self._field_manager
        )
        return replaced

    def _renew_loop(self) -> None:
        while not self._stop.wait(self._renew_seconds):
            try:
                self._store(renewing=True)
            except InventoryError:
                return  # lost: ``check`` reports it
            except RunnerError:
                continue  # unreachable for now: ``check`` stops the run if this lasts a whole lease

    def _stop_renewal(self) -> None:
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join()
            self._renewer = None

    def _shutdown(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def _locked_message(self, current: Lease, now: datetime, wait: float) -> str:
        waited = f" (waited {wait:.0f}s)" if wait else "; pass --wait-for-lock DURATION to wait for it"
        return (
            f"ApplySet {self.namespace}/{self.name} is locked by another run: {current.describe(now)}{waited}"
        )

    def _waiting_detail(self, current: Lease, now: datetime, deadline: float) -> str:
        left = max(0.0, deadline - self._monotonic())
        return f"{current.status(now)}; waiting up to {left:.0f}s"

    def _lost_message(self, current: Lease | None) -> str:
        other = f"; now held by {current.describe(self._now())}" if current is not None else ""
        return (
            f"lost the lock of ApplySet {self.namespace}/{self.name}: the parent Secret was changed by "
            f"another run{other}"
        )
