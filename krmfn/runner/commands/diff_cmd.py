"""``krmfn diff``: what the next ``krmfn apply`` with the same input and flags would change.

Text: a unified diff per changed object, like ``kubectl diff`` (YAML, keys sorted, managed fields, status
and server-set metadata left out, Secret values masked), coloured on a terminal only; ``KRMFN_DIFF``
names another program to compare the two directories (as ``KUBECTL_EXTERNAL_DIFF`` does). ``-o json``:
one event per object with its change as an RFC 6902 JSON Patch, then a result line.

Exit codes follow kubectl diff: 0 nothing would change, 1 something would, 2 an error; and a bug is
``krmfn.errors.EXIT_INTERNAL``, never 1.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from krmfn.errors import DEBUG_ENV, RunnerError, internal_error
from krmfn.runner.engine.diff import CHANGES, Change, as_yaml, patch_of, unified
from krmfn.terminal import write_line

if TYPE_CHECKING:
    from krmfn.runner.cluster.api import Api
    from krmfn.runner.engine.differ import Failure

EXIT_CHANGES = 1
EXIT_ERROR = 2
EXTERNAL = "KRMFN_DIFF"
_COLOURS = {"+": "\x1b[32m", "-": "\x1b[31m", "@": "\x1b[36m"}
_BOLD, _RESET = "\x1b[1m", "\x1b[0m"


def _fail(err: RunnerError | str) -> None:
    write_line(sys.stderr, f"krmfn diff: {err}")


def run(args: argparse.Namespace, docs: list[Any], api_factory: Callable[[argparse.Namespace], Api]) -> int:
    """The diff's exit code. A bug raises (krmfn.cli reports it, exit ``EXIT_INTERNAL``, never 1, which
    says "changes found"); with ``-o json`` the result line says so first."""
    try:
        return _run(args, docs, api_factory)
    except Exception as err:
        if args.output == "json" and not os.environ.get(DEBUG_ENV):
            _result(sys.stdout, [], [], internal_error(err))
        raise


def _run(args: argparse.Namespace, docs: list[Any], api_factory: Callable[[argparse.Namespace], Api]) -> int:
    from krmfn.net.budget import Budget
    from krmfn.runner.commands.context import RunContext, interruptible
    from krmfn.runner.engine.differ import Differ, DiffOptions, Failure

    run = RunContext(args, docs)
    try:
        run.check_input()
    except RunnerError as err:
        _fail(err)
        return EXIT_ERROR
    args.budget = budget = Budget(args.timeout)
    try:
        api = run.connect(api_factory)
    except RunnerError as err:
        _fail(err)
        return EXIT_ERROR
    try:
        with interruptible(budget):
            plan = run.settle()
            identity = run.inventory
            options = DiffOptions(
                applyset=identity.name, applyset_source=identity.source, namespace=run.namespace,
                field_manager=args.field_manager, force_conflicts=args.force_conflicts, prune=args.prune,
                adopt=args.adopt, prune_namespaces=args.prune_namespaces, prune_crds=args.prune_crds,
                allow_empty=args.allow_empty,
            )  # fmt: skip
            changes: list[Change] = []
            failures: list[Failure] = []
            show = _json_event if args.output == "json" else None
            for found in Differ(api, options).changes(plan):
                if isinstance(found, Failure):
                    failures.append(found)
                    _fail(f"{found.object}: {found.message}")
                else:
                    changes.append(found)
                if show is not None:
                    show(sys.stdout, found)
    except RunnerError as err:
        from krmfn.runner.errors import NoInventory

        _fail(err)
        if args.output == "json":
            _result(sys.stdout, [], [], str(err))
        return EXIT_CHANGES if isinstance(err, NoInventory) else EXIT_ERROR
    except KeyboardInterrupt:
        _fail("interrupted; nothing was written")
        return 128 + (budget.signum or signal.SIGINT)
    finally:
        run.close()
    return _finish(args, changes, failures)


def _finish(args: argparse.Namespace, changes: list[Change], failures: list[Failure]) -> int:
    """Prints what the diff found (the JSON events are out already) and gives the exit code."""
    changed = [c for c in changes if c.action in CHANGES]
    if args.output == "json":
        _result(sys.stdout, changes, failures, None)
    else:
        external = os.environ.get(EXTERNAL, "").strip()
        if external and changed:
            code = _external(external, changed)
            if code is not None:
                return code
        else:
            _text(sys.stdout, changed, colour=_colour(sys.stdout))
        _summary(changes, failures)
    if failures:
        return EXIT_ERROR
    return EXIT_CHANGES if changed else 0


def _colour(out: TextIO) -> bool:
    """Colour only on a terminal, and never under NO_COLOR (https://no-color.org)."""
    return out.isatty() and not os.environ.get("NO_COLOR")


def _text(out: TextIO, changed: list[Change], colour: bool) -> None:
    """Every line escaped: names, values and keys come from the manifests and the cluster."""
    for change in changed:
        head = f"# {change.object}: {change.action}"
        if change.step_name is not None:
            head += f" (step {change.step_name})"
        if change.detail:
            head += f": {change.detail}"
        lines = [head, f"diff -u -N live/{change.file} merged/{change.file}", *unified(change)]
        for i, line in enumerate(lines):
            code = ""
            if colour:
                code = _BOLD if i < 2 or line.startswith(("---", "+++")) else _COLOURS.get(line[:1], "")
            write_line(out, line, code, _RESET if code else "")
    out.flush()


def _summary(changes: list[Change], failures: list[Failure]) -> None:
    counts = {
        a: sum(1 for c in changes if c.action == a) for a in ("create", "update", "delete", "unchanged")
    }
    text = ", ".join(f"{n} to {a}" if a != "unchanged" else f"{n} unchanged" for a, n in counts.items())
    if failures:
        text += f", {len(failures)} would fail"
    write_line(sys.stderr, f"krmfn diff: {text}")


def _json_event(out: TextIO, found: Change | Failure) -> None:
    if isinstance(found, Change):
        data: dict[str, Any] = {
            "type": "diff", "step": found.step, "stepName": found.step_name, "object": found.object,
            "action": found.action, "detail": found.detail, "patch": patch_of(found),
        }  # fmt: skip
    else:
        data = {"type": "error", "step": found.step, "stepName": found.step_name, "object": found.object,
                "message": found.message}  # fmt: skip
    out.write(json.dumps(data, separators=(",", ":")) + "\n")
    out.flush()


def _result(out: TextIO, changes: list[Change], failures: list[Failure], error: str | None) -> None:
    counts = {
        a: sum(1 for c in changes if c.action == a) for a in ("create", "update", "delete", "unchanged")
    }
    data = {"type": "result", "ok": error is None and not failures,
            "changed": any(c.action in CHANGES for c in changes), **counts, "failed": len(failures),
            "error": error}  # fmt: skip
    out.write(json.dumps(data, separators=(",", ":")) + "\n")
    out.flush()


def _external(command: str, changed: list[Change]) -> int | None:
    """Runs ``command live/ merged/`` on two directories holding each changed object's two sides (as
    kubectl diff does with KUBECTL_EXTERNAL_DIFF); its output goes to stdout as it is. Returns an exit
    code when the program failed (its status above 1, or it cannot run), else None."""
    try:
        argv = shlex.split(command)
    except ValueError as err:
        _fail(f"{EXTERNAL} cannot be split into a command: {err}")
        return EXIT_ERROR
    # The directory goes away however this ends: the differ fails, cannot start, or is interrupted.
    with tempfile.TemporaryDirectory(prefix="krmfn-diff-") as tmp:
        live, merged = Path(tmp, "live"), Path(tmp, "merged")
        try:
            _write_sides(live, merged, changed)
        except OSError as err:  # a full disk, a read-only TMPDIR
            _fail(f"{EXTERNAL}: cannot write the objects to compare under {tmp}: {err.strerror or err}")
            return EXIT_ERROR
        sys.stdout.flush()
        try:
            code = subprocess.run([*argv, str(live), str(merged)], check=False).returncode
        except (OSError, subprocess.SubprocessError) as err:  # SubprocessError: the child died before exec
            reason = getattr(err, "strerror", None) or type(err).__name__
            _fail(f"{EXTERNAL}: cannot run {argv[0] if argv else command!r}: {reason}")
            return EXIT_ERROR
        except KeyboardInterrupt:  # subprocess.run has stopped the differ
            _fail("interrupted; nothing was written")
            return 130
    if code > 1 or code < 0:
        _fail(f"{EXTERNAL}: {argv[0]!r} failed with exit status {code}")
        return EXIT_ERROR
    return None


def _write_sides(live: Path, merged: Path, changed: list[Change]) -> None:
    """Each changed object's two sides as ``live/<file>`` and ``merged/<file>`` (diff.file_name: safe,
    unique, short enough), UTF-8 whatever the locale."""
    live.mkdir()
    merged.mkdir()
    for change in changed:
        for side, obj in ((live, change.before), (merged, change.after)):
            if obj is not None:
                (side / change.file).write_text(as_yaml(obj), encoding="utf-8")
