"""``krmfn delete``'s on-delete steps (set-steps' ``onDelete:``, ``krmfn.dev/on-delete``): applied and
waited for before the teardown starts, as Helm runs its pre-delete hooks and Argo CD its PreDelete hooks.

They go through the engine's own step code (``Runner._run_step``: the same apply, Job records and health
waits as ``krmfn apply``'s steps), under the inventory lock the delete holds and on its parent. Before
the first of them is applied the parent lists their kinds and namespaces (the superset rule), so the
teardown that follows finds them as members and deletes them first (delete.py): never another app's
objects. Their Jobs run on every delete, as a pre-delete hook runs on every uninstall: a finished one is
deleted first and the record of its run forgotten (the on-failure steps' rule). Under ``--dry-run`` they
go through a server dry run: nothing written, no lock.

Which steps run (``steps_to_run``): the render's, unless ``--skip-delete-steps``. Without a render (only
``--applyset``), an app whose last apply recorded on-delete steps (``Parent.on_delete``) is refused, as is
a render that has none of them: skipping a backup must be asked for, never a silent consequence.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from krmfn.errors import RunnerError
from krmfn.net.budget import Budget
from krmfn.runner.cluster.api import Api
from krmfn.runner.engine.engine import Clock, Options, Runner
from krmfn.runner.engine.tracked import Waiting
from krmfn.runner.errors import Interrupted, RunTimeout, SourceError
from krmfn.runner.events import Event
from krmfn.runner.inventory.applyset import Parent
from krmfn.runner.inventory.inventory import Inventory
from krmfn.runner.plan import Plan, Step

SKIP_FLAG = "--skip-delete-steps"


class DeleteStepsNeeded(SourceError):
    """``krmfn delete`` of an app with on-delete steps, without the render that holds them."""


def steps_to_run(parent: Parent, render: list[Step] | None, skip: bool) -> list[Step]:
    """The on-delete steps this delete applies, numbered from 0 in their order (the teardown's steps
    follow them). ``render`` None: no -f/-k given."""
    if skip:
        return []
    recorded = ", ".join(parent.on_delete)
    where = f"{parent.namespace}/{parent.name}"
    if render is None and parent.on_delete:
        raise DeleteStepsNeeded(
            f"the app {where} has on-delete steps ({recorded}), which run before the teardown (a backup, a "
            f"drain): pass -f/-k with its render so they run, or {SKIP_FLAG} to tear it down without them"
        )
    if render is not None and not render and parent.on_delete:
        raise DeleteStepsNeeded(
            f"the app {where} was applied with on-delete steps ({recorded}), which the render given has "
            f"none of: pass the render it was applied from, or {SKIP_FLAG} to tear it down without them"
        )
    return [replace(step, index=position) for position, step in enumerate(render or [])]


class DeleteStepsRunner(Runner):
    """The engine, run on steps of the delete's choosing, under its lock and on its parent; its stops
    (signals, ``--timeout``) are the delete's."""

    def __init__(
        self, api: Api, options: Options, emit: Callable[[Event], None], *, clock: Clock, budget: Budget,
        parent: Parent, inventory: Inventory | None, check_stop: Callable[[Waiting | None], None],
        deadline: float | None,
    ) -> None:  # fmt: skip
        previous = budget.on_stop
        super().__init__(api, options, emit, clock, budget)
        budget.on_stop = previous  # the delete's: a request it ends raises the delete's own error
        self._book.parent, self._book.inventory, self._deadline = parent, inventory, deadline
        self._outer_check = check_stop

    def _check_stop(self, waiting: Waiting | None = None) -> None:
        self._outer_check(waiting)

    def prepare(self, steps: list[Step]) -> None:
        """Discovery of the steps' kinds, and their kinds and namespaces on the parent before the first
        is applied: a teardown after a crash here still finds them."""
        parent, inventory = self._book.parent, self._book.inventory
        assert parent is not None, "the delete read its parent first"
        self._during = "discovery of the on-delete steps' kinds"
        self._discovery.resolve(Plan(steps))
        if self.options.dry_run or inventory is None:
            return
        items = [item for step in steps for item in step.items]
        parent.group_kinds |= {item.key.group_kind for item in items}
        parent.namespaces |= {item.key.namespace for item in items if item.key.namespace}
        inventory.write(parent)

    def apply_step(self, step: Step) -> str:
        """Applies ``step`` and waits for it: ``healthy`` (``applied`` in a dry run). A failure raises,
        its message saying nothing of the app was deleted."""
        parent = self._book.parent
        assert parent is not None, "the delete read its parent first"
        self._step = step.index
        try:
            self._jobs.rerun_finished_jobs(step, parent)
            self._run_step(step, parent, self._applies.result)
        except (Interrupted, RunTimeout):
            raise
        except RunnerError as err:
            text = str(err) if str(err).startswith("step ") else f"step {step.name}: {err}"
            err.args = (f"on-delete {text}; nothing of the app was deleted",)
            raise
        return "applied" if self.options.dry_run else "healthy"

    def apply_all(
        self, steps: list[Step], *, force: bool, starting: Callable[[Step], None], done: list[tuple[str, str]]
    ) -> str | None:
        """``prepare``, then each step in order, ``starting`` told before it and (step, result) added to
        ``done`` after it. A failure raises, unless ``force``: then it is ``failed`` in ``done``, the next
        steps still run, and the first such error is returned (the teardown goes on past it)."""
        self.prepare(steps)
        went_on = None
        for step in steps:
            starting(step)
            try:
                done.append((step.name, self.apply_step(step)))
            except (Interrupted, RunTimeout):
                raise  # stopped from outside: never forced past
            except RunnerError as err:
                if not force:
                    raise
                done.append((step.name, "failed"))
                went_on = went_on or f"{err} (--force: the teardown went on)"
        return went_on
