"""What the runner's commands (plan, apply, diff, status) share: their flags' value types, the signal
handling of the commands that only read, and the plan and inventory identity made from the input.

Each command's module imports these from here, never a private name of another command.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from krmfn import interrupts
from krmfn.duration import SECOND, parse_duration
from krmfn.runner.errors import SourceError
from krmfn.runner.inventory.identity import Identity, identify
from krmfn.runner.plan import Plan, build_plan
from krmfn.stream import describe, no_objects

if TYPE_CHECKING:
    from krmfn.net.budget import Budget


def duration(text: str) -> float:
    try:
        nanos = parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    if nanos <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return nanos / SECOND


@contextlib.contextmanager
def interruptible(budget: Budget) -> Iterator[None]:
    """For a command that only reads (diff, status): SIGINT and SIGTERM raise ``KeyboardInterrupt`` in the
    main thread, which ends a request blocked there at once; ``budget.signum`` says which signal came."""

    def on_signal(signum: int, frame: FrameType | None) -> None:
        budget.stop(signum)
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, on_signal) for sig in interrupts.SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def make_plan(args: argparse.Namespace, docs: list[Any], namespace: str) -> Plan:
    plan = build_plan(docs, namespace=namespace, default_timeout=args.step_timeout, wait=args.wait)
    if not plan.items and not args.allow_empty:
        raise SourceError(empty_message(args))
    return plan


def empty_message(args: argparse.Namespace) -> str:
    """An input without objects is what a failed render gives a pipe: applied, it would prune the whole
    app, so it is refused. Only plan and diff, which write nothing, name the flag that accepts it: apply
    never suggests a flag that deletes everything (docs/runner.md#an-empty-input)."""
    named = f"kustomize build {args.kustomize}" if args.kustomize else describe(args.filename)
    text = no_objects(named)
    if args.command == "apply":
        return text + "; nothing was applied and nothing pruned"
    return text + "; if an app without objects is meant, pass --allow-empty"


def identity_of(args: argparse.Namespace, docs: list[Any]) -> Identity:
    directories = [args.kustomize] if args.kustomize else [f for f in args.filename if Path(f).is_dir()]
    return identify(docs, args.applyset, directories, args.prune)
