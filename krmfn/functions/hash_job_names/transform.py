"""The transform: rename Jobs after their spec, check CronJob names, rewrite references to renamed Jobs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from krmfn import ResourceList, select
from krmfn.functions.hash_job_names.naming import hashed_name, name_problems_of, spec_hash, unhashed
from krmfn.functions.hash_job_names.references import Renames, rewrite_references
from krmfn.functions.hash_job_names.triggers import FROM_CONFIG, Conflict, choose
from krmfn.k8s.annotations import HASH_NAME, JOB_BASE_NAME
from krmfn.k8s.jobtriggers import FIELD, HASH_FROM, TriggerError, hash_triggers, parse_triggers, whole_spec
from krmfn.k8s.kobj import (
    Obj,
    annotations_of,
    is_local_config,
    metadata,
    ref_of,
    remove_annotation,
    set_annotation,
    set_scalar,
)
from krmfn.k8s.kustomize_names import Names, as_built, record_rename
from krmfn.k8s.names import indexed_completions, name_problems

if TYPE_CHECKING:
    from krmfn.functions.hash_job_names.config import HashJobNamesConfig

HASH_NAME_VALUES = ("enabled", "disabled")


def is_kind(obj: Obj, kind: str) -> bool:
    return obj.get("kind") == kind and ref_of(obj).group == "batch"


class Run:
    def __init__(self, rl: ResourceList, config: HashJobNamesConfig) -> None:
        self.rl = rl
        self.config = config
        self.names = Names(rl.items)
        # A trigger's ConfigMap or Secret is one that is deployed: local config never is (as the runner,
        # which never sees it, resolves the same trigger).
        self.deployed = Names(obj for obj in rl.items if not is_local_config(obj))
        self.triggered = 0
        self.renames = Renames()
        self.renamed = 0
        self.current = 0
        self.opted_out = 0
        self.restored = 0
        self.claimed: dict[tuple[str, str], Obj] = {}

    def job(self, obj: Obj) -> None:
        meta = metadata(obj)
        name = meta.get("name")
        if not isinstance(name, str) or not name:
            self.rl.results.info(
                "uses generateName, so the API server names it on create; left alone",
                obj,
                field="metadata.generateName",
            )
            return
        notes = annotations_of(obj)
        mode = notes.get(HASH_NAME, "enabled")
        if mode not in HASH_NAME_VALUES:
            self.rl.results.error(
                f"expected one of {', '.join(HASH_NAME_VALUES)}",
                obj,
                field=f"metadata.annotations.{HASH_NAME}",
                current_value=mode,
            )
            return
        recorded = notes.get(JOB_BASE_NAME)
        stripped = unhashed(name, recorded) if isinstance(recorded, str) and recorded else None
        from_note = stripped is not None and stripped == recorded
        base = stripped or name
        if mode == "disabled":
            self.opt_out(obj, name, base)
            return
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            self.rl.results.error("a Job needs a spec mapping to hash its name from", obj, field="spec")
            return
        digest = self.digest(obj)
        if digest is None:
            return
        new = hashed_name(base, digest)
        problems = name_problems_of(base, new, indexed_completions(spec))
        if problems:
            field = f"metadata.annotations.{JOB_BASE_NAME}" if from_note else "metadata.name"
            self.rl.results.error(
                f"Job base name {base!r} cannot name a Job: {'; '.join(problems)}", obj, field=field
            )
            return
        if not self.claim(obj, new):
            return
        if new == name:
            self.current += 1
        else:
            self.rename(obj, name, base, new)
            self.renamed += 1
        set_annotation(obj, JOB_BASE_NAME, base)

    def digest(self, obj: Obj) -> str | None:
        """The name's hash: of the Job's triggers when it names some, else of its whole spec; None after
        an error result."""
        try:
            value = choose(obj, self.config.triggers, self.rl.results)
        except Conflict as err:
            self.rl.results.error(str(err), obj, field=FIELD)
            return None
        try:
            triggers = parse_triggers(value) if value is not None else None
            if triggers is None or whole_spec(triggers):
                return spec_hash(as_built(obj, self.names)["spec"])
            found = hash_triggers(obj, triggers, self.deployed).name_hash
        except TriggerError as err:
            shown = value if isinstance(value, str) else None
            source = (
                f"; {HASH_FROM} was written from the functionConfig's triggers"
                if FROM_CONFIG in annotations_of(obj)
                else ""
            )
            self.rl.results.error(f"{err}{source}", obj, field=FIELD, current_value=shown)
            return None
        self.triggered += 1
        return found

    def opt_out(self, obj: Obj, name: str, base: str) -> None:
        """An opted-out Job goes back to its base name, so turning hashing off is undone in place too."""
        self.opted_out += 1
        if self.claim(obj, base) and base != name:
            self.rename(obj, name, base, base)
            self.restored += 1
        remove_annotation(obj, JOB_BASE_NAME)

    def claim(self, obj: Obj, new: str) -> bool:
        """Whether ``new`` is free in the namespace of ``obj``; an error result when it is not."""
        namespace = ref_of(obj).namespace
        other = self.claimed.setdefault((namespace, new), obj)
        if other is obj:
            return True
        self.rl.results.error(
            f"would be named {new!r}, the same as {ref_of(other)}; give one of them another base name",
            obj,
            field="metadata.name",
        )
        return False

    def rename(self, obj: Obj, name: str, base: str, new: str) -> None:
        record_rename(obj)  # inside kustomize: an overlay's patch for `migrate` still finds it
        set_scalar(metadata(obj), "name", new)
        self.renames.add(ref_of(obj).namespace, name, base, new)

    def cronjob(self, obj: Obj) -> None:
        if HASH_FROM in annotations_of(obj):
            self.rl.results.warning(
                f"{HASH_FROM} has no effect on a CronJob: each of its runs is a new Job, named by the "
                "controller; remove it",
                obj,
                field=FIELD,
            )
        name = metadata(obj).get("name")
        problems = name_problems("CronJob", name) if isinstance(name, str) and name else []
        if problems:
            self.rl.results.error(
                f"invalid CronJob name: {'; '.join(problems)}", obj, field="metadata.name", current_value=name
            )

    def summary(self, references: int) -> str:
        parts = [f"renamed {self.renamed} Job(s)"]
        if self.current:
            parts.append(f"{self.current} already had their hashed name")
        if self.triggered:
            parts.append(f"{self.triggered} named after their triggers ({HASH_FROM})")
        if self.opted_out:
            parts.append(f"{self.opted_out} opted out with {HASH_NAME}=disabled")
        if self.restored:
            parts.append(f"{self.restored} opted-out Job(s) given back their base name")
        if references:
            parts.append(f"rewrote {references} reference annotation(s)")
        return "; ".join(parts)


def hash_job_names(rl: ResourceList, config: HashJobNamesConfig) -> None:
    run = Run(rl, config)
    for obj in select(rl.items, config.selectors, config.exclude):
        if is_kind(obj, "Job"):
            run.job(obj)
        elif is_kind(obj, "CronJob"):
            run.cronjob(obj)
    references = 0
    if len(run.renames):
        references = sum(rewrite_references(obj, run.renames) for obj in rl.items if not is_local_config(obj))
    rl.results.info(run.summary(references))
