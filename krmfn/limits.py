"""Input limits, so hostile or accidental input fails fast with a clear message instead of eating memory.

Each limit can be changed with an environment variable (the name is in ``ENV``).
"""

from __future__ import annotations

import os

from krmfn.records import FrozenRecord

ENV = {
    "max_bytes": "KRMFN_MAX_INPUT_BYTES",
    "max_fidelity_bytes": "KRMFN_MAX_FIDELITY_BYTES",
    "max_items": "KRMFN_MAX_ITEMS",
    "max_depth": "KRMFN_MAX_DEPTH",
    "max_nodes": "KRMFN_MAX_NODES",
    "max_render_bytes": "KRMFN_MAX_RENDER_BYTES",
}


class Limits(FrozenRecord):
    """The bounds on what a function reads (docs/limits.md)."""

    __slots__ = _fields = (
        "max_bytes",
        "max_fidelity_bytes",
        "max_items",
        "max_depth",
        "max_nodes",
        "max_render_bytes",
    )

    def __init__(
        self,
        *,
        max_bytes: int = 12 * 1024 * 1024,
        max_fidelity_bytes: int = 1024 * 1024,
        max_items: int = 200_000,
        max_depth: int = 100,
        max_nodes: int = 20_000_000,
        max_render_bytes: int = 8 * 1024 * 1024,
    ) -> None:
        self.max_bytes = max_bytes
        self.max_fidelity_bytes = max_fidelity_bytes
        self.max_items = max_items
        self.max_depth = max_depth
        self.max_nodes = max_nodes
        self.max_render_bytes = max_render_bytes

    max_bytes: int
    """Size of the input text. Reading it and writing it back takes up to ~60 times its size in RSS on
    the fast path (a flow list of empty mappings, the costliest shape measured: 16 MiB took 0.97 GiB;
    manifests ~16 times), so a maximal input stays well within 1 GiB (docs/limits.md)."""
    max_fidelity_bytes: int
    """Size of the input text ruamel's round trip may read: up to ~600 times its size in RSS (1 MiB of
    empty mappings took 0.63 GiB). The functions no longer use ruamel (``krmfn.yaml.edit`` reads at the
    fast path's cost); only the tests that use it as an oracle do."""
    max_items: int
    """Number of items in the ResourceList."""
    max_depth: int
    """Nesting depth of any value (Kubernetes objects rarely pass 20)."""
    max_nodes: int
    """Values after alias expansion: what a billion-laughs document explodes into."""
    max_render_bytes: int
    """Characters render-inputs' expressions may put into the manifests in one render, in total (each
    expression is bounded on its own too): 21 characters (``<< 'x' * 87000 * 3 >>``) build 261 KB, so a
    small manifest could otherwise produce gigabytes. 8 MiB of the costliest characters (astral, 4 bytes
    each, or escaped ten times longer) beside a maximal input of the costliest shape peaked at 912 MiB;
    16 MiB at 1007 (docs/limits.md). The work of the render is bounded with it."""

    RENDER_STEPS_PER_BYTE = 1024
    """Steps of evaluation work (about a nanosecond each: a character built or measured, 1,000 an
    operation, 8,000 a character of expression compiled, 2,500 a character of toYaml) a render may
    spend per character of its output budget: 2^33 steps, roughly ten seconds of CPU, at the default."""

    MAX_DEPTH_CEILING = 200
    """The deepest ``max_depth`` may be set: the YAML layers and the functions walk values recursively,
    and Python stops at 1,000 frames (a 990-level document under KRMFN_MAX_DEPTH=5000 hit it)."""

    @classmethod
    def from_env(cls) -> Limits:
        values: dict[str, int] = {}
        for field, var in ENV.items():
            raw = os.environ.get(var)
            if raw is None:
                continue
            try:
                values[field] = int(raw)
            except ValueError:
                values[field] = -1
            if values[field] <= 0:
                from krmfn.errors import LimitExceededError

                raise LimitExceededError(f"{var}={raw!r} is not a positive whole number")
            if field == "max_depth" and values[field] > cls.MAX_DEPTH_CEILING:
                from krmfn.errors import LimitExceededError

                raise LimitExceededError(
                    f"{var}={raw!r} is over {cls.MAX_DEPTH_CEILING}, the deepest krmfn walks"
                )
        return cls(**values)
