"""Custom health checks in CEL, with the shape and semantics of Flux's ``healthCheckExprs``, so a team can
copy theirs: entries ``{apiVersion, kind, current, inProgress, failed}`` for the objects of one kind.

Where they come from: ``--health-checks FILE`` (a list of entries, or any document with
``healthCheckExprs:`` at its top or under ``spec:``, such as a Flux Kustomization), and objects in the
stream annotated ``krmfn.dev/health-checks: "true"`` that are never applied (local-config, or of the
``fn.krmfn.dev`` group), with the same ``healthCheckExprs:`` list. Every expression is compiled before the
run connects: one that does not compile is an input error naming its entry.

How an object is judged (Flux's order, RFC 0009): ``status.observedGeneration`` set and different from
``metadata.generation`` is in progress; then ``inProgress``, ``failed`` and ``current`` are evaluated in
that order, the first true one decides; none true is in progress. The object's top-level fields are the
variables (``status``, ``spec``, ``metadata``, ``data``...), as in Flux. Unlike Flux, which waits until its
timeout when an expression cannot be evaluated (a missing field, a result that is not a bool), the
object fails at once, naming the expression and why: guard fields that may be missing with ``has()`` or
``.?field.orValue()``. One exception: an object with no status at all is waited for (its controller
has not written one yet, and ``has()`` cannot test a top-level field such as ``status``).

CEL is cel-expr-python (the CEL project's Python binding of cel-cpp; docs/runner.md says why this one),
imported only when there are expressions to compile. Expressions are compiled here (an error is an input
error before any connection) and evaluated in a child process with a memory and a time limit
(celworker.py): cel-cpp bounds an evaluation's iterations, not its memory. No other I/O but reading the
``--health-checks`` file.
"""

from __future__ import annotations

import atexit
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache, partial
from typing import Any

from krmfn.k8s.kobj import annotations_of, is_local_config
from krmfn.runner.errors import HealthCheckError, SourceError
from krmfn.runner.health.celworker import (
    CompileError,
    Evaluate,
    EvaluationError,
    NotBool,
    Worker,
    compile_in_process,
    one_line,
)
from krmfn.runner.health.status import Health, State
from krmfn.runner.source import read_files

ANNOTATION = "krmfn.dev/health-checks"
FIELDS = ("apiVersion", "kind", "current", "inProgress", "failed")
EXPRESSIONS = ("inProgress", "failed", "current")  # evaluation order (RFC 0009)
STATES: dict[str, State] = {"inProgress": "in-progress", "failed": "failed", "current": "current"}
MAX_EXPRESSION = 4096
"""Characters an expression may have: health checks are short; a longer one is a mistake or an attack."""
MAX_ENTRIES = 1000
"""Entries in all: one per kind, and no app has a thousand custom kinds; compiling costs ~0.1 ms each."""
SHOWN = 120  # characters of an expression quoted in a message
RESERVED = {
    ("batch", "Job"): "the runner's Job rules (Complete, Failed, the inventory's run records) decide Jobs"
}


@dataclass(frozen=True)
class Check:
    """One entry, compiled."""

    group: str
    kind: str
    where: str
    """Where the entry comes from, for messages: ``--health-checks FILE, entry 2 (Widget.example.com)``."""
    expressions: tuple[tuple[str, str, Evaluate], ...]
    """(field, source text, compiled), in evaluation order; ``current`` always, the others if given."""


