"""``krmfn export``: hand the steps of a rendered stream to another engine.

    krmfn export resourceset -f rendered.yaml --name NAME -n NS   one Flux Operator ResourceSet
    krmfn export argocd -f rendered.yaml [--hooks]               the stream with Argo CD sync waves

The steps are read from the annotations set-steps writes, grouped by the code ``krmfn apply`` uses
(krmfn.k8s.step_grouping). For kpt live apply no export is needed: set-steps ``emit: [depends-on]`` writes the
``config.kubernetes.io/depends-on`` annotations it reads. See docs/engines.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from krmfn.errors import KrmfnError
from krmfn.export import argocd, resourceset
from krmfn.export.steps import group
from krmfn.export.stream import read_sources
from krmfn.k8s.jobspec import ttl_warning
from krmfn.k8s.kobj import ref_of
from krmfn.sdk.cliargs import CommandParser
from krmfn.sdk.clihelp import INTERNAL_EXIT_CODE, epilog
from krmfn.terminal import write_line
from krmfn.yaml.io import dump_all_fast, dump_fast

__all__ = ["main"]


EXIT_CODES = (
    ("0", "written"),
    ("1", "the stream cannot be exported (unreadable, bad step annotations, an engine's limit)"),
    ("2", "a usage error (unknown engine or flag, a missing required flag)"),
    INTERNAL_EXIT_CODE,
)
EXAMPLES = {
    "": (
        ("a Flux Operator ResourceSet of a rendered package", "krmfn export resourceset -f rendered.yaml "
         "--name shop -n flux-system"),
        ("the stream with Argo CD sync waves and hooks", "krmfn export argocd -f rendered.yaml --hooks"),
    ),
    "resourceset": (
        ("one ResourceSet, into a file", "krmfn export resourceset -f rendered.yaml --name shop -n apps "
         "-o resourceset.yaml"),
        ("from a kustomize build, impersonating a service account", "kustomize build . | krmfn export "
         "resourceset -f - --name shop -n apps --service-account deployer"),
    ),
    "argocd": (
        ("sync waves from the step indexes", "krmfn export argocd -f rendered.yaml -o app/manifests.yaml"),
        ("first-step Jobs as PreSync hooks, last-step Jobs as PostSync", "krmfn export argocd -f "
         "rendered.yaml --hooks"),
    ),
}  # fmt: skip


def _epilog(engine: str) -> str:
    return epilog(EXIT_CODES, EXAMPLES[engine], "docs/engines.md")


def _parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog="krmfn export",
        description="Write the steps of a rendered stream for another engine.",
        epilog=_epilog(""),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(
        dest="engine", required=True, metavar="ENGINE", help="resourceset or argocd (see below)"
    )
    common = CommandParser(add_help=False)
    common.add_argument(
        "-f",
        "--filename",
        action="append",
        required=True,
        metavar="FILE|DIR|-",
        help="rendered manifests; a directory is read recursively, as krmfn apply reads it; repeatable",
    )
    common.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    common.add_argument(
        "--allow-empty",
        action="store_true",
        help="accept an input without objects (refused by default: a failed render gives one); the engine "
        "then deletes what it applied before",
    )
    rset = commands.add_parser(
        "resourceset",
        parents=[common],
        help="one Flux Operator ResourceSet with the steps in .spec.steps",
        description="Emit a Flux Operator ResourceSet (fluxcd.controlplane.io/v1) whose .spec.steps hold "
        "the objects grouped by krmfn.dev/step-index. At most 20 steps.",
        epilog=_epilog("resourceset"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    rset.add_argument("--name", required=True, help="name of the ResourceSet")
    rset.add_argument("-n", "--namespace", required=True, help="namespace of the ResourceSet")
    rset.add_argument(
        "--service-account", default="", metavar="NAME", help="spec.serviceAccountName to impersonate"
    )
    rset.add_argument(
        "--allow-secrets",
        action="store_true",
        help="embed Secrets (refused by default: the ResourceSet would hold their data in plain text)",
    )
    rset.add_argument(
        "--drop-on-failure",
        action="store_true",
        help="leave out the on-failure steps (krmfn.dev/on-failure; refused by default: a ResourceSet "
        "would apply them on every reconciliation)",
    )
    rset.add_argument(
        "--drop-on-delete",
        action="store_true",
        help="leave out the on-delete steps (krmfn.dev/on-delete; refused by default: a ResourceSet has no "
        "delete hooks and would apply them on every reconciliation)",
    )
    argo = commands.add_parser(
        "argocd",
        parents=[common],
        help="the stream with argocd.argoproj.io/sync-wave set to the step index",
        description="Annotate every object with argocd.argoproj.io/sync-wave from krmfn.dev/step-index.",
        epilog=_epilog("argocd"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    argo.add_argument(
        "--hooks",
        action="store_true",
        help="Jobs of the first step become PreSync hooks and Jobs of the last step PostSync hooks, the "
        "on-failure steps' objects SyncFail hooks (hook-delete-policy BeforeHookCreation); the on-delete "
        "steps' objects are PreDelete hooks with or without it",
    )
    argo.add_argument(
        "--drop-on-delete",
        action="store_true",
        help="leave out the on-delete steps (krmfn.dev/on-delete) instead of writing them as PreDelete hooks",
    )
    return parser


def main(argv: list[str]) -> int:
    try:
        args = _parser().parse_args(argv[1:])
    except SystemExit as stop:  # --help, or a usage error already printed by argparse
        return stop.code if isinstance(stop.code, int) else 2
    try:
        steps = group(read_sources(args.filename), args.filename, args.allow_empty)
        engine = "the Flux Operator" if args.engine == "resourceset" else "Argo CD"
        for step in steps.steps + steps.on_failure + steps.on_delete:
            for obj in step.items:
                warning = ttl_warning(obj, engine)
                if warning:
                    write_line(sys.stderr, f"krmfn export {args.engine}: warning: {ref_of(obj)}: {warning}")
        if args.engine == "resourceset":
            rset = resourceset.build(
                steps,
                args.name,
                args.namespace,
                args.service_account,
                allow_secrets=args.allow_secrets,
                drop_on_failure=args.drop_on_failure,
                drop_on_delete=args.drop_on_delete,
            )
            text = dump_fast(rset)
        else:
            text = dump_all_fast(argocd.annotate(steps, args.hooks, args.drop_on_delete))
    except KrmfnError as err:
        write_line(sys.stderr, f"krmfn export {args.engine}: {err}")
        return 1
    if args.output:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as err:
            write_line(sys.stderr, f"krmfn export {args.engine}: {args.output}: {err.strerror or err}")
            return 1
    else:
        sys.stdout.write(text)
    return 0
