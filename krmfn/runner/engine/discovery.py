"""Discovery for a run: every object's REST resource looked up before anything is applied, so an unknown
kind fails the run up front, and a kind whose CRD the plan installs resolved once that CRD is Established.
"""

from __future__ import annotations

from collections.abc import Callable

from krmfn.runner.cluster.api import Api, NoSuchKind, Resource, call
from krmfn.runner.engine.health_wait import HealthWait
from krmfn.runner.engine.options import Clock, Options
from krmfn.runner.engine.tracked import CheckStop, Tracked
from krmfn.runner.errors import UnknownKind
from krmfn.runner.plan import Item, Key, Plan, Step


class Discovery:
    def __init__(
        self, api: Api, options: Options, clock: Clock, waits: HealthWait, *,
        check_stop: CheckStop, doing: Callable[[str], None],
    ) -> None:  # fmt: skip
        self.api, self.options, self.clock = api, options, clock
        self._waits, self._check_stop, self._doing = waits, check_stop, doing
        self.resources: dict[Key, Resource] = {}
        """Every object's resource, once known (a kind its CRD installs: when its turn comes)."""
        self.crds: dict[tuple[str, str], Item] = {}
        """The plan's CRDs by the (group, kind) they serve."""

    def resolve(self, plan: Plan) -> None:
        """Discovery for every object before anything is applied, so an unknown kind fails the run
        up front. Kinds whose CRD is part of the plan are resolved when their turn comes."""
        self._doing("discovery")
        self.crds.update(crds_of(plan))
        resolve(self.api, plan, self.crds, self.resources)

    def resource_for(self, step: Step, item: Item, deadline: float) -> Resource:
        """The REST resource of ``item``; for a kind whose CRD is in the plan, waits until the CRD is
        Established and discovery serves the kind."""
        found = self.resources.get(item.key)
        if found is not None:
            return found
        crd = self.crds[(item.key.group, item.kind)]
        if self.options.dry_run:
            raise UnknownKind(str(item.key), f"its CRD {crd.key.name} is not installed yet (server dry run)")
        crd_res = self.resources[crd.key]
        crd_live = call(crd.key, self.api.get, crd_res, crd.key.name, "")
        self._waits.wait(
            step, [Tracked(crd.key, crd_res, crd_live)], self.clock.monotonic(), deadline, quiet=True
        )
        delay = 0.02
        while True:
            self.api.forget(item.api_version)
            try:
                res = self.api.resource(item.api_version, item.kind)
            except NoSuchKind as err:
                # Established is set a moment before discovery serves the new kind.
                if self.clock.monotonic() + delay > deadline:
                    raise UnknownKind(str(item.key), str(err)) from None
                self._check_stop()
                self.clock.sleep(delay)
                delay = min(delay * 2, 0.5)
                continue
            place(item, res, self.resources)
            return res


def crds_of(plan: Plan) -> dict[tuple[str, str], Item]:
    """The plan's CRDs by the (group, kind) they serve."""
    crds = {}
    for item in plan.items:
        if item.kind == "CustomResourceDefinition":
            spec = item.obj.get("spec") or {}
            crds[(str(spec.get("group", "")), str((spec.get("names") or {}).get("kind", "")))] = item
    return crds


def resolve(
    api: Api, plan: Plan, crds: dict[tuple[str, str], Item], resources: dict[Key, Resource]
) -> list[Item]:
    """Every object's resource into ``resources`` (apply and diff alike); the objects whose kind only a
    CRD of the plan serves (``crds``, crds_of), which discovery does not know yet. Any other unknown
    kind: UnknownKind, naming the first such object."""
    pending = []
    for item in plan.items:
        try:
            res = api.resource(item.api_version, item.kind)
        except NoSuchKind as err:
            if (item.key.group, item.kind) in crds:
                pending.append(item)
                continue
            raise UnknownKind(str(item.key), str(err)) from None
        place(item, res, resources)
    return pending


def place(item: Item, res: Resource, resources: dict[Key, Resource]) -> None:
    """``item``'s resource recorded; a cluster-scoped kind drops the namespace the plan defaulted."""
    if not res.namespaced:
        item.drop_namespace()
    resources[item.key] = res
