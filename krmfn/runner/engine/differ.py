"""``krmfn diff``'s cluster side: what the next ``krmfn apply`` of a plan would change, object by object.

Per step, every object is sent as apply sends it (the ApplySet member label, a Job's run hash, the same
field manager and ``--force-conflicts``) with ``dryRun=All``, and the server's answer is compared with the
live object. Members of the inventory that the plan no longer has, and that apply would prune, are
deletions. Nothing is written and the inventory lock is never taken: a diff may run while an apply does.

The comparison and its text are diff.py's (pure); this module only asks the cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

from krmfn.k8s.annotations import FORCES, RECREATES_ON_FAILURE, enabled
from krmfn.k8s.kobj import annotations_of
from krmfn.k8s.names import name_problem
from krmfn.runner.cluster.api import Api, Resource, call
from krmfn.runner.engine import jobs
from krmfn.runner.engine.diff import (
    Action,
    Change,
    action_of,
    comparable,
    file_name,
    masked,
    without_invented,
)
from krmfn.runner.engine.discovery import crds_of, resolve
from krmfn.runner.engine.parallel import DEFAULT_CONCURRENCY, in_order
from krmfn.runner.errors import InventoryError, NoInventory, ObjectError
from krmfn.runner.inventory.applyset import Parent, as_member
from krmfn.runner.inventory.members import foreign_inventory, list_members
from krmfn.runner.inventory.prune import is_parent, kept_because
from krmfn.runner.plan import Item, Key, Plan, Step, key_of


@dataclass(frozen=True)
class DiffOptions:
    applyset: str
    applyset_source: str
    namespace: str
    field_manager: str = "krmfn"
    force_conflicts: bool = False
    prune: bool = True
    adopt: bool = False
    prune_namespaces: bool = False
    prune_crds: bool = False
    allow_empty: bool = False


@dataclass(frozen=True)
class Failure:
    """An object whose next apply would fail (the server refused its dry run): the diff cannot show it."""

    step: int | None
    step_name: str | None
    object: str
    message: str


def read_parent(
    api: Api, name: str, namespace: str, call: Callable[..., Any]
) -> tuple[Parent, dict[str, Any]]:
    """The ApplySet parent ``namespace/name`` as recorded, and the live Secret, without locking; raises
    NoInventory when there is none and InventoryError when it is not krmfn's (as apply refuses it)."""
    res = api.resource("v1", "Secret")
    live = call(Key("", "Secret", namespace, name), api.get, res, name, namespace)
    if live is None:
        raise NoInventory(
            f"no inventory: namespace {namespace} has no ApplySet parent Secret {name}, so the app is not "
            "applied here: never applied, or deleted (check -n and --applyset)"
        )
    return Parent.from_live(name, namespace, "", live), live


