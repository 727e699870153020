"""Which triggers name a Job: its own ``krmfn.dev/hash-from`` annotation, or the functionConfig's
``triggers`` entry whose selectors match it, written into that annotation so validate-jobs and
``krmfn apply`` read the same triggers (krmfn/k8s/jobtriggers.py) without the functionConfig.

kpt writes a render back in place, so a value this function wrote is marked (``krmfn.dev/hash-from-config``):
the next render replaces it from the config, or removes it once no entry matches the Job any more, while
an annotation written by hand is never touched.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from krmfn.k8s.jobtriggers import FIELD, HASH_FROM
from krmfn.k8s.kobj import Obj, annotations_of, remove_annotation, set_annotation
from krmfn.sdk.selector import matches_any

if TYPE_CHECKING:
    from krmfn.functions.hash_job_names.config import TriggerConfig
    from krmfn.sdk.results import Results

FROM_CONFIG = "krmfn.dev/hash-from-config"


class Conflict(ValueError):
    """Two functionConfig entries name triggers for one Job."""


def _matches(entry: TriggerConfig, obj: Obj) -> bool:
    return (not entry.selectors or matches_any(entry.selectors, obj)) and not matches_any(entry.exclude, obj)


def choose(obj: Obj, entries: Sequence[TriggerConfig], results: Results) -> object:
    """The hash-from value of ``obj`` (None: its whole spec), with the annotation brought up to date.
    Raises Conflict when two entries match it."""
    notes = annotations_of(obj)
    matching = [i for i, entry in enumerate(entries) if _matches(entry, obj)]
    written = notes.get(HASH_FROM)
    if written is not None and FROM_CONFIG not in notes:
        if matching:
            results.info(
                f"the Job's own {HASH_FROM} takes precedence over functionConfig triggers[{matching[0]}]",
                obj,
                field=FIELD,
            )
        return written  # checked by the one parser, as the config's entries are
    if len(matching) > 1:
        raise Conflict(
            f"functionConfig triggers[{matching[0]}] and triggers[{matching[1]}] both match this Job; "
            "make their selectors exclusive, or give the Job its own annotation"
        )
    if matching:
        value = entries[matching[0]].value
        set_annotation(obj, HASH_FROM, value)
        set_annotation(obj, FROM_CONFIG, "true")
        return value
    if FROM_CONFIG in notes:  # written by an earlier render from an entry that no longer matches
        remove_annotation(obj, HASH_FROM)
        remove_annotation(obj, FROM_CONFIG)
    return None
