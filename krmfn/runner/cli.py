"""``krmfn plan`` and ``krmfn apply``: flags, input, signals and exit codes around the engine.

The engine and the HTTP client (lightkube, httpx) are imported only when a run connects: ``krmfn plan``
and ``--dry-run=client`` never need them, and input errors are reported before they load.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from krmfn.duration import SECOND, parse_duration
from krmfn.errors import RunnerError
from krmfn.runner.errors import Interrupted, SourceError
from krmfn.runner.events import Error
from krmfn.runner.plan import Plan, build_plan, check_applyset
from krmfn.runner.printers import format_plan, make_printer, plan_data
from krmfn.runner.source import kustomize_build, read_files
from krmfn.terminal import safe_line

if TYPE_CHECKING:
    from krmfn.runner.api import Api
    from krmfn.runner.engine import Result

EXIT_FAILED = 1
EXIT_USAGE = 2

ApiFactory = Callable[[argparse.Namespace], "Api"]
SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def _duration(text: str) -> float:
    try:
        nanos = parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    if nanos <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return nanos / SECOND


def parser(command: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"krmfn {command}",
        description=(
            "Print the steps `krmfn apply` would run."
            if command == "plan"
            else "Apply a rendered stream step by step: server-side apply, wait for health, record an "
            "ApplySet inventory, prune what is no longer rendered."
        ),
    )
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("-f", "--filename", action="append", metavar="FILE|DIR|-", help="manifests to apply")
    src.add_argument("-k", "--kustomize", metavar="DIR", help="run kustomize build DIR")
    p.add_argument("--enable-alpha-plugins", action="store_true",
                   help="-k: let kustomize run plugins and container functions (off by default)")  # fmt: skip
    p.add_argument("--enable-exec", action="store_true",
                   help="-k: let kustomize run exec functions, binaries the kustomizations name "
                   "(off by default; implies --enable-alpha-plugins)")  # fmt: skip
    p.add_argument(
        "-n", "--namespace", help="namespace for namespaced objects without one, and the inventory"
    )
    p.add_argument("--timeout", type=_duration, default=300.0, metavar="DURATION",
                   help="step timeout when krmfn.dev/step-timeout is absent (default 5m)")  # fmt: skip
    p.add_argument("--wait", action=argparse.BooleanOptionalAction, default=None,
                   help="wait for the final step's health (default: krmfn.dev/wait)")  # fmt: skip
    p.add_argument("-o", "--output", choices=["text", "json"], default="text")
    p.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config)")
    p.add_argument("--context", help="kubeconfig context")
    p.add_argument("--retry-timeout", type=_duration, default=30.0, metavar="DURATION",
                   help="how long to retry connection errors, 429 and 5xx answers (default 30s)")  # fmt: skip
    if command == "apply":
        p.add_argument("--dry-run", choices=["none", "client", "server"], default="none", nargs="?",
                       const="client", help="client: print the plan; server: validate all")  # fmt: skip
        p.add_argument("--field-manager", default="krmfn", help="server-side apply field manager")
        p.add_argument("--force-conflicts", action="store_true", help="take over fields owned by others")
        p.add_argument("--applyset", default="krmfn", metavar="NAME",
                       help="name of the ApplySet parent Secret (in --namespace)")  # fmt: skip
        p.add_argument("--prune", action=argparse.BooleanOptionalAction, default=True,
                       help="delete members of the ApplySet that are no longer rendered")  # fmt: skip
        p.add_argument("--wait-for-lock", type=_duration, default=0.0, metavar="DURATION",
                       help="wait this long for another run on the same ApplySet to finish "
                       "(default: fail at once)")  # fmt: skip
    return p


def _api_from_args(args: argparse.Namespace) -> Api:
    from krmfn.runner.kube import connect

    return connect(args.kubeconfig, args.context, retry_budget=args.retry_timeout)


def _fail(command: str, err: RunnerError | str) -> None:
    """The one line on stderr for an error that ends the command (escaped: it may quote the input)."""
    sys.stderr.write(safe_line(f"krmfn {command}: {err}") + "\n")


def main(argv: list[str], api_factory: ApiFactory = _api_from_args) -> int:
    command, rest = argv[0], argv[1:]
    if command not in ("plan", "apply"):
        sys.stderr.write(safe_line(f"krmfn: unknown runner command {command!r}") + "\n")
        return EXIT_USAGE
    args = parser(command).parse_args(rest)
    try:
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
    if command == "plan" or args.dry_run == "client":
        return _plan(args, docs)
    return _apply(args, docs, api_factory)


def _make_plan(args: argparse.Namespace, docs: list[Any], namespace: str) -> Plan:
    return build_plan(docs, namespace=namespace, default_timeout=args.timeout, wait=args.wait)


def _plan(args: argparse.Namespace, docs: list[Any]) -> int:
    namespace = args.namespace or _kubeconfig_namespace(args)
    try:
        plan = _make_plan(args, docs, namespace)
    except RunnerError as err:
        _fail("plan", err)
        return EXIT_USAGE
    if args.output == "json":
        import json

        sys.stdout.write(json.dumps(plan_data(plan)) + "\n")
    else:
        sys.stdout.write(format_plan(plan))
    return 0


def _kubeconfig_namespace(args: argparse.Namespace) -> str:
    """The context's namespace when a kubeconfig is readable, else "default": a plan never needs the
    cluster, so it reads this one field itself (kube.load_config's lookup order) without lightkube."""
    from krmfn.errors import InputError
    from krmfn.yamlio import load_all_fast

    path = args.kubeconfig or next((p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p), "")
    file = Path(path) if path else Path.home() / ".kube" / "config"
    try:
        config = next(iter(load_all_fast(file.read_text())), None)
    except FileNotFoundError:
        try:
            return SERVICE_ACCOUNT_NAMESPACE.read_text().strip() or "default"
        except OSError:
            return "default"
    except (OSError, UnicodeDecodeError, InputError):
        return "default"
    if not isinstance(config, dict):
        return "default"
    name = args.context or config.get("current-context")
    for entry in config.get("contexts") or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            namespace = (entry.get("context") or {}).get("namespace")
            return str(namespace) if namespace else "default"
    return "default"


def _apply(args: argparse.Namespace, docs: list[Any], api_factory: ApiFactory) -> int:
    from krmfn.runner.engine import Options, Result, Runner

    try:
        # Input errors before the kubeconfig is read; the plan is made again with its namespace.
        plan = _make_plan(args, docs, args.namespace or "default")
        check_applyset(plan, args.applyset, args.namespace)
    except RunnerError as err:
        _fail("apply", err)
        return EXIT_USAGE
    printer = make_printer(args.output, sys.stdout)
    try:
        api = api_factory(args)  # reads the kubeconfig; connects only with the first request
    except RunnerError as err:
        _fail("apply", err)
        if args.output == "json":  # the events -o json documents, for a run that never started
            printer(Error(message=str(err)))
            printer.summary(Result(ok=False, error=err))
        printer.close()
        return EXIT_FAILED
    namespace = args.namespace or api.default_namespace
    try:
        plan = _make_plan(args, docs, namespace)
        check_applyset(plan, args.applyset, namespace)
    except RunnerError as err:
        _fail("apply", err)
        printer.close()
        close = getattr(api, "close", None)
        if close is not None:
            close()
        return EXIT_USAGE

    options = Options(
        field_manager=args.field_manager,
        force_conflicts=args.force_conflicts,
        dry_run=args.dry_run == "server",
        applyset=args.applyset,
        namespace=namespace,
        prune=args.prune,
        lock_wait=args.wait_for_lock,
    )
    runner = Runner(api, options, printer)

    def on_signal(signum: int, frame: FrameType | None) -> None:
        runner.request_stop(signum)

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        result = runner.run(plan)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        printer.close()
        close = getattr(api, "close", None)
        if close is not None:
            close()
    printer.summary(result)
    return exit_code(result)


def exit_code(result: Result) -> int:
    if result.ok:
        return 0
    if isinstance(result.error, Interrupted):
        return 128 + result.error.signum
    return EXIT_FAILED
