"""Other tools' ordering annotations as steps (``orderFrom``): Helm hooks, Argo CD sync waves and hooks,
kapp change groups and rules, so a manifest set already ordered for one of them applies through krmfn in
that tool's order, without edits.

Each annotated object lands in a *band* around the config's own steps (which hold the release's
ordinary objects, placed by selectors and ``defaultStep`` as always): ``before`` them, ``after`` them,
or among the ``onFailure`` or the ``onDelete`` steps (Helm's pre-delete hooks, Argo CD's PreDelete), at
a rank (a hook weight, a sync wave, a kapp level). Every distinct
(band, rank) becomes one generated step, named after the rank, with no selectors: the object is placed
in it the way a pin places one. An object whose annotation has no krmfn equivalent gets a warning naming
the object and the annotation; one that never runs at install or upgrade (a Helm test hook, an Argo CD
``Skip``) is left out of the output with a message. Annotation values are hostile input: a weight or
wave is a plain ASCII integer within int32, anything else is an error naming the object and the
annotation (Helm reads an unparsable weight as 0, Argo CD an unparsable wave as the Helm weight or
0, without a word).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Literal

from krmfn.functions.set_steps.config import MAX_STEPS, SetStepsConfig, StepConfig
from krmfn.k8s.annotations import STEP_PIN
from krmfn.k8s.kobj import Obj, annotations_of, is_local_config, ref_of
from krmfn.sdk.results import Results
from krmfn.terminal import cut

Band = Literal["before", "after", "failure", "delete"]

HELM_HOOK = "helm.sh/hook"
HELM_WEIGHT = "helm.sh/hook-weight"
HELM_DELETE_POLICY = "helm.sh/hook-delete-policy"
ARGO_HOOK = "argocd.argoproj.io/hook"
ARGO_WAVE = "argocd.argoproj.io/sync-wave"
KAPP_GROUP = "kapp.k14s.io/change-group"
KAPP_RULE = "kapp.k14s.io/change-rule"
KAPP_NONCE = "kapp.k14s.io/nonce"

GENERATED_TIMEOUT = "5m"
"""The generated steps' timeout: Helm's default ``--timeout``, which it gives each hook."""
SHOWN = 80
SHOWN_OBJECTS = 5
"""Characters of a hostile annotation value quoted in a message."""
MAX_VALUE = 1024
"""An ordering annotation longer than this is an error, before any parsing."""
INT32 = 2**31 - 1
_INTEGER = re.compile(r"[+-]?[0-9]{1,10}", re.ASCII)
_KAPP_NAME = re.compile(r"[A-Za-z0-9{][A-Za-z0-9._/{}-]*", re.ASCII)
_KAPP_RULE = re.compile(r"(upsert|delete) (before|after) (upserting|deleting) (\S+)", re.ASCII)
_KAPP_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")

HELM_BEFORE = frozenset({"pre-install", "pre-upgrade"})
HELM_AFTER = frozenset({"post-install", "post-upgrade"})
HELM_DELETE = frozenset({"pre-delete"})
HELM_OTHER = frozenset({"post-delete", "pre-rollback", "post-rollback"})
HELM_TEST = frozenset({"test", "test-success"})
_ARGO_LEFT_OUT = {
    "Skip": "Skip: Argo CD never applies it",
    "PostDelete": "PostDelete: Argo CD runs it when the application is deleted",
}
ARGO_TYPES = ("PreSync", "Sync", "PostSync", "SyncFail", "PreDelete", "PostDelete", "Skip")


@dataclass(frozen=True, order=True)
class Slot:
    """Where an annotated object goes: a band around the config's steps and a rank within it."""

    band: Band
    rank: tuple[int, ...]
    name: str = field(compare=False)


@dataclass
class Layout:
    """The generated steps merged into the config, the step each annotated object is placed in, and the
    objects left out of the output."""

    config: SetStepsConfig
    placed: dict[int, str] = field(default_factory=dict)
    left_out: list[Obj] = field(default_factory=list)