class Differ:
    def __init__(self, api: Api, options: DiffOptions) -> None:
        self.api = api
        self.options = options
        self._resources: dict[Key, Resource] = {}
        self._pending_crd: dict[Key, str] = {}
        """Objects whose kind a CRD of the plan defines, not installed yet: the CRD's name."""
        self._live: dict[Key, dict[str, Any]] = {}
        """The inventory's members as listed: the live objects of most of the plan, without a GET each."""

    def changes(self, plan: Plan) -> Iterator[Change | Failure]:
        """Every object's change, step by step, then the deletions; raises RunnerError when the diff as a
        whole cannot be made (no inventory, another tool's or app's, the cluster unreachable)."""
        parent, _ = read_parent(self.api, self.options.applyset, self.options.namespace, call)
        self._resolve(plan)
        members = list_members(
            self.api, parent, parent.group_kinds, parent.namespaces | {parent.namespace}, call=call
        )
        planned = {it.key for it in plan.items}
        if self.options.prune and not self.options.adopt and (planned or not self.options.allow_empty):
            foreign = foreign_inventory(
                parent, self.options.applyset_source, planned, (key_of(o) for o, _ in members)
            )
            if foreign is not None:
                raise InventoryError(foreign)
        namespaces = {it.key.name for it in plan.items if it.key.kind == "Namespace" and not it.key.group}
        self._live = {key_of(obj): obj for obj, _ in members}

        def one(step: Step, item: Item) -> Change | Failure:
            try:
                return self._object(step, item, parent, namespaces)
            except ObjectError as err:
                return Failure(step.index, step.name, str(item.key), str(err))

        # Only reads and dry runs: every object at once (bounded), reported in plan order.
        tasks = [partial(one, step, item) for step in plan.steps for item in step.items]
        for _, future in in_order(tasks, DEFAULT_CONCURRENCY, lambda: None):
            yield future.result()
        if self.options.prune:
            yield from self._deletions(parent, planned, members)

    def _resolve(self, plan: Plan) -> None:
        crds = crds_of(plan)
        for item in resolve(self.api, plan, crds, self._resources):
            self._pending_crd[item.key] = crds[(item.key.group, item.kind)].key.name

    def _change(
        self, step: Step | None, key: Key, obj: dict[str, Any], *, before: dict[str, Any] | None,
        after: dict[str, Any] | None, detail: str = "", action: Action | None = None,
    ) -> Change:  # fmt: skip
        b, a = masked(comparable(before), comparable(after))
        meta = obj.get("metadata") or {}
        return Change(
            step=step.index if step is not None else None,
            step_name=step.name if step is not None else None,
            object=str(key),
            file=file_name(
                str(obj.get("apiVersion", "")), key.kind, key.namespace, str(meta.get("name", ""))
            ),
            action=action_of(b, a) if action is None else action,
            before=b,
            after=a,
            detail=detail,
        )

    def _object(self, step: Step, item: Item, parent: Parent, namespaces: set[str]) -> Change:
        key = item.key
        obj = as_member(item.obj, parent.id)
        if key in self._pending_crd:
            detail = f"its CRD {self._pending_crd[key]} is not installed yet: shown as rendered"
            return self._change(step, key, obj, before=None, after=obj, detail=detail)
        res = self._resources[key]
        live = self._live.get(key)
        if live is None or live.get("apiVersion") != item.api_version:  # not a member, or another version
            live = call(key, self.api.get, res, key.name, key.namespace)
        is_job = key.group == "batch" and key.kind == "Job"
        if is_job:
            wanted = jobs.run_hash_of(item)
            obj["metadata"].setdefault("annotations", {})[jobs.SPEC_HASH] = wanted
            found = self._job(step, item, obj, live=live, parent=parent, wanted=wanted)
            if found is not None:
                return found
        try:
            after, _ = call(
                key, self.api.apply, res, obj, field_manager=self.options.field_manager,
                force=self.options.force_conflicts, dry_run=True,
            )  # fmt: skip
        except ObjectError as err:
            if err.code == 404 and key.namespace in namespaces and live is None:
                detail = f"its Namespace {key.namespace} is created by this plan: shown as rendered"
                return self._change(step, key, obj, before=None, after=obj, detail=detail)
            if err.code == 422 and jobs.is_immutable_error(str(err)) and live is not None:
                if enabled(item.annotations, FORCES):
                    detail = "a field that cannot change changes: deleted and re-created (force)"
                    return self._change(
                        step, key, obj, before=live, after=obj, detail=detail, action="update"
                    )
                if is_job:
                    raise ObjectError(str(key), jobs.spec_changed(item, err.cause), err.code) from None
            raise
        if live is None:
            after = without_invented(after, obj)
        return self._change(step, key, obj, before=live, after=after)

    def _job(
        self, step: Step, item: Item, obj: dict[str, Any], *, live: dict[str, Any] | None, parent: Parent,
        wanted: str,
    ) -> Change | None:  # fmt: skip
        """A Job that the next apply would not run again (the same run is live, or recorded as done and
        deleted since), or None when it is compared like any object."""
        key = item.key
        if live is not None:
            if annotations_of(live).get(jobs.SPEC_HASH) != wanted:
                return None
            if jobs.is_failed(live) and enabled(item.annotations, RECREATES_ON_FAILURE):
                detail = "failed; deleted and re-created (recreate-on-failure)"
                return self._change(step, key, obj, before=live, after=obj, detail=detail, action="update")
            same = "its spec hash is unchanged" if item.triggered is None else "its triggers are unchanged"
            return self._change(step, key, obj, before=live, after=live, detail=f"the same run ({same})")
        record, ran_as = parent.jobs.get(f"{key.namespace}/{key.name}"), ""
        if record is None or not jobs.same_run(record, wanted, item.obj):
            record, ran_as = jobs.renamed_run(item, parent, wanted)  # the same run under an older hashed name
            if record is None:
                return None
        if record.outcome == "failed" and enabled(item.annotations, RECREATES_ON_FAILURE):
            return None
        where = f" as {ran_as}" if ran_as else ""
        detail = f"{record.outcome} before{where} and deleted since: not run again"
        return self._change(step, key, obj, before=None, after=None, detail=detail, action="unchanged")

    def _deletions(
        self, parent: Parent, planned: set[Key], members: list[tuple[dict[str, Any], Resource]]
    ) -> Iterator[Change | Failure]:
        for obj, _ in sorted(members, key=lambda m: key_of(m[0])):
            key = key_of(obj)
            if key in planned or is_parent(obj, parent):
                continue  # an ApplySet parent is never pruned
            if name_problem(key.group, key.kind, key.name) or (
                key.namespace and name_problem("", "Namespace", key.namespace)
            ):
                yield Failure(None, None, str(key), "the inventory lists an object whose name is not valid")
                continue
            if kept_because(obj, self.options) is not None:
                continue  # as the apply would keep it (prune.py)
            yield self._change(
                None, key, obj, before=obj, after=None, detail="no longer rendered: the next apply prunes it"
            )
