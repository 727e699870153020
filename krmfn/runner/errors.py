"""The runner's errors. Each ``str(err)`` is one complete line that names the object and the cause.

Their place in krmfn's one error tree is in krmfn/errors.py (under ``RunnerError``).
"""

from __future__ import annotations

import signal

from krmfn.errors import RunnerError, internal_error

__all__ = [
    "AnswerTooLarge",
    "ApplyConflict",
    "ClusterUnreachable",
    "Forbidden",
    "HealthCheckError",
    "InternalError",
    "Interrupted",
    "InvalidObject",
    "InventoryError",
    "InventoryLocked",
    "JobSpecChanged",
    "KubeconfigError",
    "NoInventory",
    "ObjectError",
    "RunTimeout",
    "RunnerError",
    "SourceError",
    "StepFailed",
    "StepTimeout",
    "UnknownKind",
]


class SourceError(RunnerError):
    """The input (-f FILE|DIR|-, -k DIR) cannot be read, parsed or built."""


class ClusterUnreachable(RunnerError):
    """Connecting to the API server failed after the retries."""


class AnswerTooLarge(ClusterUnreachable):
    """An answer of the API server over its ceiling (krmfn/net/ceilings.py): not retried."""


class KubeconfigError(RunnerError):
    """The kubeconfig cannot be read or used, or its credentials (an exec plugin) failed. Never quotes
    the kubeconfig's text or the plugin's output: both may hold credentials."""


class ObjectError(RunnerError):
    """The API server refused a request about one object."""

    def __init__(self, ref: str, cause: str, code: int = 0) -> None:
        super().__init__(f"{ref}: {cause}")
        self.ref = ref
        self.cause = cause
        self.code = code


class InvalidObject(ObjectError):
    """HTTP 422: the object is invalid (or changes an immutable field)."""


class Forbidden(ObjectError):
    """HTTP 403: the credentials may not do this."""


class ApplyConflict(ObjectError):
    """HTTP 409 on server-side apply: fields are owned by another manager."""


class UnknownKind(ObjectError):
    """Discovery does not list the object's apiVersion/kind."""


class JobSpecChanged(ObjectError):
    """A Job's rendered spec differs from the live one and the Job may not be re-created."""


class InventoryError(RunnerError):
    """The ApplySet parent cannot be used."""


class InventoryLocked(InventoryError):
    """Another run holds the ApplySet's lock (lock.py)."""


class NoInventory(InventoryError):
    """``krmfn diff`` or ``krmfn status`` found no ApplySet parent: nothing was applied under that name
    in that namespace (or the name or namespace is not the one apply used)."""


class StepFailed(RunnerError):
    """An object of the step reached a failed state."""

    def __init__(self, step: str, ref: str, reason: str) -> None:
        super().__init__(f"step {step}: {ref} failed: {reason}")
        self.step = step
        self.ref = ref
        self.reason = reason


class StepTimeout(RunnerError):
    """The step did not become healthy in time; ``pending`` lists what was still not ready."""

    def __init__(self, step: str, timeout: str, pending: list[tuple[str, str]]) -> None:
        detail = "; ".join(f"{ref}: {message}" for ref, message in pending)
        super().__init__(f"step {step}: not healthy after {timeout}: {detail}")
        self.step = step
        self.pending = pending


class RunTimeout(RunnerError):
    """The run as a whole took longer than ``--timeout``; steps keep their own timeouts within it."""

    def __init__(self, timeout: float, during: str, pending: list[tuple[str, str]]) -> None:
        from krmfn.duration import SECOND, format_duration

        detail = "".join(f"; {ref}: {message}" for ref, message in pending)
        super().__init__(
            f"the run did not finish within --timeout {format_duration(round(timeout * SECOND))}, during "
            f"{during}{detail}; nothing was pruned"
        )
        self.pending = pending


class Interrupted(RunnerError):
    """A signal stopped the run; the exit code is 128 + ``signum``."""

    def __init__(self, signum: int, during: str) -> None:
        name = signal.Signals(signum).name
        super().__init__(f"interrupted by {name} during {during}; nothing was pruned; run again to continue")
        self.signum = signum


class InternalError(RunnerError):
    """An exception the engine did not expect, a bug, turned into the run's error so that the run still
    ends as a failure: its record ended, the lock released, the ``error`` and ``result`` events written,
    exit code ``krmfn.errors.EXIT_INTERNAL``."""

    def __init__(self, err: BaseException, during: str) -> None:
        super().__init__(internal_error(err, during))


class HealthCheckError(SourceError):
    """A health check entry that cannot be used: an input error, reported before any connection."""
