"""A seeded sequence of renders, as a team's deploys would produce them, for the fault campaign.

Each render is a 3-step stream (the shape set-steps writes): step 0 a ConfigMap and a hash-named migration
Job; step 1 a Deployment, 0-3 extra ConfigMaps, sometimes a Secret, sometimes a failing hash-named Job
(with or without ``krmfn.dev/recreate-on-failure``); step 2 a fixed-name warm-up Job with
``krmfn.dev/force: enabled`` (a changed image is immutable, so it is deleted and re-created), sometimes
slow, waited for.

Versions only move forward (image ``app:vN``, config revision N, a revision label on the warm-up's pods
bumped when its labels change, a number per failing Job), so a Job spec never comes back: any Job run hash
seen twice on the cluster is a Job run again, which the invariants forbid. Hashed names stand in
for hash-job-names (base name + 8 hex digits of the spec) so every changed spec is a new Job.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
from dataclasses import dataclass, field
from typing import Any

Doc = dict[str, Any]
TIMEOUT = "60s"  # far above any fault's outage: a step that times out is a finding, not noise


def _notes(step: int, **extra: str) -> dict[str, str]:
    return {
        "krmfn.dev/step-index": str(step),
        "krmfn.dev/step": f"s{step}",
        "krmfn.dev/step-timeout": TIMEOUT,
        **extra,
    }


def _job(
    base: str,
    step: int,
    image: str,
    *,
    hashed: bool,
    labels: dict[str, str] | None = None,
    notes: dict[str, str] | None = None,
) -> Doc:
    template: Doc = {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": image}]}}
    if labels:
        template["metadata"] = {"labels": labels}
    spec: Doc = {"backoffLimit": 0, "template": template}
    name = base
    if hashed:
        name = f"{base}-{hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:8]}"
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "annotations": _notes(step, **(notes or {}))},
        "spec": spec,
    }


@dataclass
class RenderState:
    """What the next render is made of; ``mutate`` moves it on."""

    image: int = 1
    config: int = 1
    replicas: int = 2
    extras: set[int] = field(default_factory=set)
    next_extra: int = 0
    secret: bool = False
    flaky: int = 0  # >0: a failing Job with this version is rendered
    flaky_recreate: bool = False
    slow_warmup: bool = False
    warmup: int = 0  # bumped with every change of the warm-up's pod labels: its spec never comes back
    flakes: int = 0  # numbers every failing Job, for the same reason


@dataclass(frozen=True)
class Render:
    number: int
    docs: list[Doc]
    expect_failure: bool
    """A Job of this render fails by design: a clean run exits 1."""
    changes: tuple[str, ...]

    def keys(self) -> set[tuple[str, str]]:
        return {(d["kind"], d["metadata"]["name"]) for d in self.docs}


class Renders:
    """``next()`` gives the following render; the same seed gives the same sequence."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.state = RenderState()
        self.count = 0

    def next(self, *, clean: bool = False, repeat: bool = False) -> Render:
        """A new render; ``repeat``: the same objects again (a re-run); ``clean``: no failing Job."""
        changes: tuple[str, ...] = ("repeat",)
        if not repeat:
            changes = self._mutate(clean)
        elif clean:
            self.state.flaky = 0
        self.count += 1
        return Render(self.count, self.build(), self.state.flaky > 0, changes)

    def _mutate(self, clean: bool) -> tuple[str, ...]:
        s, rng, changes = self.state, self.rng, []
        if s.flaky:  # a failed Job is fixed by the next render, as a team would
            s.flaky = 0
            changes.append("flaky-fixed")
        if rng.random() < 0.45:
            s.image += 1
            changes.append(f"image v{s.image}")
        if rng.random() < 0.45:
            s.config += 1
            changes.append(f"config r{s.config}")
        if rng.random() < 0.3:
            if s.extras and rng.random() < 0.5:
                dropped = rng.choice(sorted(s.extras))
                s.extras.discard(dropped)
                changes.append(f"drop extra-{dropped}")
            elif len(s.extras) < 3:
                s.extras.add(s.next_extra)
                changes.append(f"add extra-{s.next_extra}")
                s.next_extra += 1
        if rng.random() < 0.15:
            s.secret = not s.secret
            changes.append("secret " + ("added" if s.secret else "dropped"))
        if rng.random() < 0.15:
            s.replicas = 1 + (s.replicas % 3)
            changes.append(f"replicas {s.replicas}")
        if rng.random() < 0.25:
            s.slow_warmup = not s.slow_warmup
            s.warmup += 1
            changes.append("warmup " + ("slow" if s.slow_warmup else "fast"))
        if not clean and rng.random() < 0.1:
            s.flakes += 1
            s.flaky = s.flakes
            s.flaky_recreate = rng.random() < 0.5
            changes.append("flaky job" + (" (recreate-on-failure)" if s.flaky_recreate else ""))
        return tuple(changes) or ("no change",)

    def build(self) -> list[Doc]:
        s = self.state
        image = f"app:v{s.image}"
        checksum = hashlib.sha256(f"r{s.config}".encode()).hexdigest()[:16]
        docs: list[Doc] = [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "app-config", "annotations": _notes(0)},
                "data": {"revision": str(s.config)},
            },
            _job("migrate", 0, image, hashed=True, notes={"chaos.krmfn.dev/config": checksum}),
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "web", "annotations": _notes(1)},
                "spec": {
                    "replicas": s.replicas,
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": {
                        "metadata": {
                            "labels": {"app": "web"},
                            "annotations": {"chaos.krmfn.dev/config": checksum},
                        },
                        "spec": {"containers": [{"name": "web", "image": image}]},
                    },
                },
            },
        ]
        for n in sorted(s.extras):
            docs.append(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": f"extra-{n}", "annotations": _notes(1)},
                    "data": {"n": str(n)},
                }
            )
        if s.secret:
            docs.append(
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": "creds", "annotations": _notes(1)},
                    "stringData": {"token": f"t{s.image}"},
                }
            )
        if s.flaky:
            notes = {"krmfn.dev/recreate-on-failure": "enabled"} if s.flaky_recreate else {}
            docs.append(
                _job(
                    "flaky",
                    1,
                    f"app:f{s.flaky}",
                    hashed=True,
                    labels={"test.krmfn.dev/fail": "3"},
                    notes=notes,
                )
            )
        labels = {"chaos.krmfn.dev/rev": str(s.warmup)} | (
            {"test.krmfn.dev/slow": "3s"} if s.slow_warmup else {}
        )
        docs.append(
            _job(
                "warmup",
                2,
                image,
                hashed=False,
                labels=labels,
                notes={"krmfn.dev/force": "enabled", "krmfn.dev/wait": "true"},
            )
        )
        return copy.deepcopy(docs)
