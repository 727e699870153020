"""A Job's triggers (``krmfn.dev/hash-from: image,configmap/db-schema``): what should run it again. One
place, because three readers must agree byte for byte, as for the whole-spec hash (krmfn/k8s/jobhash.py):
hash-job-names names the Job after its triggers, validate-jobs checks that the name still says them, and
``krmfn apply`` takes a live Job of that name, completed for the same triggers, as already run.

Triggers (a comma list; order, spaces around entries and case of nothing else are free):

- ``spec``: the whole spec, as without the annotation (``hash-from: spec`` alone is exactly that);
- ``image``: every container image of the pod template, init containers included;
- ``image:<container>``: one container's image;
- ``configmap/<name>``, ``secret/<name>``: the content of a ConfigMap or Secret the pod template
  references, hashed as set-config-checksum hashes it (krmfn/k8s/configdigest.py); ``<name>`` is the name
  the reference was written with, and is found again after kustomize renamed the object (a namePrefix,
  a nameSuffix, a generator's hash) the way the reference itself is resolved (krmfn/k8s/kustomize_names.py);
- ``field:<path>``: the value at a field path of the spec (krmfn/k8s/triggerpaths.py).

The name's hash is sha256 over ``{"hashFrom": [[trigger, value], ...]}`` sorted by trigger, as sorted-key
JSON; the runner's run hash is the same document at 32 characters, so a run is one set of trigger values.
"""

from __future__ import annotations

from typing import Any

from krmfn.k8s import triggerpaths
from krmfn.k8s.jobhash import HASH_LENGTH, spec_identity
from krmfn.k8s.jobspec import digest
from krmfn.k8s.kobj import Obj, annotations_of, ref_of
from krmfn.k8s.kustomize_name_fields import CONFIGMAP, SECRET, rewritten_fields
from krmfn.k8s.kustomize_names import Names, as_built, names_of
from krmfn.k8s.names import is_label, is_subdomain
from krmfn.k8s.podtemplates import TEMPLATE_CONTAINER_LISTS, PodTemplate, spec_refs
from krmfn.records import FrozenRecord

HASH_FROM = "krmfn.dev/hash-from"
FIELD = f"metadata.annotations.{HASH_FROM}"
RUN_HASH_LENGTH = 32
MAX_TRIGGERS = 16
MAX_VALUE = 4096  # characters: 16 field paths of 256; a longer value is refused before it is echoed
FORMS = "spec, image, image:<container>, configmap/<name>, secret/<name> or field:<path>"
_KINDS = {"configmap": "ConfigMap", "secret": "Secret"}


class TriggerError(ValueError):
    """A hash-from value that cannot be read, or a trigger that names nothing in the Job or the stream."""


class Trigger(FrozenRecord):
    """One trigger: ``kind`` (spec, image, configmap, secret, field), its argument, and how it is spelled."""

    __slots__ = _fields = ("kind", "arg", "path")

    def __init__(self, kind: str, arg: str = "", path: tuple[triggerpaths.Segment, ...] = ()) -> None:
        self.kind = kind
        self.arg = arg
        self.path = path

    @property
    def text(self) -> str:
        """The trigger as a hash-from entry spells it (``image:migrate``, ``configmap/db-schema``)."""
        kind, arg = self.kind, self.arg
        return f"{kind}:{arg}" if kind in ("image", "field") and arg else f"{kind}/{arg}" if arg else kind


def _one(entry: str) -> Trigger:
    if entry in ("spec", "image"):
        return Trigger(entry)
    kind, colon, rest = entry.partition(":")
    if colon and kind == "image":
        if not is_label(rest):
            raise TriggerError(f"{entry!r}: {rest!r} is not a container name (a DNS-1123 label)")
        return Trigger("image", rest)
    if colon and kind == "field":
        try:
            path = triggerpaths.parse_path(rest)
        except triggerpaths.PathError as err:
            raise TriggerError(f"{entry!r}: the path {err}") from None
        return Trigger("field", triggerpaths.format_path(path), path)
    kind, slash, name = entry.partition("/")
    if slash and kind in _KINDS:
        if not is_subdomain(name):
            raise TriggerError(f"{entry!r}: {name!r} is not a {_KINDS[kind]} name (a DNS-1123 subdomain)")
        return Trigger(kind, name)
    raise TriggerError(f"unknown trigger {entry!r}: expected {FORMS}")


def parse_triggers(value: object) -> tuple[Trigger, ...]:
    """The triggers of a hash-from value, sorted by how they are spelled (the order written does not
    change the name). Raises TriggerError: an empty list or entry, an unknown trigger, a duplicate."""
    if not isinstance(value, str):
        raise TriggerError("expected a comma-separated string of triggers")
    if not value.strip():
        raise TriggerError(f"is empty: name at least one trigger ({FORMS})")
    if len(value) > MAX_VALUE:
        raise TriggerError(f"is longer than {MAX_VALUE} characters")
    entries = value.split(",")
    if len(entries) > MAX_TRIGGERS:
        raise TriggerError(f"names {len(entries)} triggers, more than {MAX_TRIGGERS}")
    found: dict[str, Trigger] = {}
    for number, raw in enumerate(entries, 1):
        entry = raw.strip()
        if not entry:
            raise TriggerError(f"entry {number} is empty (a doubled, leading or trailing comma)")
        trigger = _one(entry)
        if trigger.text in found:
            raise TriggerError(f"{trigger.text!r} is listed twice")
        found[trigger.text] = trigger
    if "image" in found and any(t.kind == "image" and t.arg for t in found.values()):
        one = next(t.text for t in found.values() if t.kind == "image" and t.arg)
        raise TriggerError(
            f"{one!r} is already covered by 'image' (every container's image): list one of them"
        )
    return tuple(found[text] for text in sorted(found))


