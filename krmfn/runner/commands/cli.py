"""``krmfn plan`` and ``krmfn apply``: flags, input, signals and exit codes around the engine.

The engine and the cluster client (lightkube for the kubeconfig, krmfn.net for HTTP) are imported only
when a run connects: ``krmfn plan`` and ``--dry-run=client`` never need them, and input errors are
reported before they load.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from krmfn import interrupts
from krmfn.errors import EXIT_INTERNAL, RunnerError
from krmfn.numbers import whole
from krmfn.runner.commands.context import RunContext, duration
from krmfn.runner.commands.printers import make_printer, plan_data, plan_lines
from krmfn.runner.engine.joblogs import DEFAULT_LINES
from krmfn.runner.engine.parallel import DEFAULT_CONCURRENCY
from krmfn.runner.errors import InternalError, Interrupted, SourceError
from krmfn.runner.events import Error
from krmfn.runner.plan import check_applyset
from krmfn.runner.source import kustomize_build, read_files
from krmfn.sdk.cliargs import CommandParser
from krmfn.sdk.clihelp import INTERNAL_EXIT_CODE, epilog
from krmfn.terminal import cut, write_line, write_lines

if TYPE_CHECKING:
    from krmfn.runner.cluster.api import Api
    from krmfn.runner.engine.engine import Result
    from krmfn.runner.health.healthexprs import HealthChecks

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_WENT_ON = 3
"""Every step done but one or more timed out with ``onTimeout: continue``: neither success nor failure."""

ApiFactory = Callable[[argparse.Namespace], "Api"]


MAX_LOG_LINES = 1000


def _log_lines(text: str) -> int:
    value = whole(text, MAX_LOG_LINES)
    if value is None:
        raise argparse.ArgumentTypeError(
            f"must be a whole number from 0 to {MAX_LOG_LINES}: {cut(text, 40)!r}"
        )
    return value


MAX_CONCURRENCY = 64


def _concurrency(text: str) -> int:
    value = whole(text, MAX_CONCURRENCY, low=1)
    if value is None:
        raise argparse.ArgumentTypeError(
            f"must be a whole number from 1 to {MAX_CONCURRENCY}: {cut(text, 40)!r}"
        )
    return value


EXIT_CODES = {
    "plan": (("0", "the plan was printed"), ("2", "a usage or input error (unreadable file, bad "
                                                   "annotation, a layout that would hang, no objects)"),
             INTERNAL_EXIT_CODE),
    "apply": (
        ("0", "every step healthy (or applied, for a final step that does not wait), prune done"),
        ("1", "the run failed: an object refused or failed, a timeout, the cluster unreachable, the "
              "inventory locked, another app's, or not krmfn's"),
        ("2", "a usage or input error, before any connection (no inventory name while pruning, no "
              "objects without --allow-empty)"),
        ("3", "the run went on past a step that timed out with onTimeout: continue (krmfn.dev/on-timeout); "
              "every other step healthy, prune done"),
        ("130, 143", "interrupted by SIGINT, SIGTERM: nothing pruned, run again to continue"),
        INTERNAL_EXIT_CODE,
    ),
    "diff": (
        ("0", "the next apply would change nothing"),
        ("1", "it would change something (shown), or the namespace has no inventory of that name"),
        ("2", "an error: bad input, the cluster unreachable, an object the server refuses (named), "
              "another tool's or app's inventory, KRMFN_DIFF failed"),
        ("130, 143", "interrupted by SIGINT, SIGTERM; nothing was written"),
        INTERNAL_EXIT_CODE,
    ),
}  # fmt: skip
EXAMPLES = {
    "plan": (
        ("the steps of a rendered kpt package, in apply order", "krmfn plan -f rendered.yaml"),
        ("the steps of a kustomize overlay, as JSON", "krmfn plan -k overlays/prod --enable-exec -o json"),
    ),
    "apply": (
        ("render a kustomize overlay and apply it into prod, its inventory named shop",
         "krmfn apply -k overlays/prod --enable-exec -n prod --applyset shop"),
        ("a CI run: the inventory name from set-steps' app:, the whole run bounded, JSON events",
         "kustomize build . | krmfn-render --fn-config render.yaml | krmfn apply -f - -n prod --timeout 15m "
         "-o json"),
    ),
    "diff": (
        ("what the next apply of a kustomize overlay would change, as a unified diff",
         "krmfn diff -k overlays/prod --enable-exec -n prod --applyset shop"),
        ("the changes as JSON Patch events, shown with another program otherwise",
         "krmfn diff -f rendered.yaml -n prod -o json; KRMFN_DIFF='diff -u -r' krmfn diff -f rendered.yaml "
         "-n prod"),
    ),
}  # fmt: skip


PAGES = {"diff": "docs/runner.md#krmfn-diff"}
DESCRIPTIONS = {
    "plan": "Print the steps `krmfn apply` would run, without connecting to a cluster.",
    "apply": "Apply a rendered stream step by step: server-side apply, wait for health, record an ApplySet "
    "inventory named after the app, prune what is no longer rendered.",
    "diff": "Show what `krmfn apply` with the same input and flags would change: per step, a server-side "
    "dry run (dryRun=All, the same field manager) of every object compared with the live object, as a "
    "unified diff per object (managed fields, status and server-set metadata left out, Secret values "
    "masked), and the members the next apply would prune as deletions. Writes nothing, takes no lock. "
    "KRMFN_DIFF names another program to compare the two sides (it gets two directories, as with "
    "KUBECTL_EXTERNAL_DIFF); colour on a terminal only (NO_COLOR turns it off).",
}


def parser(command: str) -> argparse.ArgumentParser:
    p = CommandParser(
        prog=f"krmfn {command}",
        description=DESCRIPTIONS[command],
        epilog=epilog(EXIT_CODES[command], EXAMPLES[command], PAGES.get(command, "docs/runner.md")),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.set_defaults(command=command)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("-f", "--filename", action="append", metavar="FILE|DIR|-",
                     help="rendered manifests; repeatable; a directory gives its .yaml, .yml and .json files "
                     "(recursively, hidden paths left out); - is stdin")  # fmt: skip
    src.add_argument("-k", "--kustomize", metavar="DIR",
                     help="run kustomize build DIR (plugins, exec functions: flags below)")  # fmt: skip
    p.add_argument("--enable-alpha-plugins", action="store_true",
                   help="-k: let kustomize run plugins and container functions (off by default)")  # fmt: skip
    p.add_argument("--enable-exec", action="store_true",
                   help="-k: let kustomize run exec functions, binaries the kustomizations name "
                   "(off by default; implies --enable-alpha-plugins)")  # fmt: skip
    p.add_argument("-n", "--namespace",
                   help="namespace of namespaced objects without one, and of the inventory (default: the "
                   "kubeconfig context's)")  # fmt: skip
    p.add_argument("--allow-empty", action="store_true",
                   help="accept an input without objects (refused by default: a failed render gives one)"
                   + ("; with prune, every member of the inventory is deleted" if command in ("apply", "diff")
                      else ""))  # fmt: skip
    p.add_argument("--step-timeout", type=duration, default=300.0, metavar="DURATION",
                   help="timeout of a step none of whose objects has krmfn.dev/step-timeout "
                   "(default 5m)")  # fmt: skip
    if command == "apply":
        p.add_argument("--timeout", type=duration, default=0.0, metavar="DURATION",
                       help="bound the whole run, lock wait and prune included, every request in flight "
                       "too (default: none; each step keeps its own timeout within it)")  # fmt: skip
    if command == "diff":
        p.add_argument("--timeout", type=duration, default=0.0, metavar="DURATION",
                       help="bound the whole diff, every request in flight included (default: "
                       "none)")  # fmt: skip
    if command in ("plan", "apply"):
        p.add_argument("--health-checks", metavar="FILE",
                       help="CEL health checks for custom resources, Flux's healthCheckExprs: a list of "
                       "{apiVersion, kind, current, inProgress, failed}, or a document with "
                       "healthCheckExprs: (docs/runner.md#health-checks-in-cel)")  # fmt: skip
    p.add_argument("--wait", action=argparse.BooleanOptionalAction, default=None,
                   help="wait for the final step's health (default: its krmfn.dev/wait)")  # fmt: skip
    p.add_argument("-o", "--output", choices=["text", "json"], default="text",
                   help="text: a unified diff per changed object; json: one event per object with its "
                   "change as a JSON Patch, then a result line (docs/runner.md#krmfn-diff)"
                   if command == "diff" else "text: a live view on a terminal, plain lines otherwise; "
                   "json: one event per line, then a result line (docs/runner.md#output)")  # fmt: skip
    p.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config)")
    p.add_argument("--context", help="kubeconfig context (default: its current-context)")
    if command in ("apply", "diff"):
        p.add_argument("--retry-timeout", type=duration, default=30.0, metavar="DURATION",
                       help="how long one request retries connection errors, 429 and 5xx answers "
                       "(default 30s)")  # fmt: skip
    if command == "apply":
        p.add_argument("--dry-run", choices=["none", "client", "server"], default="none", nargs="?",
                       const="client", help="client (or bare --dry-run): print the plan; server: send "
                       "every request with dryRun=All and report what would change")  # fmt: skip
    if command in ("apply", "diff"):
        p.add_argument("--field-manager", default="krmfn", help="server-side apply field manager")
        p.add_argument("--force-conflicts", action="store_true",
                       help="take over fields another field manager owns")  # fmt: skip
        p.add_argument("--applyset", default=None, metavar="NAME",
                       help="the app's inventory: the ApplySet parent Secret NAME in --namespace "
                       "(default: krmfn.dev/app on the objects, else the Kptfile's name; required to "
                       "prune)")  # fmt: skip
        p.add_argument("--prune", action=argparse.BooleanOptionalAction, default=True,
                       help="delete members of the inventory that are no longer rendered")  # fmt: skip
        p.add_argument("--adopt", action="store_true",
                       help="take over an inventory that holds none of this render's objects (another "
                       "app's, or this app renamed): its objects are pruned")  # fmt: skip
        p.add_argument("--prune-namespaces", action="store_true",
                       help="also prune Namespaces no longer rendered (deletes everything in "
                       "them)")  # fmt: skip
        p.add_argument("--prune-crds", action="store_true",
                       help="also prune CustomResourceDefinitions no longer rendered (deletes their custom "
                       "resources)")  # fmt: skip
    if command == "plan":
        # Accepted as apply takes it, so one command line serves both; checked as apply checks it.
        p.add_argument("--applyset", default=None, metavar="NAME",
                       help="the inventory apply would use: checked as apply checks it (a valid Secret "
                       "name no rendered object takes)")  # fmt: skip
    if command == "apply":
        p.add_argument("--concurrency", type=_concurrency, default=DEFAULT_CONCURRENCY, metavar="N",
                       help="apply requests in flight within a step, per group of one kind (Namespaces and "
                       f"CRDs first, Jobs one at a time and last); 1: one at a time (default "
                       f"{DEFAULT_CONCURRENCY})")  # fmt: skip
        p.add_argument("--log-lines", type=_log_lines, default=DEFAULT_LINES, metavar="N",
                       help="last log lines of each failed container of a failed Job, in the error and "
                       f"the status event (default {DEFAULT_LINES}; 0: none)")  # fmt: skip
        p.add_argument("--follow", action="store_true",
                       help="while a step waits, print the log lines of its Job pods as they are written "
                       "(prefixed with the Job, pod and container; -o json: log events)")  # fmt: skip
        p.add_argument("--wait-for-lock", type=duration, default=0.0, metavar="DURATION",
                       help="wait this long for another run on the same inventory to finish "
                       "(default: fail at once)")  # fmt: skip
    return p


def _api_from_args(args: argparse.Namespace) -> Api:
    """The cluster of the kubeconfig; its requests honour ``args.budget`` (the command's deadline and
    signals), which the command sets before it connects."""
    from krmfn.runner.cluster.kube import connect

    budget = getattr(args, "budget", None)
    return connect(args.kubeconfig, args.context, retry_budget=args.retry_timeout, budget=budget)


def _fail(command: str, err: RunnerError | str) -> None:
    """The one line on stderr for an error that ends the command (escaped: it may quote the input)."""
    write_line(sys.stderr, f"krmfn {command}: {err}")


def main(argv: list[str], api_factory: ApiFactory = _api_from_args) -> int:
    command, rest = argv[0], argv[1:]
    if command not in ("plan", "apply", "diff"):
        write_line(sys.stderr, f"krmfn: unknown runner command {command!r}")
        return EXIT_USAGE
    args = parser(command).parse_args(rest)
    try:
        readers = (args.filename or []).count("-") + (getattr(args, "health_checks", None) == "-")
        if readers > 1:
            # The second reader would find stdin empty and report a confusing "found 0 documents".
            raise SourceError(
                "standard input can be read only once: pass - to one of -f and --health-checks, "
                "the other a file"
            )
        if args.kustomize:
            docs = kustomize_build(
                args.kustomize, alpha_plugins=args.enable_alpha_plugins or args.enable_exec,
                enable_exec=args.enable_exec,
            )  # fmt: skip
        else:
            if args.enable_alpha_plugins or args.enable_exec:
                raise SourceError("--enable-alpha-plugins and --enable-exec apply to -k only")
            docs = read_files(args.filename)
    except RunnerError as err:
        _fail(command, err)
        return EXIT_USAGE
    if command == "diff":
        from krmfn.runner.commands import diff_cmd

        return diff_cmd.run(args, docs, api_factory)
    if command == "plan" or args.dry_run == "client":
        return _plan(args, docs)
    return _apply(args, docs, api_factory)


def _health_checks(args: argparse.Namespace, docs: list[Any]) -> HealthChecks:
    """Every health check expression compiled, before any connection (an input error otherwise)."""
    from krmfn.runner.health.healthexprs import load

    return load(args.health_checks, docs)


def _plan(args: argparse.Namespace, docs: list[Any]) -> int:
    try:
        context = RunContext(args, docs)
        plan = context.offline()
        if args.command == "plan" and args.applyset is not None:
            check_applyset(plan, args.applyset, context.namespace)
        _health_checks(args, docs)
    except RunnerError as err:
        _fail("plan", err)
        return EXIT_USAGE
    if args.output == "json":
        import json

        sys.stdout.write(json.dumps(plan_data(plan)) + "\n")
    else:
        write_lines(sys.stdout, plan_lines(plan))
    return 0


def _apply(args: argparse.Namespace, docs: list[Any], api_factory: ApiFactory) -> int:
    from krmfn.net.budget import Budget
    from krmfn.runner.engine.engine import Options, Result, Runner

    run = RunContext(args, docs)
    try:
        run.check_input()  # input errors before the kubeconfig is read
        health_checks = _health_checks(args, docs)
    except RunnerError as err:
        _fail("apply", err)
        return EXIT_USAGE
    printer = make_printer(args.output, sys.stdout, dry_run=args.dry_run == "server")
    args.budget = budget = Budget()  # the run's deadline starts with the run (Runner.run)
    try:
        api = run.connect(api_factory)
    except RunnerError as err:
        _fail("apply", err)
        if args.output == "json":  # the events -o json documents, for a run that never started
            printer(Error(message=str(err)))
            printer.summary(Result(ok=False, error=err))
        printer.close()
        return EXIT_FAILED
    try:
        plan = run.settle()
    except RunnerError as err:
        _fail("apply", err)
        printer.close()
        run.close()
        return EXIT_USAGE
    identity = run.inventory

    options = Options(
        field_manager=args.field_manager,
        force_conflicts=args.force_conflicts,
        dry_run=args.dry_run == "server",
        applyset=identity.name,
        applyset_source=identity.source,
        adopt=args.adopt,
        allow_empty=args.allow_empty,
        prune_namespaces=args.prune_namespaces,
        prune_crds=args.prune_crds,
        namespace=run.namespace,
        prune=args.prune,
        lock_wait=args.wait_for_lock,
        timeout=args.timeout,
        log_lines=args.log_lines,
        health_checks=health_checks,
        concurrency=args.concurrency,
        follow=args.follow,
    )
    runner = Runner(api, options, printer, budget=budget)

    try:
        with interrupts.handled(runner.request_stop):  # received while starting: stop before a request
            result = runner.run(plan)
    finally:
        printer.close()
        run.close()
    printer.summary(result)
    return exit_code(result)


def exit_code(result: Result) -> int:
    if result.ok:
        return EXIT_WENT_ON if result.timed_out else 0
    if isinstance(result.error, Interrupted):
        return 128 + result.error.signum
    if isinstance(result.error, InternalError):
        return EXIT_INTERNAL
    return EXIT_FAILED
