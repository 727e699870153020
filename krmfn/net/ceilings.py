"""Every kind of request krmfn sends, with its byte ceiling and its timeouts: the one table.

A ceiling bounds what one answer may make krmfn hold; a total bounds the whole request (connecting, the
headers, the body: a server that trickles one byte a second cannot keep it alive), an idle timeout the
silence between two reads (a dead connection is noticed before the total runs out). The run's own
deadline and a signal end a request sooner (budget.py). Figures are generous for what a real server
sends and small against the memory a hostile one could make krmfn use: docs/security.md.
"""

from __future__ import annotations

from dataclasses import dataclass

KiB = 1024
MiB = 1024 * KiB

MAX_HEAD = 64 * KiB
"""An answer's status line and headers together (http.client allows 100 lines of 64 KiB each)."""
MAX_HEADER_LINES = 100
MAX_CHUNK_LINE = 4 * KiB
"""One ``chunk-size [; extensions]`` line of a chunked body."""
TICK = 0.25
"""The longest a wait on a socket lasts before the request checks its budget again: how soon a signal or
the run's deadline ends a request blocked on a silent or trickling server."""
GRACE = 5.0
"""After a signal or the run's deadline, the time left for what a run does to stop cleanly (release its
lock, record how it ended); a second signal ends that too."""


@dataclass(frozen=True)
class Ceiling:
    what: str
    """How messages name the kind of answer."""
    max_bytes: int
    """The body's ceiling (for a stream: the whole stream)."""
    total: float
    """Seconds for the whole request, from connecting to the last byte."""
    idle: float
    """Seconds without a byte that end the request."""
    connect: float = 10.0
    max_line: int = 0
    """For a stream of lines (a watch): one line's ceiling."""


# The runner's requests to the API server. An object is at most ~1.5 MiB in etcd (3 MiB as a request),
# a group's discovery a few KiB; a list page that is over its ceiling is asked for again in smaller
# pages (kube.py), so only a single object over 64 MiB fails a list.
OBJECT = Ceiling("answer", 64 * MiB, total=60.0, idle=15.0)
LIST = Ceiling("list page", 64 * MiB, total=60.0, idle=15.0)
DISCOVERY = Ceiling("discovery answer", 8 * MiB, total=60.0, idle=15.0)
WATCH = Ceiling("watch", 256 * MiB, total=90.0, idle=90.0, max_line=64 * MiB)
"""The server ends a watch after 60 s (``timeoutSeconds``); one event is one object. Past a ceiling the
watch ends as a dropped one does, and is resumed from the last version seen."""
LOGS = Ceiling("log", 64 * KiB, total=5.0, idle=2.0, connect=2.0)
"""The request asks for ``limitBytes`` 64 KiB; a server that ignores it is read as if it had not:
the first 64 KiB, then the connection is closed."""
FOLLOW = Ceiling("log stream", 16 * MiB, total=24 * 3600.0, idle=24 * 3600.0, connect=2.0, max_line=64 * KiB)
"""``apply --follow``: a container may be silent for as long as its step waits, so only the step's end
(the request's ``stop``) ends a quiet stream; one line over 64 KiB, or 16 MiB in one stream, ends it."""

# set-image's requests to a registry and its token service.
TAGS_PAGE = Ceiling("tag list page", 4 * MiB, total=30.0, idle=10.0)
TOKEN = Ceiling("token answer", 64 * KiB, total=30.0, idle=10.0)
REGISTRY_LOOKUP = 120.0
"""Seconds for every page, redirect and token of one repository's tags together."""
MAX_REGISTRY_HEADER = 8 * KiB
"""A registry's ``Link`` or ``WWW-Authenticate`` value longer than this is refused before it is parsed."""


def size(count: int) -> str:
    """``count`` bytes as messages write a ceiling: ``64 MiB``, ``64 KiB``, ``512 bytes``."""
    for unit, scale in (("MiB", MiB), ("KiB", KiB)):
        if count >= scale and count % scale == 0:
            return f"{count // scale} {unit}"
    return f"{count} bytes"


def seconds(value: float) -> str:
    return f"{value:g}s"