def whole_spec(triggers: tuple[Trigger, ...]) -> bool:
    """``spec`` alone: the Job is named and run as without the annotation."""
    return [t.kind for t in triggers] == ["spec"]


def _containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    template = spec.get("template")
    pod = template.get("spec") if isinstance(template, dict) else None
    found: list[dict[str, Any]] = []
    for group in TEMPLATE_CONTAINER_LISTS:
        listed = pod.get(group) if isinstance(pod, dict) else None
        if isinstance(listed, list):
            found.extend(c for c in listed if isinstance(c, dict))
    return found


def _affixed(wanted: str, name: str) -> bool:
    """``name`` is ``wanted`` with a namePrefix and/or nameSuffix kustomize added (after a build, all the
    stream tells of them: the earlier names are gone)."""
    return name.startswith(f"{wanted}-") or name.endswith(f"-{wanted}") or f"-{wanted}-" in name


def referenced(job: Obj, kind: str, name: str, names: Names) -> Obj:
    """The ConfigMap or Secret ``kind``/``name`` the Job's pod template references, as the reference
    resolves; the name as written, an earlier name of the object, or that name with kustomize's affixes."""
    template = job.get("spec", {}).get("template") if isinstance(job.get("spec"), dict) else None
    if not isinstance(template, dict):
        raise TriggerError(f"{kind.lower()}/{name}: the Job has no pod template")
    namespace = ref_of(job).namespace
    rewritten = rewritten_fields(job)
    target_kind = CONFIGMAP if kind == "ConfigMap" else SECRET
    refs = [r for r in spec_refs(PodTemplate(template, "spec.template"), namespace) if r.kind == kind]
    spelled: list[tuple[str, Obj | None, list[str]]] = []
    for ref in refs:
        target = names.resolve(job, target_kind, ref.name, ref.field in rewritten, ref.namespace)
        spelled.append((ref.name, target, [ref.name, *(names_of(target) if target is not None else [])]))
    chosen = [s for s in spelled if name in s[2]] or [
        s for s in spelled if any(_affixed(name, n) for n in s[2])
    ]
    distinct = {id(s[1]) if s[1] is not None else s[0]: s for s in chosen}
    text = f"{kind.lower()}/{name}"
    if not distinct:
        listed = ", ".join(sorted({s[0] for s in spelled})) or "none"
        raise TriggerError(
            f"{text}: the pod template references no {kind} {name!r} (its {kind} references: {listed}); a "
            "trigger must be something the Job uses"
        )
    if len(distinct) > 1:
        raise TriggerError(
            f"{text}: matches the {kind} references {', '.join(sorted(s[0] for s in distinct.values()))}; "
            "name the one meant by its full name"
        )
    written, target, _ = next(iter(distinct.values()))
    if target is None:
        raise TriggerError(
            f"{text}: {kind} {written} is referenced but not in the stream, so its content cannot be hashed; "
            "render it with the Job"
        )
    return target


def _value(job: Obj, built: dict[str, Any], trigger: Trigger, names: Names) -> Any:
    from krmfn.k8s.configdigest import checksum  # only a configmap/secret trigger hashes content

    spec = built["spec"]
    if trigger.kind == "spec":
        return spec_identity(spec)
    if trigger.kind == "image":
        containers = _containers(spec)
        if not trigger.arg:
            return {str(c.get("name")): c.get("image") for c in containers}
        for container in containers:
            if container.get("name") == trigger.arg:
                return container.get("image")
        listed = ", ".join(str(c.get("name")) for c in containers) or "none"
        raise TriggerError(
            f"{trigger.text}: the pod template has no container {trigger.arg!r} (it has {listed})"
        )
    if trigger.kind == "field":
        try:
            return triggerpaths.evaluate(spec, trigger.path)
        except triggerpaths.PathError as err:
            raise TriggerError(f"{trigger.text}: {err}") from None
    return checksum([referenced(job, _KINDS[trigger.kind], trigger.arg, names)])


def document(job: Obj, triggers: tuple[Trigger, ...], names: Names) -> dict[str, Any]:
    """What the name hashes: each trigger with its value, the spec as the build will write it."""
    built = as_built(job, names)
    if not isinstance(built.get("spec"), dict):
        raise TriggerError("the Job has no spec mapping to take triggers from")
    return {"hashFrom": [[t.text, _value(job, built, t, names)] for t in triggers]}


class Triggered(FrozenRecord):
    """A Job's triggers and what they hash to: ``name_hash`` in its name, ``run_hash`` in the runner's
    record of the run."""

    __slots__ = _fields = ("triggers", "name_hash", "run_hash")

    def __init__(self, triggers: tuple[Trigger, ...], name_hash: str, run_hash: str) -> None:
        self.triggers = triggers
        self.name_hash = name_hash
        self.run_hash = run_hash

    @property
    def text(self) -> str:
        return ",".join(t.text for t in self.triggers)


def hash_triggers(job: Obj, triggers: tuple[Trigger, ...], names: Names) -> Triggered:
    """The hashes of ``triggers`` other than ``spec`` alone (whose hash is krmfn/k8s/jobhash.py's)."""
    found = document(job, triggers, names)
    return Triggered(triggers, digest(found, HASH_LENGTH), digest(found, RUN_HASH_LENGTH))


def of_job(job: Obj, names: Names) -> Triggered | None:
    """The triggers the Job's annotation names, hashed; None without the annotation or with ``spec``
    alone (the Job is what it was without it). Raises TriggerError."""
    notes = annotations_of(job)
    if HASH_FROM not in notes:
        return None
    triggers = parse_triggers(notes[HASH_FROM])
    return None if whole_spec(triggers) else hash_triggers(job, triggers, names)
