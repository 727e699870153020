"""``krmfn``: one entry point for the functions (``krmfn fn NAME``), rendering and the runner.

Subcommands import their modules lazily so ``krmfn fn`` starts as fast as a console script.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from krmfn.errors import DEBUG_ENV, EXIT_INTERNAL, internal_error
from krmfn.sdk.clihelp import INTERNAL_EXIT_CODE

USAGE = """usage: krmfn <command> [args]

commands:
  fn NAME        run one function on a ResourceList or a stream of objects from stdin (NAME: {names})
  render DIR     run DIR's Kptfile pipeline in-process and print the rendered stream
  plan           print the steps `krmfn apply` would run
  apply          apply a rendered stream step by step, wait for health, prune
  diff           show what the next apply would change, as a unified diff or JSON Patch
  delete         delete what the inventory holds in reverse step order, then the inventory
  status         show the last runs and the live health of what the inventory holds
  export         write the steps for the Flux Operator, Argo CD or kpt live
  version        print the version

Run `krmfn <command> --help` for a command's flags.
"""
EXIT_CODES = (
    ("0", "the command succeeded"),
    ("1", "it failed (a function error, a failed apply); the command's --help says more"),
    ("2", "a usage error: unknown command or flag"),
    INTERNAL_EXIT_CODE,
)
EXAMPLES = (
    ("render a kpt package in-process and print the stream", "krmfn render examples/staged-deploy"),
    ("apply a kustomize overlay step by step, its inventory named shop",
     "krmfn apply -k overlays/prod --enable-exec -n prod --applyset shop"),
)  # fmt: skip


def entry() -> NoReturn:
    """The ``krmfn`` console script: ``main`` then an immediate exit (see krmfn.shutdown)."""
    from krmfn.shutdown import exit_now

    exit_now(main())


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] in (["apply"], ["delete"]) and argv is None:  # the console script: signals before the run
        from krmfn import interrupts

        interrupts.record()
    # The function registry imports every function (~0.15 s): only the help and `fn` need it.
    if not args or args[0] in ("-h", "--help"):
        from krmfn.registry import CANONICAL_ORDER
        from krmfn.sdk.clihelp import epilog

        sys.stdout.write(
            USAGE.format(names=", ".join(CANONICAL_ORDER)) + "\n" + epilog(EXIT_CODES, EXAMPLES, "README.md")
        )
        return 0 if args else 2
    command, rest = args[0], args[1:]
    if command == "fn":
        return _fn(rest)
    if command == "version":
        from krmfn import __version__
        from krmfn.terminal import write_line

        write_line(sys.stdout, f"krmfn {__version__}")
        return 0
    module = {
        "render": "krmfn.render",
        "plan": "krmfn.runner.commands.cli",
        "apply": "krmfn.runner.commands.cli",
        "diff": "krmfn.runner.commands.cli",
        "delete": "krmfn.runner.commands.delete_cmd",
        "status": "krmfn.runner.commands.status_cmd",
        "export": "krmfn.export",
    }.get(command)
    if module is None:
        from krmfn.registry import CANONICAL_ORDER
        from krmfn.terminal import write_line

        write_line(sys.stderr, f"krmfn: unknown command {command!r}")
        sys.stderr.write(USAGE.format(names=", ".join(CANONICAL_ORDER)))
        return 2
    import importlib

    try:
        entry = importlib.import_module(module)
    except ModuleNotFoundError as err:
        from krmfn.terminal import write_line

        write_line(sys.stderr, f"krmfn: {command} is not available in this installation ({err.name} missing)")
        return 2
    try:
        code: int = entry.main([command, *rest])
    except Exception as err:  # a bug: one line, and an exit code that no answer of the command shares
        if os.environ.get(DEBUG_ENV):
            raise
        from krmfn.terminal import write_line

        write_line(sys.stderr, f"krmfn {command}: {internal_error(err)}")
        return EXIT_INTERNAL
    return code


def _fn(args: list[str]) -> int:
    from krmfn.registry import CANONICAL_ORDER, load

    if not args or args[0] in ("-h", "--help"):
        from krmfn.sdk.clihelp import FUNCTION_EXIT_CODES, epilog

        sys.stdout.write(
            "usage: krmfn fn NAME [--yaml fast|fidelity] [--fn-config FILE] [FILE...] < input.yaml\n"
            f"NAME: {', '.join(CANONICAL_ORDER)}\n\n"
            "Runs one function, as its console script krmfn-NAME does; `krmfn fn NAME --help` lists its\n"
            "config fields.\n\n"
            "  --yaml MODE        fidelity (the default: only changes rewritten) or fast (for debugging)\n"
            "  --fn-config FILE   the functionConfig (typed object or ConfigMap), replacing the input's\n"
            "  -h, --help         print this help\n\n"
            + epilog(
                FUNCTION_EXIT_CODES,
                (
                    ("set step annotations on a kustomize build", "kustomize build . | krmfn fn set-steps "
                     "--fn-config steps.yaml"),
                    ("a function's config fields", "krmfn fn set-image --help"),
                ),
                "README.md#using-a-function",
            )
        )  # fmt: skip
        return 0 if args else 2
    try:
        function = load(args[0])
    except KeyError:
        from krmfn.terminal import write_line

        write_line(sys.stderr, f"krmfn: unknown function {args[0]!r}; known: {', '.join(CANONICAL_ORDER)}")
        return 2
    return function.main(args[1:])


if __name__ == "__main__":
    entry()