def layout(items: Iterable[Obj], config: SetStepsConfig, results: Results) -> Layout:
    """The config with the steps ``config.order_from``'s annotations ask for (errors into ``results``)."""
    objects = [obj for obj in items if not is_local_config(obj) and STEP_PIN not in annotations_of(obj)]
    slots: dict[int, Slot] = {}
    left_out: list[Obj] = []
    if config.order_from == "helm":
        _helm(objects, slots, left_out, results)
    elif config.order_from == "argocd":
        _argocd(objects, slots, left_out, results)
    else:
        _kapp(objects, slots, results)
    distinct = sorted(set(slots.values()))
    before = [s for s in distinct if s.band == "before"]
    after = [s for s in distinct if s.band == "after"]
    failure = [s for s in distinct if s.band == "failure"]
    deleting = [s for s in distinct if s.band == "delete"]
    own = {step.name for step in (*config.steps, *config.on_failure, *config.on_delete)}
    for slot in distinct:
        if slot.name in own:
            results.error(
                f"step {slot.name!r} is generated for {config.order_from}'s annotations and also in the "
                "config; rename the config's step",
                field="functionConfig.orderFrom",
            )
    steps = [_step(s) for s in before] + list(config.steps) + [_step(s) for s in after]
    on_failure = list(config.on_failure) + [_step(s) for s in failure]
    on_delete = list(config.on_delete) + [_step(s) for s in deleting]
    if deleting and "depends-on" in config.emit:
        results.error(
            f"{config.order_from}'s delete hooks become onDelete steps, which kpt live apply (emit: "
            "[depends-on]) has no step for: it would apply them at every apply; render the package for kpt "
            "live without them",
            field="functionConfig.orderFrom",
        )
    bands = (
        ("steps", steps, before + after),
        ("onFailure", on_failure, failure),
        ("onDelete", on_delete, deleting),
    )
    for where, found, added in bands:
        if len(found) > MAX_STEPS:
            results.error(
                f"{config.order_from}'s annotations ask for {len(added)} more {where}, {len(found)} in all, "
                f"over the limit of {MAX_STEPS}; use fewer distinct weights or waves",
                field="functionConfig.orderFrom",
            )
    merged = replace(config, steps=steps, on_failure=on_failure, on_delete=on_delete)
    return Layout(merged, {key: slot.name for key, slot in slots.items()}, left_out)


def _step(slot: Slot) -> StepConfig:
    return StepConfig(name=slot.name, timeout=GENERATED_TIMEOUT)


def _rank_name(value: int) -> str:
    return f"minus{-value}" if value < 0 else str(value)


def _text(obj: Obj, key: str, results: Results) -> str | None:
    """The annotation's value, or None (with an error when it is there but unreadable)."""
    value = annotations_of(obj).get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        results.error(
            f"annotation {key} must be a string (quote it: the API server refuses a {type(value).__name__})",
            obj,
            field=f"metadata.annotations.{key}",
        )
        return None
    if len(value) > MAX_VALUE:
        results.error(
            f"annotation {key} is {len(value)} characters long, over the limit of {MAX_VALUE}",
            obj,
            field=f"metadata.annotations.{key}",
        )
        return None
    return value


def _integer(obj: Obj, key: str, results: Results) -> int | None:
    """A weight or wave: absent or empty is 0; anything but a plain ASCII int32 is an error (None)."""
    text = _text(obj, key, results)
    if text is None:
        return None if key in annotations_of(obj) else 0
    if text == "":
        return 0
    if not _INTEGER.fullmatch(text) or not -INT32 - 1 <= int(text) <= INT32:
        results.error(
            f"annotation {key} must be an integer from {-INT32 - 1} to {INT32} in ASCII digits, got "
            f"{cut(repr(text), SHOWN)}",
            obj,
            field=f"metadata.annotations.{key}",
            current_value=cut(text, SHOWN),
        )
        return None
    return int(text)


