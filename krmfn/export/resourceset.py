"""``krmfn export resourceset``: the steps as one Flux Operator ResourceSet with ``.spec.steps``.

The operator applies and health-checks each step before the next (``.spec.wait`` gates the final
step), which is what ``krmfn apply`` does, so the stream keeps its meaning. Embedded objects lose the
krmfn step annotations (the step structure now says it) and kpt's bookkeeping annotations; the krmfn
force and recreate-on-failure switches become the operator's own annotations.

Every embedded object is a Go template for the operator (delimiters ``<<`` and ``>>``), so a literal
``<<`` in the rendered stream (a shell heredoc, say) is escaped to print itself.

Refused, naming the object, because the operator would reject or run them differently (measured on
the operator, tests/cluster/test_flux_operator.py): more than 20 steps, a mapping key ``<<`` (a YAML
merge key once templated), and a namespaced object without a namespace (krmfn apply defaults it, the
operator fails the step).
"""

from __future__ import annotations

import re
from typing import Any

from krmfn.duration import format_duration, parse_duration
from krmfn.errors import InputError
from krmfn.k8s.annotations import FORCES, RECREATES_ON_FAILURE, switch_value
from krmfn.k8s.kobj import PRESERVED_KEYS, PRESERVED_PREFIXES, Obj, ref_of
from krmfn.k8s.scopes import Scopes
from krmfn.k8s.step_grouping import STEP_ANNOTATIONS, Step, Steps, describe
from krmfn.yaml.io import plain

