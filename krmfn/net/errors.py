"""What can go wrong with a request, one type per cause. Each message is one line that quotes nothing
the server sent and no credential: callers add what was asked (a redacted URL, an object)."""

from __future__ import annotations

from krmfn.errors import KrmfnError


class NetError(KrmfnError):
    """A request did not get a usable answer."""


class Unreachable(NetError):
    """No answer: the name does not resolve, the connection is refused, reset or closed, TLS failed."""


class TimedOut(NetError):
    """The request's own time ran out: no complete answer within its total, or no data within its idle
    timeout (ceilings.py)."""


class TooLarge(NetError):
    """The answer (its headers, its body, one line of a stream, or a whole stream) is over its ceiling."""


class Malformed(NetError):
    """The answer is not HTTP/1.1 as the stack reads it (a status line, a header, a chunk)."""


class Refused(NetError):
    """The stack refused to send the request: a destination the address rule forbids (addresses.py), a
    header value holding a line break, a proxy it cannot use."""


class Stopped(NetError):
    """The request was ended from outside: a signal (``signum``), the run's deadline, or its caller."""

    def __init__(self, message: str, signum: int | None = None) -> None:
        super().__init__(message)
        self.signum = signum