def _helm(objects: list[Obj], slots: dict[int, Slot], left_out: list[Obj], results: Results) -> None:
    for obj in objects:
        text = _text(obj, HELM_HOOK, results)
        if text is None:
            continue
        where = f"metadata.annotations.{HELM_HOOK}"
        events = {event.strip().lower() for event in text.split(",")}
        unknown = sorted(events - HELM_BEFORE - HELM_AFTER - HELM_DELETE - HELM_OTHER - HELM_TEST)
        if unknown:
            # Helm skips an object with an unknown hook event altogether (releaseutil.SortManifests).
            results.warning(
                f"annotation {HELM_HOOK}: unknown hook event {cut(repr(unknown[0]), SHOWN)}, so Helm never "
                "applies this object; left out",
                obj,
                field=where,
            )
            left_out.append(obj)
            continue
        weight = _integer(obj, HELM_WEIGHT, results)
        if weight is None:
            continue
        before, after = events & HELM_BEFORE, events & HELM_AFTER
        if before and after:
            results.warning(
                f"annotation {HELM_HOOK}: {text.strip()!r} runs before the release's objects on one Helm "
                "operation and after them on another; krmfn has one order for install and upgrade, so "
                f"this object is placed by the selectors and defaultStep (or pin it with {STEP_PIN})",
                obj,
                field=where,
            )
            continue
        deleting = events & HELM_DELETE
        if not before and not after and not deleting:
            # A warning even for a test hook: an object leaves the output, which a pipe shows no info for.
            kind = (
                "a test hook (helm test runs it; helm template --skip-tests leaves it out)"
                if events <= HELM_TEST
                else "a hook of no install, upgrade or pre-delete"
            )
            results.warning(
                f"annotation {HELM_HOOK}: {text.strip()!r} is {kind}; krmfn never runs it, so it is left out",
                obj,
                field=where,
            )
            left_out.append(obj)
            continue
        ignored = sorted(events - before - after - (deleting if not before and not after else set()))
        if ignored:
            when = "at every apply" if before or after else "before krmfn delete's teardown"
            results.info(
                f"annotation {HELM_HOOK}: krmfn runs this hook {when}; its other events "
                f"({', '.join(ignored)}) are not run: an object is in one krmfn step, and krmfn has no "
                "post-delete or rollback hooks",
                obj,
                field=where,
            )
        band: Band = "before" if before else "after" if after else "delete"
        phase = {"before": "pre", "after": "post", "delete": "predelete"}[band]
        slots[id(obj)] = Slot(band, (weight,), f"helm-{phase}-{_rank_name(weight)}")
        policies = _text(obj, HELM_DELETE_POLICY, results) or ""
        if "hook-failed" in {p.strip().lower() for p in policies.split(",")}:
            results.info(
                f"annotation {HELM_DELETE_POLICY}: hook-failed: Helm deletes this hook when it fails; krmfn "
                "keeps a failed Job for its logs (krmfn.dev/recreate-on-failure: enabled recreates it at "
                "the next apply)",
                obj,
                field=f"metadata.annotations.{HELM_DELETE_POLICY}",
            )


