"""SIGINT and SIGTERM that arrive before ``krmfn apply`` can act on them.

The runner stops cleanly on a signal (exit 130/143, a JSON ``result`` event) once it runs; before that,
importing the HTTP stack and reading the input take a second or more, and a CI job cancelled then killed
the process with no event at all. ``krmfn apply`` records signals from its first line (``record``) and
the runner replays them (``take``) as soon as it exists, before it sends anything.

A signal the process was started with ignored stays ignored, as shells, Go and Python leave it: a
non-interactive shell starts ``krmfn apply &`` with SIGINT ignored so that the Ctrl-C meant for the
script's foreground command does not also stop the deploy in the background (kubectl, Helm, kapp and kpt
behave so).
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable, Iterator
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM)
_pending: list[int] = []


def _remember(signum: int, frame: FrameType | None) -> None:
    del frame
    _pending.append(signum)


def watched() -> list[int]:
    """SIGINT and SIGTERM, but for one the process was started with ignored."""
    return [sig for sig in SIGNALS if signal.getsignal(sig) is not signal.SIG_IGN]


def record() -> None:
    """From now on SIGINT and SIGTERM are remembered, not acted on, until someone takes them."""
    for sig in watched():
        signal.signal(sig, _remember)


@contextlib.contextmanager
def handled(on_signal: Callable[[int], None]) -> Iterator[None]:
    """``on_signal(signum)`` for each SIGINT and SIGTERM inside the block, first for those recorded while
    the command started; the handlers before it after it."""

    def handler(signum: int, frame: FrameType | None) -> None:
        del frame
        on_signal(signum)

    previous = {sig: signal.signal(sig, handler) for sig in watched()}
    try:
        for signum in take():
            on_signal(signum)
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def take() -> list[int]:
    """The signals received since ``record``, oldest first; forgets them."""
    taken = list(_pending)
    _pending.clear()
    return taken
