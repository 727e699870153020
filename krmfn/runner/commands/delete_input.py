"""What ``krmfn delete`` reads from ``-f``/``-k``: the app's name (as apply finds it) and the render's
on-delete steps (``krmfn.dev/on-delete``), planned as apply plans them, so they are applied with the
namespace, order and timeouts apply would give them. Only ``--applyset``: no render, no on-delete steps
(``None``; the engine then refuses an app whose last apply recorded some, delete_steps.py)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from krmfn.runner.errors import SourceError
from krmfn.runner.inventory.identity import identify
from krmfn.runner.plan import Step, build_plan, check_applyset
from krmfn.runner.source import kustomize_build, read_files


def read_render(args: argparse.Namespace) -> tuple[str, list[Any] | None]:
    """The inventory's name and the documents of the render (None: ``--applyset`` alone)."""
    from krmfn.k8s.names import name_problem

    docs: list[Any] | None = None
    directories: list[str] = []
    if args.kustomize:
        docs = kustomize_build(args.kustomize, alpha_plugins=args.enable_alpha_plugins or args.enable_exec,
                               enable_exec=args.enable_exec)  # fmt: skip
        directories = [args.kustomize]
    elif args.filename:
        docs = read_files(args.filename)
        directories = [f for f in args.filename if Path(f).is_dir()]
    if args.applyset is not None:
        problem = name_problem("", "Secret", args.applyset)
        if problem is not None:
            raise SourceError(f"--applyset {args.applyset!r}: {problem}")
        return str(args.applyset), docs
    if docs is None:
        raise SourceError("name the inventory: --applyset NAME, or -f/-k with the rendered app")
    return identify(docs, None, directories, prune=True).name, docs


def on_delete_steps(
    docs: list[Any] | None, name: str, namespace: str, default_timeout: float
) -> list[Step] | None:
    """The render's on-delete steps, planned for ``namespace`` and checked against the inventory ``name``
    as apply checks its plan (none of them may be the parent); None without a render."""
    if docs is None:
        return None
    plan = build_plan(docs, namespace=namespace, default_timeout=default_timeout)
    check_applyset(plan, name, namespace)
    return plan.on_delete