def _argocd(objects: list[Obj], slots: dict[int, Slot], left_out: list[Obj], results: Results) -> None:
    for obj in objects:
        wave = _integer(obj, ARGO_WAVE, results)
        hook = _text(obj, ARGO_HOOK, results)
        if wave is None or (hook is None and ARGO_HOOK in annotations_of(obj)):
            continue
        where = f"metadata.annotations.{ARGO_HOOK}"
        if hook is None and HELM_HOOK in annotations_of(obj):
            # Argo CD maps Helm hooks (and a Helm weight without a wave) to its own; this reader does not.
            results.warning(
                f"annotation {HELM_HOOK} without {ARGO_HOOK}: Argo CD would run this object as a hook "
                "mapped from Helm's (pre-* PreSync, post-* PostSync, the hook weight as its wave); "
                "orderFrom: argocd places it by its sync wave only; use orderFrom: helm for a chart",
                obj,
                field=f"metadata.annotations.{HELM_HOOK}",
            )
        types = sorted({t.strip() for t in hook.split(",")}) if hook is not None else ["Sync"]
        if "Skip" in types or "PostDelete" in types:
            skip = "Skip" in types
            results.add(
                f"annotation {ARGO_HOOK}: {_ARGO_LEFT_OUT['Skip' if skip else 'PostDelete']}; left out",
                "info" if skip else "warning",
                obj,
                field=where,
            )
            left_out.append(obj)
            continue
        if len(types) != 1 or types[0] not in ARGO_TYPES:
            shown = cut(repr(hook), SHOWN)
            reason = (
                "names several phases, which Argo CD runs it in each of; krmfn applies an object once"
                if all(t in ARGO_TYPES for t in types)
                else f"is not one of {', '.join(ARGO_TYPES)}"
            )
            results.warning(
                f"annotation {ARGO_HOOK}: {shown} {reason}; placed by the selectors and defaultStep "
                f"(or pin it with {STEP_PIN})",
                obj,
                field=where,
            )
            continue
        kind = types[0]
        rank = _rank_name(wave)
        if kind == "PreSync":
            slots[id(obj)] = Slot("before", (0, wave), f"argocd-presync-{rank}")
        elif kind == "PostSync":
            slots[id(obj)] = Slot("after", (1, wave), f"argocd-postsync-{rank}")
        elif kind == "SyncFail":
            slots[id(obj)] = Slot("failure", (wave,), f"argocd-syncfail-{rank}")
        elif kind == "PreDelete":
            slots[id(obj)] = Slot("delete", (wave,), f"argocd-predelete-{rank}")
        elif wave < 0:
            slots[id(obj)] = Slot("before", (1, wave), f"argocd-wave-{rank}")
        elif wave > 0:
            slots[id(obj)] = Slot("after", (0, wave), f"argocd-wave-{rank}")
        # Sync phase, wave 0: the config's own steps.


def _kapp_names(obj: Obj, key: str, results: Results) -> list[tuple[str, str]]:
    """(annotation, value) of ``key`` and its ``key.<suffix>`` forms, kapp's way of giving several."""
    found = []
    for name in sorted(str(k) for k in annotations_of(obj)):
        if name == key or name.startswith(f"{key}."):
            text = _text(obj, name, results)
            if text is not None:
                found.append((name, text))
    return found


def _expand(obj: Obj, name: str, text: str, results: Results) -> str | None:
    """A group name with kapp's placeholders filled in, or None (with a warning or error)."""
    if not _KAPP_NAME.fullmatch(text):
        results.error(
            f"annotation {name}: {cut(repr(text), SHOWN)} is not a change group name (ASCII letters, "
            "digits, '.', '_', '-', '/' and placeholders)",
            obj,
            field=f"metadata.annotations.{name}",
            current_value=cut(text, SHOWN),
        )
        return None
    ref = ref_of(obj)
    values = {
        "api-group": ref.api_version.rpartition("/")[0] if "/" in ref.api_version else "",
        "kind": ref.kind,
        "name": ref.name,
        "namespace": ref.namespace,
    }
    missing = [p for p in _KAPP_PLACEHOLDER.findall(text) if p not in values]
    if missing:
        results.warning(
            f"annotation {name}: placeholder {{{cut(missing[0], SHOWN)}}} has no krmfn equivalent; this "
            "group is ignored",
            obj,
            field=f"metadata.annotations.{name}",
        )
        return None
    return _KAPP_PLACEHOLDER.sub(lambda m: values[m.group(1)], text)