def _shown(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= SHOWN else flat[: SHOWN - 3] + "..."


class HealthChecks:
    """The compiled entries, by group and kind."""

    def __init__(self, checks: Iterable[Check] = ()) -> None:
        self.by_kind: dict[tuple[str, str], Check] = {}
        for check in checks:
            other = self.by_kind.get((check.group, check.kind))
            if other is not None:
                raise HealthCheckError(
                    f"{check.where}: a second health check for {_group_kind(check.group, check.kind)} "
                    f"(the first: {other.where}); give each kind one entry"
                )
            self.by_kind[(check.group, check.kind)] = check

    def __bool__(self) -> bool:
        return bool(self.by_kind)

    def judge(self, obj: dict[str, Any]) -> Health | None:
        """The health of ``obj`` by its kind's entry; None when no entry is for its kind."""
        group = str(obj.get("apiVersion", "")).rpartition("/")[0]
        check = self.by_kind.get((group, str(obj.get("kind", ""))))
        if check is None:
            return None
        if _generation_pending(obj):
            return Health("in-progress", "waiting for the controller to observe the new generation")
        for name, text, evaluate in check.expressions:
            try:
                result = evaluate(obj)
            except NotBool as err:
                return Health(
                    "failed",
                    f"health check {name} `{_shown(text)}` ({check.where}) returned {err}, not a bool",
                )
            except EvaluationError as err:
                if not isinstance(obj.get("status"), dict) or not obj["status"]:
                    # No status yet: its controller has not looked at it, and has() cannot guard a
                    # top-level field (Flux's docs say so), so a copied expression would fail every
                    # object it is given right after its creation.
                    return Health("in-progress", "waiting for its controller to write a status")
                return Health("failed", f"health check {name} `{_shown(text)}` ({check.where}) failed: {err}")
            if result:
                return Health(STATES[name], f"{name}: `{_shown(text)}`")
        return Health("in-progress", "no health check expression is true yet")


def _generation_pending(obj: dict[str, Any]) -> bool:
    status, meta = obj.get("status"), obj.get("metadata")
    observed = status.get("observedGeneration") if isinstance(status, dict) else None
    generation = meta.get("generation") if isinstance(meta, dict) else None
    return isinstance(observed, int) and isinstance(generation, int) and observed != generation


def _group_kind(group: str, kind: str) -> str:
    return f"{kind}.{group}" if group else kind


# --- reading -----------------------------------------------------------------------------------------------


def load(path: str | None, docs: list[Any]) -> HealthChecks:
    """The entries of ``--health-checks`` ``path`` (if given) and of the annotated objects of ``docs``,
    compiled; every problem is a ``HealthCheckError`` naming the entry."""
    sources: list[tuple[str, Any]] = []
    if path is not None:
        try:
            found = read_files([path])
        except SourceError as err:
            raise HealthCheckError(f"--health-checks {err}") from None
        if len(found) != 1:
            raise HealthCheckError(f"--health-checks {path}: expected one YAML document, found {len(found)}")
        sources.append((f"--health-checks {path}", _entries(found[0], f"--health-checks {path}")))
    for position, doc in enumerate(docs):
        if not isinstance(doc, dict) or str(annotations_of(doc).get(ANNOTATION, "")).lower() != "true":
            continue
        meta = doc.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        where = f"{doc.get('kind')} {meta.get('name')} (document {position + 1})"
        if not is_local_config(doc):
            raise HealthCheckError(
                f'{where}: annotated {ANNOTATION}: "true" but would be applied to the cluster; annotate it '
                'config.kubernetes.io/local-config: "true" (or give it an fn.krmfn.dev apiVersion)'
            )
        sources.append((where, _entries(doc, where)))
    if not sources:
        return HealthChecks()
    count = sum(len(entries) for _, entries in sources)
    if count > MAX_ENTRIES:
        raise HealthCheckError(
            f"{sources[0][0]}: {count} health checks, more than {MAX_ENTRIES} (one per kind)"
        )
    compile_ = _compiler()
    return HealthChecks(
        _check(entry, f"{where}, entry {i + 1}", compile_)
        for where, entries in sources
        for i, entry in enumerate(entries)
    )


def _entries(doc: Any, where: str) -> list[Any]:
    if isinstance(doc, list):
        return doc
    if isinstance(doc, dict):
        found = doc.get("healthCheckExprs")
        spec = doc.get("spec")
        if found is None and isinstance(spec, dict):
            found = spec.get("healthCheckExprs")
        if isinstance(found, list):
            return found
        if found is not None:
            raise HealthCheckError(
                f"{where}: healthCheckExprs must be a list of entries, not {type(found).__name__}"
            )
    raise HealthCheckError(
        f"{where}: no health checks: expected a list of {{apiVersion, kind, current, inProgress, failed}} "
        "entries, or healthCheckExprs: with that list (at the top or under spec:)"
    )


def _check(entry: Any, where: str, compile_: Callable[[str], Evaluate]) -> Check:
    if not isinstance(entry, dict):
        raise HealthCheckError(
            f"{where}: expected a mapping with apiVersion, kind and current, not {type(entry).__name__}"
        )
    unknown = sorted(str(k) for k in entry if k not in FIELDS)
    if unknown:
        raise HealthCheckError(f"{where}: unknown field {unknown[0]!r} (the fields: {', '.join(FIELDS)})")
    for name in FIELDS:
        value = entry.get(name)
        if value is not None and not isinstance(value, str):
            raise HealthCheckError(f"{where}: {name} must be a string, not {type(value).__name__}")
    api_version, kind = entry.get("apiVersion") or "", entry.get("kind") or ""
    if not api_version or not kind:
        raise HealthCheckError(f"{where}: apiVersion and kind are required")
    group, _, version = api_version.rpartition("/")
    if not version or api_version.count("/") > 1 or not kind.isidentifier():
        raise HealthCheckError(f"{where}: not an apiVersion and kind: {api_version!r}, {kind!r}")
    where = f"{where} ({_group_kind(group, kind)})"
    if (group, kind) in RESERVED:
        raise HealthCheckError(f"{where}: {RESERVED[(group, kind)]}; a health check cannot replace them")
    if not (entry.get("current") or "").strip():
        raise HealthCheckError(
            f"{where}: current is required (the expression that says the object is healthy)"
        )
    compiled = []
    for name in EXPRESSIONS:
        text = entry.get(name) or ""
        if not text.strip():
            continue
        if len(text) > MAX_EXPRESSION:
            raise HealthCheckError(
                f"{where}: {name} is {len(text)} characters long (at most {MAX_EXPRESSION})"
            )
        try:
            compiled.append((name, text, compile_(text)))
        except CompileError as err:
            raise HealthCheckError(f"{where}: {name} `{_shown(text)}` does not compile: {err}") from None
    return Check(group, kind, where, tuple(compiled))


# --- CEL ------------------------------------------------------------------------------------------------


@cache
def _worker() -> Worker:
    """The one worker of this process (its child starts with the first evaluation, ends with it)."""
    worker = Worker()
    atexit.register(worker.close)
    return worker


def _compiler() -> Callable[[str], Evaluate]:
    """Compiles here (for the errors), evaluates in the worker process (celworker.py)."""
    compile_ = compile_in_process()

    def compile_isolated(text: str) -> Evaluate:
        compile_(text)
        return partial(_isolated, _worker(), text)

    return compile_isolated


def _isolated(worker: Worker, text: str, obj: dict[str, Any]) -> bool:
    answer = worker.evaluate(text, obj)
    if "error" in answer:
        raise EvaluationError(one_line(str(answer["error"])))
    if "type" in answer:
        raise NotBool(str(answer["type"]))
    return bool(answer["bool"])
