"""Where a step layout loses the order its config asks for, reported when rendering rather than when a
real cluster hangs:

- an object that needs an object of a later step (a pod template's ConfigMap, an object's Namespace, a
  custom resource's CRD): krmfn/k8s/ordering.py, shared with ``krmfn plan|apply|diff`` and ``krmfn export``;
- a selector that matches nothing. After a ``kustomize build`` the names an object had before
  ``namePrefix``, ``nameSuffix`` or a generator's hash are gone, so a selector written against a base name
  (``name: db-migrate``) matches nothing in a pipe after the build, and its objects fall to the default
  step. Such a selector is an error when its step is then empty, or when an object of the kind it selects
  sits in a later step only because no selector placed it (the order the config asks for is lost);
  otherwise a warning. ``unmatchedSelectors: warning`` makes both warnings. Either way the message
  suggests a selector that keeps matching release after release: the name with the overlay's prefix and
  suffix, without a generator's or hash-job-names' hash, or a label only that object has.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable
from dataclasses import replace

from krmfn.functions.set_steps.config import SetStepsConfig, StepConfig
from krmfn.k8s.annotations import JOB_BASE_NAME, STEP_PIN
from krmfn.k8s.kobj import Obj, annotations_of, is_local_config, labels_of, ref_of
from krmfn.k8s.kustomize_names import name_before_hash, names_of
from krmfn.k8s.ordering import misorders
from krmfn.k8s.scopes import Scopes
from krmfn.sdk.results import Results
from krmfn.sdk.selector import Selector, matches_any

NEAR_NAMES = 3
SHOWN = 3


def check(groups: list[list[Obj]], config: SetStepsConfig, scopes: Scopes, results: Results) -> None:
    names = [step.name for step in config.steps]
    for found in misorders(groups, scopes):
        results.error(found.message(names), found.obj, field=found.field)


def unmatched_selectors(
    items: Iterable[Obj], assigned: list[list[Obj]], config: SetStepsConfig, results: Results
) -> None:
    """A result for every selector that matches no resource at all. ``assigned``: the resources of
    ``config.steps``, ``config.on_failure`` then ``config.on_delete``, one list per step (assign.py)."""
    objects = [obj for obj in items if not is_local_config(obj)]
    steps = [*config.steps, *config.on_failure, *config.on_delete]
    places = [(where, i) for where, found in config_kinds(config) for i in range(len(found))]
    step_of = {id(obj): index for index, group in enumerate(assigned) for obj in group}
    for index, step in enumerate(steps):
        where, position = places[index]
        for j, selector in enumerate(step.selectors):
            if any(selector.matches(obj) for obj in objects):
                continue
            meant = _meant(selector, objects)
            later = [obj for obj in meant if step_of.get(id(obj), -1) > index and _defaulted(obj, steps)]
            lost = []
            if not assigned[index]:
                lost.append("the step has no resources")
            lost += [f"{ref_of(o)} falls to the later step {steps[step_of[id(o)]].name!r}" for o in later]
            message = f"step {step.name!r}: this selector matches no resource"
            if lost:
                message += ", so " + _listed(lost)
            # Objects of its kind that fell to a later step are what it may mean when no name is near
            # (a kustomize namespace: renames the Namespace apps to shop).
            message += _suggestion(selector, _near(selector, objects) or later[:NEAR_NAMES], objects)
            field = f"functionConfig.{where}[{position}].selectors[{j}]"
            if lost and config.unmatched_selectors == "error":
                results.error(message + "; to accept this, set unmatchedSelectors: warning", field=field)
            else:
                results.warning(message, field=field)


def config_kinds(config: SetStepsConfig) -> tuple[tuple[str, list[StepConfig]], ...]:
    """The config's three lists of steps under their field names, in assign.py's order."""
    return (("steps", config.steps), ("onFailure", config.on_failure), ("onDelete", config.on_delete))


def _meant(selector: Selector, objects: list[Obj]) -> list[Obj]:
    """The objects ``selector`` may have meant: of the kind it selects (every other field matching but the
    name), or, when it names no kind, any object whose name contains the selector's name."""
    if not selector.name:
        return []
    rest = replace(selector, name="")
    return [
        obj
        for obj in objects
        if rest.matches(obj)
        and (selector.kind or selector.api_version or any(selector.name in n for n in _names(obj)))
    ]


