"""Every error krmfn raises, in one place.

    KrmfnError                      base; ``str(err)`` is a complete one-line message for humans
    ├── InputError                  the ResourceList on stdin cannot be used
    │   ├── YAMLSyntaxError         malformed YAML (line and column in the message)
    │   ├── DuplicateKeyError       a mapping repeats a key (YAML parsers silently keep the last one)
    │   ├── LimitExceededError      input size, item count, nesting depth or alias expansion over a limit
    │   └── ResourceListError       not a ResourceList, or an item that is not a valid KRM object
    ├── ConfigError                 the functionConfig is wrong; ``field`` names the offending field
    ├── PipelineError               ``krmfn render``: a Kptfile or pipeline entry krmfn cannot run
    └── RunnerError                 ``krmfn apply``: the base of runner failures (krmfn.runner.errors)
        ├── SourceError             -f/-k input cannot be read, parsed or built
        ├── ClusterUnreachable      the API server did not answer, even after retries
        ├── ObjectError             the API server refused one object (``ref`` names it)
        │   ├── InvalidObject       422
        │   ├── Forbidden           403
        │   ├── ApplyConflict       409 on server-side apply (--force-conflicts)
        │   ├── UnknownKind         discovery does not serve the apiVersion/kind
        │   └── JobSpecChanged      a Job's spec changed; specs are immutable and force is off
        ├── InventoryError          the ApplySet parent belongs to another tool
        ├── StepFailed              an object of a step failed (Job Failed, rollout stalled, ...)
        ├── StepTimeout             a step was not healthy within its timeout
        └── Interrupted             SIGINT/SIGTERM; exit code 128 + signum

Functions never let these escape as tracebacks: the runtime turns each into an error result, a line on
stderr and exit code 1. The runner turns its errors into an ``error`` event and a non-zero exit.
"""

from __future__ import annotations


class KrmfnError(Exception):
    """Base of every error krmfn raises on purpose."""


class InputError(KrmfnError):
    """The input stream cannot be used as a ResourceList."""


class YAMLSyntaxError(InputError):
    """The input is not well-formed YAML."""


class DuplicateKeyError(InputError):
    """A YAML mapping repeats a key."""


class LimitExceededError(InputError):
    """The input is over one of the configured limits (see krmfn.limits)."""


class ResourceListError(InputError):
    """The document is not a ResourceList or holds an invalid item."""


class ConfigError(KrmfnError):
    """The functionConfig is invalid. ``field`` is its dotted path, ``""`` for the whole object."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.reason = message


class PipelineError(KrmfnError):
    """A Kptfile pipeline cannot be run in-process by ``krmfn render``."""


class RunnerError(KrmfnError):
    """Base of the runner's errors."""