def _kapp(objects: list[Obj], slots: dict[int, Slot], results: Results) -> None:
    members: dict[str, list[int]] = {}
    for index, obj in enumerate(objects):
        if KAPP_NONCE in annotations_of(obj):
            # kapp writes a new value into it at every deploy, so the object is updated (a Job re-created,
            # with fallback-on-replace) every time; a user coming from kapp relies on that re-run.
            results.info(
                f"annotation {KAPP_NONCE}: kapp re-creates this object at every deploy; krmfn runs a Job "
                "again only when its spec (or its krmfn.dev/hash-from triggers) change",
                obj,
                field=f"metadata.annotations.{KAPP_NONCE}",
            )
        for name, text in _kapp_names(obj, KAPP_GROUP, results):
            group = _expand(obj, name, text, results)
            if group is not None:
                members.setdefault(group, []).append(index)
    needs: dict[int, list[tuple[int, str]]] = {}  # object -> the objects it is upserted after
    for index, obj in enumerate(objects):
        for name, text in _kapp_names(obj, KAPP_RULE, results):
            rule = _KAPP_RULE.fullmatch(text.strip())
            where = f"metadata.annotations.{name}"
            if rule is None:
                results.error(
                    f"annotation {name}: {cut(repr(text), SHOWN)} is not a kapp change rule "
                    "('upsert after upserting <group>')",
                    obj,
                    field=where,
                    current_value=cut(text, SHOWN),
                )
                continue
            if rule.group(1, 2, 3) != ("upsert", "after", "upserting"):
                results.warning(
                    f"annotation {name}: {cut(repr(text.strip()), SHOWN)} has no krmfn equivalent (only "
                    "'upsert after upserting <group>' maps to steps); ignored",
                    obj,
                    field=where,
                )
                continue
            group = _expand(obj, name, rule.group(4), results)
            if group is None:
                continue
            if not members.get(group):
                results.warning(
                    f"annotation {name}: no object is in change group {cut(repr(group), SHOWN)}; ignored",
                    obj,
                    field=where,
                )
                continue
            needs.setdefault(index, []).extend((m, group) for m in members[group] if m != index)
    levels = _levels(objects, needs, results)
    for index, level in levels.items():
        if level > 0:
            slots[id(objects[index])] = Slot("after", (level,), f"kapp-after-{level}")


def _levels(objects: list[Obj], needs: dict[int, list[tuple[int, str]]], results: Results) -> dict[int, int]:
    """Each object's longest chain of 'upsert after' rules (0: none), by Kahn's topological order
    (iterative: a hostile chain of thousands of rules must not exhaust the stack); objects on a cycle get
    one error, naming them."""
    waiting = {index: len({n for n, _ in needs.get(index, [])}) for index in range(len(objects))}
    dependents: dict[int, set[int]] = {}
    for index, needed in needs.items():
        for other, _group in needed:
            dependents.setdefault(other, set()).add(index)
    level = dict.fromkeys(range(len(objects)), 0)
    ready = [index for index, count in waiting.items() if count == 0]
    done = 0
    while ready:
        index = ready.pop()
        done += 1
        for dependent in sorted(dependents.get(index, ())):
            level[dependent] = max(level[dependent], level[index] + 1)
            waiting[dependent] -= 1
            if waiting[dependent] == 0:
                ready.append(dependent)
    if done < len(objects):
        stuck = [index for index, count in waiting.items() if count > 0]
        named = ", ".join(str(ref_of(objects[i])) for i in stuck[:SHOWN_OBJECTS])
        more = f" and {len(stuck) - SHOWN_OBJECTS} more" if len(stuck) > SHOWN_OBJECTS else ""
        results.error(
            f"kapp change rules form a cycle among {named}{more}; kapp cannot apply them either",
            objects[stuck[0]],
            field=f"metadata.annotations.{KAPP_RULE}",
        )
        for index in stuck:
            level[index] = 0
    return level
