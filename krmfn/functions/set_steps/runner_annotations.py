"""Per-resource switches read by the runner (and by Flux Operator): validated here, never rewritten."""

from __future__ import annotations

from krmfn.k8s.annotations import FORCES, RECREATES_ON_FAILURE, switch_value
from krmfn.k8s.kobj import Obj, annotations_of
from krmfn.sdk.results import Results

# Each krmfn switch and the Flux Operator name that means the same thing.
SWITCHES = (FORCES, RECREATES_ON_FAILURE)


def check(obj: Obj, results: Results) -> None:
    notes = annotations_of(obj)
    for names in SWITCHES:
        given = {name: notes[name] for name in names if name in notes}
        for name, value in given.items():
            if switch_value(value) is None:  # in any case, as krmfn apply reads it
                results.error(
                    f"annotation {name} must be 'enabled' or 'disabled', got {value!r}",
                    obj,
                    field=f"metadata.annotations.{name}",
                    current_value=value,
                )
        if len(given) == 2 and len({switch_value(v) for v in given.values()}) == 2:
            first, second = names
            results.error(
                f"annotations {first} ({given[first]}) and {second} ({given[second]}) disagree; "
                "keep one of them",
                obj,
                field=f"metadata.annotations.{first}",
            )
        if names == RECREATES_ON_FAILURE and given and obj.get("kind") != "Job":
            results.warning(
                f"annotation {next(iter(given))} only affects Jobs; it has no effect on a {obj.get('kind')}",
                obj,
                field=f"metadata.annotations.{next(iter(given))}",
            )