def _defaulted(obj: Obj, steps: list[StepConfig]) -> bool:
    """In its step only because no pin and no selector placed it elsewhere (the default step)."""
    return STEP_PIN not in annotations_of(obj) and not any(matches_any(s.selectors, obj) for s in steps)


def _names(obj: Obj) -> list[str]:
    base = annotations_of(obj).get(JOB_BASE_NAME)
    return [*names_of(obj), *([str(base)] if base else [])]


def _near(selector: Selector, objects: list[Obj]) -> list[Obj]:
    """Objects of the selector's kind whose names contain the selector's name (a namePrefix, nameSuffix or
    hash), then those with a close name (a typo); each once, at most ``NEAR_NAMES``."""
    if not selector.name:
        return []
    kind = [obj for obj in objects if not selector.kind or ref_of(obj).kind == selector.kind]
    containing = [obj for obj in kind if any(selector.name in n for n in _names(obj))]
    by_name: dict[str, Obj] = {}
    for obj in kind:
        for name in _names(obj):
            by_name.setdefault(name, obj)
    close = [by_name[n] for n in difflib.get_close_matches(selector.name, list(by_name), NEAR_NAMES, 0.6)]
    found = {id(obj): obj for obj in [*containing, *close]}
    return list(found.values())[:NEAR_NAMES]


def lasting_name(obj: Obj) -> str:
    """The name a selector can use release after release: a hashed Job's base name, a generated
    ConfigMap's or Secret's name without the content hash, else the name (prefix and suffix included)."""
    base = annotations_of(obj).get(JOB_BASE_NAME)
    if isinstance(base, str) and base:
        return base
    return name_before_hash(obj)


def _suggestion(selector: Selector, near: list[Obj], objects: list[Obj]) -> str:
    if not near:
        return ""
    options: list[str] = []
    for obj in near:
        options.append(_flow(replace(selector, name=lasting_name(obj))))
        label = _unique_label(obj, objects)
        if label is not None:
            options.append(_flow(replace(selector, name="", labels={**selector.labels, **label})))
    shown = ", ".join(str(ref_of(obj)) for obj in near)
    options = list(dict.fromkeys(options))
    return f"; it may mean {shown}: select {' or '.join(options)}"


def _unique_label(obj: Obj, objects: list[Obj]) -> dict[str, str] | None:
    """A label of ``obj`` that no other object of its kind has: it survives any rename."""
    ref = ref_of(obj)
    others = [o for o in objects if o is not obj and ref_of(o).kind == ref.kind]
    for key, value in sorted((str(k), str(v)) for k, v in labels_of(obj).items()):
        if not any(str(labels_of(o).get(key)) == value for o in others if key in labels_of(o)):
            return {key: value}
    return None


_BARE = re.compile(r"^[A-Za-z][A-Za-z0-9._/-]*$")
_YAML11 = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null"})


def _scalar(text: str) -> str:
    bare = _BARE.match(text) and text.lower() not in _YAML11
    return text if bare else json.dumps(text)


def _flow(selector: Selector) -> str:
    """The selector as a YAML flow mapping, as the config writes it."""
    parts = []
    for key, value in (
        ("apiVersion", selector.api_version),
        ("kind", selector.kind),
        ("namespace", selector.namespace),
        ("name", selector.name),
    ):
        if value:
            parts.append(f"{key}: {_scalar(value)}")
    for key, mapping in (("labels", selector.labels), ("annotations", selector.annotations)):
        if mapping:
            inner = ", ".join(f"{_scalar(k)}: {_scalar(v)}" for k, v in mapping.items())
            parts.append(f"{key}: {{{inner}}}")
    return "{" + ", ".join(parts) + "}"


def _listed(parts: list[str]) -> str:
    shown = parts[:SHOWN] + ([f"{len(parts) - SHOWN} more"] if len(parts) > SHOWN else [])
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]
