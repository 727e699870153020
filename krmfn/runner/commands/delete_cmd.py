"""``krmfn delete``: its flags, exit codes and last line; the teardown itself is engine/deleter.py's
(what is deleted, in which order, and how the inventory ends).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from krmfn import interrupts
from krmfn.errors import EXIT_INTERNAL, RunnerError
from krmfn.net.budget import Budget
from krmfn.runner.commands.context import duration
from krmfn.runner.commands.printers import make_printer
from krmfn.runner.engine.deleter import DeleteOptions, Deleter, DeleteResult
from krmfn.runner.errors import InternalError, Interrupted, SourceError
from krmfn.sdk.cliargs import CommandParser
from krmfn.sdk.clihelp import INTERNAL_EXIT_CODE, epilog
from krmfn.terminal import write_line

__all__ = ["DeleteOptions", "DeleteResult", "Deleter", "main", "parser", "result_data", "summary_line"]
"""The teardown's options and result are engine/deleter.py's, imported from here as they always were."""


EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_WENT_ON = 3
EXIT_CODES = (
    ("0", "the app is gone: every member deleted, then its inventory (or members kept by the Namespace and "
          "CRD guards, the inventory narrowed to them); or there was no inventory of that name: nothing "
          "to delete; or --dry-run listed the order"),
    ("1", "the teardown failed: an on-delete step failed (nothing deleted), a step's objects not gone in "
          "time (a finalizer that holds), a refused "
          "delete, the cluster unreachable, the inventory locked or not krmfn's; the inventory still lists "
          "what is left: run again to continue"),
    ("2", "a usage error: no app name (--applyset, or -f/-k with the rendered app), unreadable input, an "
          "app with on-delete steps without its render (-f/-k) or --skip-delete-steps"),
    ("3", "--force: an on-delete step failed and the teardown went on; the app is gone"),
    ("130, 143", "interrupted by SIGINT, SIGTERM: the inventory lists what is left, run again to continue"),
    INTERNAL_EXIT_CODE,
)  # fmt: skip
EXAMPLES = (
    ("what deleting the shop app in prod would delete, in order", "krmfn delete -n prod --applyset shop "
     "--dry-run"),
    ("tear it down, its Namespace too, as JSON events", "krmfn delete -n prod --applyset shop "
     "--prune-namespaces -o json"),
)  # fmt: skip


def parser() -> argparse.ArgumentParser:
    p = CommandParser(
        prog="krmfn delete",
        description="Delete what the app's inventory holds, in reverse step order (the last step first), "
        "each step's objects gone (finalizers honoured, workloads' pods first) before the next, then the "
        "inventory itself. Only the inventory's members; Namespaces and CRDs only with the flags prune "
        "takes; a member annotated krmfn.dev/prune: disabled is left in place. Takes the inventory's lock. "
        "With -f/-k, the render's on-delete steps (set-steps onDelete:) are applied first, each waited for.",
        epilog=epilog(EXIT_CODES, EXAMPLES, "docs/runner.md#krmfn-delete"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--applyset", metavar="NAME",
                   help="the app's inventory (default: as apply finds it in -f/-k: krmfn.dev/app, the "
                   "Kptfile's name)")  # fmt: skip
    src = p.add_mutually_exclusive_group()
    src.add_argument("-f", "--filename", action="append", metavar="FILE|DIR|-",
                     help="the rendered app: its name, and its on-delete steps (krmfn.dev/on-delete), "
                     "applied before the teardown (the teardown's order is the one the members were "
                     "applied with)")  # fmt: skip
    src.add_argument("-k", "--kustomize", metavar="DIR", help="a kustomization of the rendered app, as -f")
    p.add_argument("--skip-delete-steps", action="store_true",
                   help="tear down without running the app's on-delete steps (refused otherwise when the "
                   "app has some and no render is given)")  # fmt: skip
    p.add_argument("--force", action="store_true",
                   help="go on with the teardown when an on-delete step fails (exit 3)")  # fmt: skip
    p.add_argument("--follow", action="store_true",
                   help="while an on-delete step waits, print the log lines of its Job pods as they are "
                   "written (-o json: log events), as apply --follow")  # fmt: skip
    p.add_argument("--enable-alpha-plugins", action="store_true", help="-k: as for apply")
    p.add_argument("--enable-exec", action="store_true", help="-k: as for apply")
    p.add_argument("-n", "--namespace", help="the inventory's namespace (default: the kubeconfig context's)")
    p.add_argument("--dry-run", action="store_true",
                   help="list what would be deleted, in order (the on-delete steps first, as a server dry "
                   "run); deletes nothing, takes no lock")  # fmt: skip
    p.add_argument(
        "--prune-namespaces",
        action="store_true",
        help="also delete the Namespaces the inventory lists (deletes everything in them)",
    )
    p.add_argument(
        "--prune-crds",
        action="store_true",
        help="also delete the CRDs the inventory lists (deletes their custom resources)",
    )
    p.add_argument("--step-timeout", type=duration, default=300.0, metavar="DURATION",
                   help="how long one step's objects may take to be gone, and an on-delete step without "
                   "its own krmfn.dev/step-timeout to be healthy (default 5m)")  # fmt: skip
    p.add_argument("--timeout", type=duration, default=0.0, metavar="DURATION",
                   help="bound the whole teardown, lock wait included (default: none)")  # fmt: skip
    p.add_argument("--wait-for-lock", type=duration, default=0.0, metavar="DURATION",
                   help="wait this long for another run on the same inventory to finish "
                   "(default: fail at once)")  # fmt: skip
    p.add_argument("-o", "--output", choices=["text", "json"], default="text",
                   help="text: a live view on a terminal, plain lines otherwise; json: one event per line, "
                   "then a result line (docs/runner.md#krmfn-delete)")  # fmt: skip
    p.add_argument("--field-manager", default="krmfn", help="field manager of the inventory's writes")
    p.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config)")
    p.add_argument("--context", help="kubeconfig context (default: its current-context)")
    p.add_argument("--retry-timeout", type=duration, default=30.0, metavar="DURATION",
                   help="how long one request retries connection errors, 429 and 5xx answers "
                   "(default 30s)")  # fmt: skip
    return p


def summary_line(result: DeleteResult, options: DeleteOptions) -> str:
    where = f"{options.namespace}/{options.name}"
    took = f" in {result.elapsed:.1f}s"
    if result.absent:
        return (
            f"nothing to delete: namespace {options.namespace} has no inventory Secret {options.name} (never "
            "applied here, or deleted already)"
        )
    kept = f", {len(result.kept)} kept" if result.kept else ""
    teardown_steps = result.steps_done - len(result.on_delete)
    if result.on_delete:
        kept += f", after {len(result.on_delete)} on-delete step(s)"
    if not result.ok:
        return f"failed: {result.error}; {len(result.deleted)} object(s) deleted before{took}"
    if result.went_on:
        kept += f"; {result.went_on}"
    if options.dry_run:
        then = "keep" if result.inventory == "kept" else "delete"
        return (
            f"dry run: would delete {len(result.deleted)} object(s) in {teardown_steps} step(s){kept}, "
            f"then {then} the inventory {where}; nothing was deleted"
        )
    if result.inventory == "kept":
        return (
            f"deleted {len(result.deleted)} object(s) in {teardown_steps} step(s){kept}; the inventory "
            f"{where} stays, listing what was kept{took}"
        )
    count = f"{len(result.deleted)} object(s) in {teardown_steps} step(s){kept}"
    return f"deleted {count}, then the inventory {where}{took}"


def result_data(result: DeleteResult, options: DeleteOptions) -> dict[str, Any]:
    inventory = "absent" if result.absent else result.inventory or None
    return {
        "type": "result", "ok": result.ok, "dryRun": options.dry_run,
        "failedStep": result.failed_step_index, "failedStepName": result.failed_step,
        "error": str(result.error) if result.error else None, "steps": result.steps_done,
        "deleted": result.deleted, "kept": result.kept, "inventory": inventory,
        "onDelete": [{"stepName": name, "result": outcome} for name, outcome in result.on_delete],
        "wentOn": result.went_on, "elapsed": round(result.elapsed, 3),
    }  # fmt: skip


def exit_code(result: DeleteResult) -> int:
    if result.ok:
        return EXIT_WENT_ON if result.went_on else 0
    if isinstance(result.error, SourceError):
        return EXIT_USAGE  # an app with on-delete steps and no render
    if isinstance(result.error, Interrupted):
        return 128 + result.error.signum
    if isinstance(result.error, InternalError):
        return EXIT_INTERNAL
    return EXIT_FAILED


def _fail(err: RunnerError | str) -> None:
    write_line(sys.stderr, f"krmfn delete: {err}")


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv[1:])
    from krmfn.runner.commands.delete_input import on_delete_steps, read_render

    try:
        name, docs = read_render(args)
        on_delete_steps(docs, name, args.namespace or "default", args.step_timeout)  # input errors first
    except RunnerError as err:
        _fail(err)
        return EXIT_USAGE
    from krmfn.runner.cluster.kube import connect

    budget = Budget()
    printer = make_printer(args.output, sys.stdout)
    try:
        api = connect(args.kubeconfig, args.context, retry_budget=args.retry_timeout, budget=budget)
    except RunnerError as err:
        _fail(err)
        printer.close()
        return EXIT_FAILED
    options = DeleteOptions(
        name=name, namespace=args.namespace or api.default_namespace, dry_run=args.dry_run,
        prune_namespaces=args.prune_namespaces, prune_crds=args.prune_crds, step_timeout=args.step_timeout,
        timeout=args.timeout, lock_wait=args.wait_for_lock, field_manager=args.field_manager,
        skip_delete_steps=args.skip_delete_steps, force=args.force, follow=args.follow,
    )  # fmt: skip
    try:
        options.on_delete = on_delete_steps(docs, name, options.namespace, args.step_timeout)
    except RunnerError as err:
        _fail(err)
        printer.close()
        return EXIT_USAGE
    deleter = Deleter(api, options, printer, budget=budget)

    try:
        with interrupts.handled(deleter.request_stop):
            result = deleter.run()
    finally:
        printer.close()
        api.close()
    if args.output == "json":
        sys.stdout.write(json.dumps(result_data(result, options), separators=(",", ":")) + "\n")
    else:
        write_line(sys.stdout, summary_line(result, options))
    sys.stdout.flush()
    return exit_code(result)
