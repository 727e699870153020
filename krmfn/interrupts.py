"""SIGINT and SIGTERM that arrive before ``krmfn apply`` can act on them.

The runner stops cleanly on a signal (exit 130/143, a JSON ``result`` event) once it runs; before that,
importing the HTTP stack and reading the input take a second or more, and a CI job cancelled then killed
the process with no event at all. ``krmfn apply`` records signals from its first line (``record``) and
the runner replays them (``take``) as soon as it exists, before it sends anything.
"""

from __future__ import annotations

import signal
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM)
_pending: list[int] = []


def _remember(signum: int, frame: FrameType | None) -> None:
    del frame
    _pending.append(signum)


def record() -> None:
    """From now on SIGINT and SIGTERM are remembered, not acted on, until someone takes them."""
    for sig in SIGNALS:
        signal.signal(sig, _remember)


def take() -> list[int]:
    """The signals received since ``record``, oldest first; forgets them."""
    taken = list(_pending)
    _pending.clear()
    return taken
