"""A trivial function that exercises the whole SDK: typed config, selection, results, summary.

It is the documented template for a new function and the subject of tests/fixtures/example/.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from krmfn import Function, ResourceList, Selector, select
from krmfn.k8s.kobj import set_annotation


@dataclass(frozen=True)
class AnnotateConfig:
    key: str = field(metadata={"help": "annotation key to set", "example": "example.com/owner"})
    value: str = field(default="", metadata={"help": "annotation value", "example": "team-a"})
    selectors: list[Selector] = field(default_factory=list, metadata={"help": "which items (default all)"})
    exclude: list[Selector] = field(default_factory=list, metadata={"help": "items to leave alone"})


def annotate(rl: ResourceList, config: AnnotateConfig) -> None:
    changed = 0
    for obj in select(rl.items, config.selectors, config.exclude):
        changed += set_annotation(obj, config.key, config.value)
    rl.results.info(f"annotated {changed} resource(s)")


FUNCTION = Function(
    name="example-annotate",
    kind="ExampleAnnotate",
    config=AnnotateConfig,
    transform=annotate,
    summary="set one annotation on the selected resources",
    example="""
apiVersion: fn.krmfn.dev/v1alpha1
kind: ExampleAnnotate
metadata: {name: owner}
key: example.com/owner
value: team-a
selectors: [{kind: Deployment}]
""",
)
