"""Every error krmfn raises, in one place: the tree of every ``KrmfnError`` class, wherever it is defined.

    KrmfnError                      base; ``str(err)`` is a complete one-line message for humans
    ├── InputError                  the ResourceList on stdin cannot be used
    │   ├── YAMLSyntaxError         malformed YAML (line and column in the message)
    │   ├── DuplicateKeyError       a mapping repeats a key (YAML parsers silently keep the last one)
    │   ├── LimitExceededError      input size, item count, nesting depth or alias expansion over a limit
    │   ├── ResourceListError       not a ResourceList, or an item that is not a valid KRM object
    │   └── StreamError             ``-f FILE|DIR|-`` cannot be read (krmfn/k8s/manifest_files.py)
    ├── ConfigError                 the functionConfig is wrong; ``field`` names the offending field
    ├── PipelineError               ``krmfn render``: a Kptfile or pipeline entry krmfn cannot run
    ├── BudgetExceeded              render-inputs: the expressions worked or built past the render's budget
    ├── NetError                    krmfn/net: a request that failed (krmfn/net/errors.py)
    │   ├── Unreachable             no connection, or it broke
    │   ├── TimedOut                a wait ran out
    │   ├── TooLarge                an answer over its ceiling
    │   ├── Malformed               an answer that is not HTTP
    │   ├── Refused                 a hop the address rules refuse
    │   └── Stopped                 the run's budget ended it (deadline or signal)
    └── RunnerError                 ``krmfn apply``: the base of runner failures (krmfn/runner/errors.py)
        ├── SourceError             -f/-k input cannot be read, parsed or built
        │   ├── HealthCheckError    a --health-checks entry that cannot be used
        │   └── DeleteStepsNeeded   krmfn delete: on-delete steps, no render (runner/engine/delete_steps.py)
        ├── ClusterUnreachable      the API server did not answer, even after retries
        │   └── AnswerTooLarge      an answer over its ceiling (krmfn/net/ceilings.py), not retried
        ├── KubeconfigError         the kubeconfig cannot be read or used, or its exec plugin failed
        ├── ApiStatusError          a non-transient error answer (runner/cluster/api.py)
        ├── NoSuchKind              discovery does not list the apiVersion/kind (runner/cluster/api.py)
        ├── UnsafePath              a name that cannot be a URL path segment (runner/cluster/api.py)
        ├── ObjectError             the API server refused one object (``ref`` names it)
        │   ├── InvalidObject       422
        │   ├── Forbidden           403
        │   ├── ApplyConflict       409 on server-side apply (--force-conflicts)
        │   ├── UnknownKind         discovery does not serve the apiVersion/kind
        │   └── JobSpecChanged      a Job's spec changed; specs are immutable and force is off
        ├── InventoryError          the ApplySet parent belongs to another tool, or cannot be written
        │   ├── InventoryLocked     another run holds the lock (and --wait-for-lock ran out)
        │   └── NoInventory         diff/status: no ApplySet parent of that name
        ├── StepFailed              an object of a step failed (Job Failed, rollout stalled, ...)
        ├── StepTimeout             a step was not healthy within its timeout
        │   └── DeleteTimeout       krmfn delete: a step's objects not gone in time (runner/engine/delete.py)
        ├── RunTimeout              the whole run took longer than --timeout
        ├── Interrupted             SIGINT/SIGTERM; exit code 128 + signum
        │   └── DeleteInterrupted   the same during krmfn delete (runner/engine/delete.py)
        └── InternalError           an exception krmfn did not expect (a bug): exit code ``EXIT_INTERNAL``

Not KrmfnError, on purpose: each is caught in its own package and never reaches a user as itself
(tests/test_error_tree.py keeps both lists true).

    UsageError  (sdk/cliargs.py) a command line argparse refuses: one line and exit 2 (function.py, render.py)
    _Usage  (render.py) the same inside ``krmfn render``'s own parser
    UnsafePackagePath  (kpt/packagefs.py) reported by package.py with the file, as an OSError is
    BadAnnotation  (runner/settle_annotations.py) the plan reports it as the object's SourceError
    IntRangeError  (yaml/fast.py) an integer past 64 bits, caught by the YAML readers and writers
    _Unsupported  (yaml/fast_dump.py) a value the event dumper lacks: PyYAML's dumper writes it instead
    Unwritable  (yaml/edit/scalars.py) the faithful writer falls back to writing the document anew
    Unplaceable  (yaml/edit/layout.py) the same, for an edit it cannot splice in place
    Unreadable  (runner/cluster/api.py) an answer parse_json refuses; kube.py raises the RunnerError
    CompileError  (runner/health/celworker.py) healthexprs.py turns it into HealthCheckError
    EvaluationError  (runner/health/celworker.py) healthexprs.py turns it into the object's failed health
    NotBool  (runner/health/celworker.py) likewise, for a result that is not a bool
    RenderError  (functions/render_inputs/values.py) render-inputs reports it as the expression's result
    _Spent  (functions/render_inputs/transform.py) ends a render whose budget is spent
    RegistryError  (functions/set_image/registry.py) set-image reports it as an error result
    SemverError  (functions/set_image/semver.py) set-image's config reports it as the field's error
    AnnotationError  (functions/set_config_checksum/references.py) reported as the resource's result
    ScheduleError  (functions/validate_jobs/cron.py) validate-jobs reports it as a finding
    TriggerError  (k8s/jobtriggers.py) a Job's result in its functions, the object's SourceError in the plan
    PathError  (k8s/triggerpaths.py) jobtriggers.py turns it into the TriggerError of the trigger
    Conflict  (functions/hash_job_names/triggers.py) hash-job-names reports it as the Job's result

Functions never let these escape as tracebacks: the runtime turns each into an error result, a line on
stderr and exit code 1. The runner turns its errors into an ``error`` event and a non-zero exit.

Any other exception is a bug. The commands (``krmfn render|plan|apply|diff|status|export``) report it as
one line (``internal_error``) and exit ``EXIT_INTERNAL``, a code no answer of theirs uses: a traceback
exits 1, which ``krmfn diff`` documents as "changes found" and ``krmfn status`` as "not healthy".
"""

from __future__ import annotations

DEBUG_ENV = "KRMFN_DEBUG"
"""Set (to anything) to get the traceback of an internal error instead of its one line."""
EXIT_INTERNAL = 70
"""Exit code of an internal error (sysexits.h's EX_SOFTWARE), for every command but the functions, whose
contract with kpt and kustomize is 0 or 1 (they report a bug as an error result, exit 1)."""
_SHOWN = 300


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


def internal_error(err: BaseException, during: str = "") -> str:
    """The one line that reports a bug: the exception's type and the first line of its text, cut (it may
    quote a value thousands of characters long)."""
    lines = str(err).splitlines()
    text = lines[0] if lines else ""
    text = text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."
    where = f" during {during}" if during else ""
    return (
        f"internal error{where}: {type(err).__name__}"
        + (f": {text}" if text else "")
        + f" (a bug in krmfn: please report it; set {DEBUG_ENV}=1 for a traceback)"
    )
