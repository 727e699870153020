"""The set-image transform: resolve each rule to a Change, then rewrite every matching reference."""

from __future__ import annotations

from typing import Any

from krmfn import ResourceList, select
from krmfn.functions.set_image import imageref
from krmfn.functions.set_image.config import ImageRule, SetImageConfig
from krmfn.functions.set_image.fields import (
    Slot,
    declared_images,
    flux_entries,
    is_flux_kustomization,
    pod_images,
)
from krmfn.k8s.kobj import set_scalar
from krmfn.records import FrozenRecord
from krmfn.sdk.results import Results


class Resolved(FrozenRecord):
    """A rule with its tag chosen: the image name it matches and its change."""

    __slots__ = _fields = ("name", "change")

    def __init__(self, name: str, change: imageref.Change) -> None:
        self.name = name
        self.change = change


def resolve(rules: list[ImageRule], results: Results) -> list[Resolved]:
    """Rules with their tags chosen; a rule whose semver selection fails becomes an error result."""
    resolved = []
    for index, rule in enumerate(rules):
        tag = rule.new_tag
        if rule.semver:
            found = _select(rule, index, results)
            if found is None:
                continue
            tag = found
        change = imageref.Change(rule.new_name, tag, rule.digest, rule.tag_suffix)
        resolved.append(Resolved(rule.name, change))
    return resolved


def _select(rule: ImageRule, index: int, results: Results) -> str | None:
    where = f"functionConfig.images[{index}].semver"
    candidates = list(rule.tags)
    if rule.registry:
        from krmfn.functions.set_image import registry

        repo = registry.repository_of(imageref.split(rule.new_name or rule.name)[0])
        try:
            candidates += registry.list_tags(repo)
        except registry.RegistryError as err:
            results.error(f"images[{index}] ({rule.name}): {err}", field=where)
            return None
    from krmfn.functions.set_image import semver

    chosen = semver.highest(semver.parse_constraint(rule.semver), candidates)
    if chosen is None:
        shown = ", ".join(candidates[:20]) + (", ..." if len(candidates) > 20 else "")
        results.error(
            f"images[{index}] ({rule.name}): no tag satisfies {rule.semver!r} "
            f"among {len(candidates)} candidate(s){': ' + shown if shown else ''}",
            field=where,
        )
    return chosen


def set_image(rl: ResourceList, config: SetImageConfig) -> None:
    rules = resolve(config.images, rl.results)
    images = resources = 0
    # YAML aliases can make two items share one node: it must still be rewritten only once.
    seen: set[tuple[int, str]] = set()
    for obj in select(rl.items, config.selectors, config.exclude):
        if obj.get("kind") == "CustomResourceDefinition":  # schemas, not workloads (as kustomize)
            continue
        changed = sum(_rewrite(slot, rules) for slot in _slots(obj, config, seen))
        if is_flux_kustomization(obj):
            changed += sum(_update_flux(entry, rules) for entry, _ in flux_entries(obj))
        images += changed
        resources += bool(changed)
    rl.results.info(f"updated {images} image(s) in {resources} resource(s)")


def _slots(obj: dict[str, Any], config: SetImageConfig, seen: set[tuple[int, str]]) -> list[Slot]:
    found = []
    candidates = list(pod_images(obj))
    for spec in config.additional_image_fields:
        candidates += declared_images(obj, spec)
    for slot in candidates:
        key = (id(slot[0]), slot[1])
        if key not in seen:  # a field named twice is still rewritten once
            seen.add(key)
            found.append(slot)
    return found


def _rewrite(slot: Slot, rules: list[Resolved]) -> bool:
    holder, key, _ = slot
    value = original = holder[key]
    for rule in rules:  # in order, so a later rule sees what an earlier one wrote (as kustomize)
        if imageref.matches(value, rule.name):
            value = imageref.rewrite(value, rule.change)
    return value != original and set_scalar(holder, key, value)


def _update_flux(entry: dict[str, Any], rules: list[Resolved]) -> bool:
    """A Flux Kustomization image entry named like the rule gets the rule's new name, tag and digest; as
    for a reference, a new tag drops the old digest and a new digest drops the old tag."""
    changed = False
    for rule in rules:
        if entry.get("name") != rule.name:
            continue
        change = rule.change
        if change.new_name:
            changed |= set_scalar(entry, "newName", change.new_name)
        if change.new_tag:
            changed |= set_scalar(entry, "newTag", change.new_tag)
            if not change.digest and "digest" in entry:
                del entry["digest"]
                changed = True
        if change.digest:
            changed |= set_scalar(entry, "digest", change.digest)
            if not change.new_tag and "newTag" in entry:
                del entry["newTag"]
                changed = True
    return changed
