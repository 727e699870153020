"""How long a request may take: its own timeouts (ceilings.py), the run's deadline, a signal.

``Budget`` is the run's: one deadline (``--timeout``) and a stop asked by SIGINT or SIGTERM, shared by
every request of the run, whichever thread sends it. A request that was in flight when the run stopped
ends at once (within a ``TICK``); one started after it (releasing the lock, recording how the run ended)
gets ``GRACE`` more seconds; a second signal ends those too. ``stop`` only assigns attributes, so a
signal handler may call it while any thread holds any lock.

``Timer`` is one request's: it says how long the next wait on its socket may last, and raises when the
request must end: ``TimedOut`` for its own total or idle time, ``Stopped`` for the budget or its
caller (``cancelled``: a watch whose waiter is done).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from krmfn.net.ceilings import GRACE, TICK, Ceiling, seconds
from krmfn.net.errors import Stopped, TimedOut

Clock = Callable[[], float]


class Budget:
    def __init__(self, timeout: float = 0.0, *, grace: float = GRACE, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self.grace = grace
        self.timeout = timeout
        self.deadline: float | None = clock() + timeout if timeout > 0 else None
        self.signum: int | None = None
        self.stopped_at: float | None = None
        self.forced = False
        self.on_stop: Callable[[], None] | None = None
        """Called when a request is ended by this budget, before ``Stopped`` is raised: the runner's
        engine raises its own error there (Interrupted, RunTimeout) naming what the run was doing."""

    def start(self, timeout: float) -> None:
        """The run's deadline starts now (``timeout`` seconds; 0: none)."""
        self.timeout = timeout
        self.deadline = self._clock() + timeout if timeout > 0 else None

    def stop(self, signum: int) -> None:
        """A signal asks the run to stop: safe in a signal handler (no lock, no allocation beyond a float)."""
        if self.stopped_at is None:
            self.signum = signum
            self.stopped_at = self._clock()
        else:
            self.forced = True

    def end_for(self, started: float) -> float:
        """When a request started at ``started`` must be over (``inf``: no bound from the run)."""
        stop = self.stopped_at
        if self.deadline is not None:
            stop = self.deadline if stop is None else min(stop, self.deadline)
        if stop is None:
            return math.inf
        if self.forced or started < stop:
            return stop
        return stop + self.grace

    def expired(self, started: float | None = None) -> bool:
        now = self._clock()
        return now >= self.end_for(now if started is None else started)

    def ended(self) -> Stopped:
        """The error of a request this budget ended (after ``on_stop``, which may raise its own)."""
        if self.on_stop is not None:
            self.on_stop()
        if self.stopped_at is not None and (self.deadline is None or self.stopped_at <= self.deadline):
            return Stopped("interrupted", self.signum)
        return Stopped(f"the deadline ({seconds(self.timeout)}) passed")


class Timer:
    """One request's time. ``wait()`` before every wait on the socket, ``progress()`` after data came."""

    __slots__ = ("_budget", "_cancelled", "_ceiling", "_clock", "_idle_end", "_total_end", "started")

    def __init__(
        self,
        ceiling: Ceiling,
        budget: Budget | None = None,
        cancelled: Callable[[], bool] | None = None,
        clock: Clock = time.monotonic,
    ) -> None:
        now = clock()
        self.started = now
        self._ceiling = ceiling
        self._budget = budget
        self._cancelled = cancelled
        self._clock = clock
        self._total_end = now + ceiling.total
        self._idle_end = now + ceiling.idle

    def wait(self, limit: float = math.inf) -> float:
        """Seconds the next wait may last (at most ``TICK`` and ``limit``); raises when the request must
        end now."""
        now = self._clock()
        end = self._total_end if self._total_end < self._idle_end else self._idle_end
        if now >= end:
            raise self._timed_out(now)
        budget = self._budget
        if budget is not None and (budget.stopped_at is not None or budget.deadline is not None):
            stop = budget.end_for(self.started)
            if now >= stop:
                raise budget.ended()
            end = min(end, stop)
        if self._cancelled is not None and self._cancelled():
            raise Stopped("cancelled")
        return max(min(end - now, TICK, limit), 0.001)

    def progress(self) -> None:
        self._idle_end = self._clock() + self._ceiling.idle

    def connect_wait(self, opened: float) -> float:
        """``wait()`` bounded by the connect timeout of a connection attempt started at ``opened``."""
        left = opened + self._ceiling.connect - self._clock()
        if left <= 0:
            raise TimedOut(f"could not connect within {seconds(self._ceiling.connect)}")
        return self.wait(left)

    def _timed_out(self, now: float) -> TimedOut:
        if now >= self._total_end:
            return TimedOut(f"no complete {self._ceiling.what} within {seconds(self._ceiling.total)}")
        return TimedOut(f"no data for {seconds(self._ceiling.idle)}")