API_VERSION = "fluxcd.controlplane.io/v1"
KIND = "ResourceSet"
MAX_STEPS = 20  # maxItems of .spec.steps in the ResourceSet CRD
SWITCHES = dict((FORCES, RECREATES_ON_FAILURE))
# The CRD's pattern for .spec.steps[].timeout: Go durations without the ns and us units.
_TIMEOUT = re.compile(r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# Go's text/template prints a raw-string action verbatim. No spaces or quotes in it, so no YAML
# scalar style the operator's YAML round trip may pick (folding, escaping) can split or change it.
_LITERAL_DELIM = "<<`<<`>>"
# The operator writes each object as YAML, templates it, then reads the text back: a key that comes out
# as a bare << is YAML's merge key there, and no escape of ours can print it quoted.
MERGE_KEY = "<<"


def build(
    steps: Steps,
    name: str,
    namespace: str,
    service_account: str = "",
    *,
    allow_secrets: bool = False,
    drop_on_failure: bool = False,
    drop_on_delete: bool = False,
) -> Obj:
    _check_names(name, namespace)
    if steps.on_failure and not drop_on_failure:
        step = steps.on_failure[0]
        raise InputError(
            f"{describe(step.items[0])} is in the on-failure step {step.name!r} (krmfn.dev/on-failure): a "
            "ResourceSet has no step that runs only when another fails, so it would be applied on every "
            "reconciliation; pass --drop-on-failure to leave the on-failure steps out"
        )
    if steps.on_delete and not drop_on_delete:
        step = steps.on_delete[0]
        raise InputError(
            f"{describe(step.items[0])} is in the on-delete step {step.name!r} (krmfn.dev/on-delete): a "
            "ResourceSet has no step that runs only before its deletion, so it would be applied on every "
            "reconciliation; pass --drop-on-delete to leave the on-delete steps out (run them with krmfn "
            "delete -f, or by hand, before deleting the ResourceSet)"
        )
    if not allow_secrets:
        _refuse_secrets(steps)
    if len(steps.steps) > MAX_STEPS:
        over = steps.steps[MAX_STEPS]
        raise InputError(
            f"{len(steps.steps)} steps is over the ResourceSet limit of {MAX_STEPS} steps (step "
            f"{MAX_STEPS + 1}, {over.name!r}, holds {describe(over.items[0])}); "
            "merge steps in the set-steps config, or split the stream into several ResourceSets"
        )
    _check_objects([obj for step in steps.steps for obj in step.items])
    spec: dict[str, Any] = {}
    if service_account:
        spec["serviceAccountName"] = service_account
    spec["wait"] = steps.wait
    if steps.steps:
        spec["steps"] = [_step(step) for step in steps.steps]
    else:  # --allow-empty: .spec.steps needs one step at least, so the empty set is .spec.resources
        spec["resources"] = []
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def _refuse_secrets(steps: Steps) -> None:
    """A Secret embedded in a ResourceSet is plain text in an object that is not a Secret: readable by
    whoever may read ResourceSets (RBAC for Secrets no longer applies), not encrypted at rest where the
    API server encrypts Secrets only, and printed by tools that redact Secrets but not other kinds."""
    for step in steps.steps:
        for obj in step.items:
            if obj.get("kind") == "Secret" and obj.get("apiVersion") == "v1":
                raise InputError(
                    f"{describe(obj)}: a ResourceSet would hold this Secret's data in plain text, outside "
                    "Secret RBAC and Secret encryption at rest; deliver Secrets another way (SOPS, "
                    "External Secrets, a separate apply), or pass --allow-secrets to embed them anyway"
                )


def _check_names(name: str, namespace: str) -> None:
    if len(name) > 253 or not _DNS_SUBDOMAIN.match(name):
        raise InputError(f"--name {name!r} is not a valid object name (lowercase DNS subdomain)")
    if len(namespace) > 63 or not _DNS_LABEL.match(namespace):
        raise InputError(f"--namespace {namespace!r} is not a valid namespace name (lowercase DNS label)")


def _check_objects(objects: list[Obj]) -> None:
    """Refuses what the operator would reject or run differently from ``krmfn apply``."""
    scopes = Scopes(objects)
    for obj in objects:
        ref = ref_of(obj)
        if not ref.namespace and scopes.namespaced(ref.group, ref.kind):
            # krmfn apply defaults it from -n; the operator fails the step ("namespace not specified").
            raise InputError(
                f"{describe(obj)} has no metadata.namespace: the Flux Operator applies objects as written "
                "and fails on a namespaced one without it; set the namespace when rendering "
                "(a kustomize namespace: does it)"
            )
        path = _merge_key(obj, "")
        if path is not None:
            raise InputError(
                f"{describe(obj)}: the key '<<' at {path or '.'} cannot be handed to the Flux Operator: "
                "after its templating the key reads as a YAML merge key, which merges the value into "
                "the parent mapping or fails the build"
            )


def _merge_key(value: Any, path: str) -> str | None:
    """The path of the first mapping holding the key ``<<``, if any."""
    if isinstance(value, dict):
        if MERGE_KEY in value:
            return path
        for key, item in value.items():
            found = _merge_key(item, f"{path}.{key}")
            if found is not None:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = _merge_key(item, f"{path}[{i}]")
            if found is not None:
                return found
    return None


def _step(step: Step) -> dict[str, Any]:
    if len(step.name) > 63 or not _DNS_LABEL.match(step.name):
        raise InputError(f"step name {step.name!r} is not a DNS label, which ResourceSet steps require")
    out: dict[str, Any] = {"name": step.name}
    if step.timeout is not None:
        out["timeout"] = _timeout(step)
    out["resources"] = [embed(obj) for obj in step.items]
    return out


def _timeout(step: Step) -> str:
    text = str(step.timeout)
    if _TIMEOUT.match(text):
        return text
    normalized = format_duration(parse_duration(text))
    if not _TIMEOUT.match(normalized):
        raise InputError(
            f"step {step.name!r}: timeout {text!r} cannot be written for a ResourceSet, whose step "
            "timeouts use the units ms, s, m and h only"
        )
    return normalized


def embed(obj: Obj) -> Obj:
    """A plain copy of ``obj`` ready for ``.spec.steps[].resources``."""
    copy: Obj = plain(obj)
    meta = copy["metadata"]
    notes = meta.get("annotations")
    if isinstance(notes, dict):
        _translate(notes, obj)
        for key in list(notes):
            if key in STEP_ANNOTATIONS or key in PRESERVED_KEYS or key.startswith(PRESERVED_PREFIXES):
                del notes[key]
        if not notes:
            del meta["annotations"]
    escaped: Obj = escape_templates(copy)
    return escaped


def _translate(notes: dict[str, Any], obj: Obj) -> None:
    """krmfn's switches under the operator's names, each value in the lower case its exact reader of
    ``recreateOnFailure`` wants (``krmfn apply`` takes any case: the same object means the same)."""
    for ours, theirs in SWITCHES.items():
        given = {name: str(notes[name]) for name in (ours, theirs) if name in notes}
        if not given:
            continue
        for name, text in given.items():
            if switch_value(text) is None:
                raise InputError(
                    f"{describe(obj)}: annotation {name} must be 'enabled' or 'disabled', got {text!r}"
                )
        if len({switch_value(text) for text in given.values()}) == 2:
            raise InputError(
                f"{describe(obj)}: annotations {ours} ({given[ours]}) and {theirs} ({given[theirs]}) "
                "disagree; keep one of them"
            )
        notes.pop(ours, None)
        notes[theirs] = switch_value(next(iter(given.values())))


def escape_templates(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("<<", _LITERAL_DELIM)
    if isinstance(value, dict):
        return {escape_templates(k): escape_templates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [escape_templates(v) for v in value]
    return value
