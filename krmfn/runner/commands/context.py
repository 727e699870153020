"""What the runner's commands (plan, apply, diff, status) share: ``RunContext``, their flags' value
types and the signal handling of the commands that only read.

``RunContext`` resolves a run's kubeconfig (the ``Api``), namespace, inventory identity and plan once,
in the one order every command follows: input errors first, without the kubeconfig; then the cluster's
client; then the namespace (``-n``, else the kubeconfig context's) and the plan made for it. Each
command's module imports these from here, never a private name of another command.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from krmfn import interrupts
from krmfn.duration import SECOND, parse_duration
from krmfn.k8s.manifest_files import describe, no_objects
from krmfn.runner.errors import SourceError
from krmfn.runner.inventory.identity import Identity, identify
from krmfn.runner.plan import Plan, build_plan, check_applyset

if TYPE_CHECKING:
    from krmfn.net.budget import Budget
    from krmfn.runner.cluster.api import Api


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

    def on_signal(signum: int) -> None:
        budget.stop(signum)
        raise KeyboardInterrupt

    with interrupts.handled(on_signal):
        yield


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


class RunContext:
    """One command's run, each part resolved once: ``offline`` for a plan that never connects; else
    ``check_input``, ``connect``, ``settle``, in that order, and ``close`` at the end."""

    def __init__(self, args: argparse.Namespace, docs: list[Any]) -> None:
        self.args, self.docs = args, docs
        self.namespace: str = args.namespace or ""
        """``-n``; once settled (or offline), the kubeconfig context's when ``-n`` is not given."""
        self.identity: Identity | None = None
        self._plan: Plan | None = None
        self.api: Api | None = None

    @property
    def plan(self) -> Plan:
        assert self._plan is not None, "the plan is made by offline() or check_input()"
        return self._plan

    @property
    def inventory(self) -> Identity:
        assert self.identity is not None, "the identity is found by check_input()"
        return self.identity

    def offline(self) -> Plan:
        """``krmfn plan``, ``--dry-run=client``: the context's namespace read without lightkube
        (``kubeconfig_file.context_namespace``), never an error, and the plan for it."""
        from krmfn.runner.cluster.kubeconfig_file import context_namespace

        self.namespace = self.args.namespace or context_namespace(self.args.kubeconfig, self.args.context)
        self._plan = make_plan(self.args, self.docs, self.namespace)
        return self._plan

    def check_input(self) -> None:
        """Every input error before the kubeconfig is read: the plan (its namespace a stand-in until
        ``settle``), the inventory's name, and the plan's objects against that inventory."""
        self._plan = make_plan(self.args, self.docs, self.args.namespace or "default")
        self.identity = identity_of(self.args, self.docs)
        check_applyset(self._plan, self.identity.name, self.args.namespace)

    def connect(self, api_factory: Callable[[argparse.Namespace], Api]) -> Api:
        """The cluster's client: reads the kubeconfig; connects only with the first request."""
        self.api = api_factory(self.args)
        return self.api

    def settle_namespace(self) -> str:
        """``-n``, else the namespace of the kubeconfig's context (read by ``connect``)."""
        assert self.api is not None, "the namespace is settled after connect()"
        self.namespace = self.args.namespace or self.api.default_namespace
        return self.namespace

    def settle(self) -> Plan:
        """After ``connect``: the namespace settled, the plan made again if its stand-in was not it, and
        checked against the inventory in that namespace."""
        stand_in = self.args.namespace or "default"
        namespace = self.settle_namespace()
        if self._plan is None or namespace != stand_in:
            self._plan = make_plan(self.args, self.docs, namespace)
        check_applyset(self._plan, self.inventory.name, namespace)
        return self._plan

    def close(self) -> None:
        close = getattr(self.api, "close", None)
        if close is not None:
            close()
