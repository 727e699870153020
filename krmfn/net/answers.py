"""An answer of krmfn.net: its status line and headers read under their ceilings, and a body read once,
whatever its framing (``Content-Length``, chunked, until the connection closes), under a ceiling:
whole (``read_all``), its start (``read_prefix``), or line by line (``lines``).

A connection whose answer was read to its end goes back to its pool; any other is closed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import TracebackType
from typing import Protocol

from krmfn.net.budget import Timer
from krmfn.net.ceilings import MAX_CHUNK_LINE, MAX_HEAD, MAX_HEADER_LINES, size
from krmfn.net.errors import Malformed, TooLarge, Unreachable
from krmfn.net.sockets import RECV, Conn
from krmfn.numbers import whole

LENGTH, CHUNKED, CLOSE, EMPTY = range(4)


class Returns(Protocol):
    """Where a connection goes when its answer was read to the end: its pool."""

    def give(self, conn: Conn) -> None: ...


class Response:
    """An answer: status, reason, headers (names in lower case, repeated ones joined by ``, ``), and a
    body to read once, under a ceiling. Close it (or use ``with``) when not reading it to the end."""

    def __init__(
        self,
        status: int,
        reason: str,
        headers: dict[str, str],
        conn: Conn,
        *,
        framing: int,
        length: int,
        timer: Timer | None,
        pool: Returns | None,
        reusable: bool,
    ) -> None:
        self.status = status
        self.reason = reason
        self.headers = headers
        self._conn: Conn | None = conn
        self._framing = framing
        self._left = length  # bytes left: of the body (LENGTH) or of the current chunk (CHUNKED)
        self._timer = timer
        self._pool = pool
        self._reusable = reusable
        if framing == EMPTY:
            self._finish()

    @classmethod
    def of(
        cls, status: int, body: bytes = b"", headers: Mapping[str, str] | None = None, reason: str = ""
    ) -> Response:
        """An answer held in memory, read as an answer from the network is: for tests' transports."""
        found = {name.lower(): value for name, value in (headers or {}).items()}
        return cls(status, reason, found, Conn(None, body), framing=CLOSE, length=0, timer=None, pool=None,
                   reusable=False)  # fmt: skip

    # --- reading -----------------------------------------------------------------------------------------

    def read(self, count: int = RECV) -> bytes:
        """At most ``count`` bytes of the body; ``b""`` at its end."""
        conn = self._conn
        if conn is None:
            return b""
        if self._framing == CHUNKED and self._left == 0 and not self._next_chunk(conn):
            return b""
        buf = conn.buf
        if not buf and self._fill(conn) == 0:
            if self._framing == CLOSE:
                self._reusable = False
                self._finish()
                return b""
            raise Unreachable("the connection closed before the end of the answer")
        take = min(count, len(buf)) if self._framing == CLOSE else min(count, len(buf), self._left)
        data = bytes(buf[:take])
        del buf[:take]
        if self._framing != CLOSE:
            self._left -= take
            if self._left == 0:
                if self._framing == LENGTH:
                    self._finish()
                else:
                    self._chunk_end(conn)
        return data

    def read_all(self, limit: int, what: str = "answer") -> bytes | bytearray:
        """The whole body; ``TooLarge`` past ``limit`` bytes (before reading, when the length is given)."""
        conn = self._conn
        if conn is None:
            return b""
        if self._framing == LENGTH:
            need = self._left
            if need > limit:
                self.close()
                raise TooLarge(f"the {what} is {need} bytes, over its ceiling of {size(limit)}")
            buf = conn.buf
            while len(buf) < need:
                if self._fill(conn) == 0:
                    self.close()
                    raise Unreachable("the connection closed before the end of the answer")
            if len(buf) == need:
                data: bytes | bytearray = buf  # no copy (json.loads takes a bytearray)
                conn.buf = bytearray()
            else:
                data = bytes(buf[:need])
                del buf[:need]
            self._left = 0
            self._finish()
            return data
        out = bytearray()
        while chunk := self.read():
            out += chunk
            if len(out) > limit:
                self.close()
                raise TooLarge(f"the {what} is over its ceiling of {size(limit)}")
        return out

    def read_prefix(self, limit: int) -> bytes:
        """The first ``limit`` bytes of the body (all of it when shorter); the rest is never read."""
        out = bytearray()
        while len(out) < limit and (chunk := self.read(limit - len(out))):
            out += chunk
        self.close()
        return bytes(out)

    def lines(self, max_line: int, max_total: int, what: str = "stream") -> Iterator[bytes]:
        """The body's lines (without ``\\n`` and a ``\\r`` before it), each at most ``max_line`` bytes,
        all together at most ``max_total``; ``TooLarge`` past either."""
        pending = bytearray()
        total = 0
        while True:
            chunk = self.read()
            if not chunk:
                if pending:
                    yield bytes(pending)
                return
            total += len(chunk)
            if total > max_total:
                self.close()
                raise TooLarge(f"the {what} is over its ceiling of {size(max_total)} in all")
            searched = len(pending)
            pending += chunk
            start = 0
            while (end := pending.find(b"\n", searched)) >= 0:
                if end - start > max_line:
                    break  # a line over the ceiling: refused below, as the one still arriving is
                line = pending[start:end]
                yield bytes(line[:-1] if line.endswith(b"\r") else line)
                start = searched = end + 1
            del pending[:start]
            if len(pending) > max_line:
                self.close()
                raise TooLarge(f"a line of the {what} is over its ceiling of {size(max_line)}")

    # --- the end -----------------------------------------------------------------------------------------

    def close(self) -> None:
        """Done with the answer: a connection whose answer was not read to the end is closed."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def __enter__(self) -> Response:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _finish(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        if self._reusable and self._pool is not None and not conn.buf:
            self._pool.give(conn)
        else:
            conn.close()

    def _fill(self, conn: Conn) -> int:
        if self._timer is None:
            return 0
        return conn.fill(self._timer)

    # --- chunked bodies ----------------------------------------------------------------------------------

    def _line(self, conn: Conn) -> bytes:
        buf = conn.buf
        searched = 0
        while (end := buf.find(b"\r\n", searched)) < 0:
            if len(buf) > MAX_CHUNK_LINE:
                self.close()
                raise Malformed("a chunk header is too long")
            searched = max(len(buf) - 1, 0)
            if self._fill(conn) == 0:
                self.close()
                raise Unreachable("the connection closed before the end of the answer")
        line = bytes(buf[:end])
        del buf[: end + 2]
        return line

    def _next_chunk(self, conn: Conn) -> bool:
        """Reads the next chunk's size; False (and the trailers read) at the last chunk."""
        text = self._line(conn).partition(b";")[0].strip()
        if not text or len(text) > 16 or any(c not in b"0123456789abcdefABCDEF" for c in text):
            self.close()
            raise Malformed("a chunk size is not a hexadecimal number")
        self._left = int(text, 16)
        if self._left:
            return True
        lines = 0
        while self._line(conn):  # trailers, up to the empty line
            lines += 1
            if lines > MAX_HEADER_LINES:
                self.close()
                raise TooLarge("the answer's trailers are too many")
        self._finish()
        return False

    def _chunk_end(self, conn: Conn) -> None:
        if self._line(conn):
            self.close()
            raise Malformed("a chunk does not end with CRLF")


def read_head(conn: Conn, timer: Timer) -> tuple[int, str, dict[str, str], bool]:
    """The status, reason, headers and whether it is HTTP/1.1, of the next answer on ``conn`` (1xx
    answers skipped)."""
    while True:
        buf = conn.buf
        searched = 0
        while (end := buf.find(b"\r\n\r\n", searched)) < 0:
            if len(buf) > MAX_HEAD:
                raise TooLarge(f"the answer's headers are larger than {size(MAX_HEAD)}")
            searched = max(len(buf) - 3, 0)
            if conn.fill(timer) == 0:
                if buf:
                    raise Unreachable("the connection closed within the answer's headers")
                raise Unreachable("the server closed the connection without an answer")
        if end > MAX_HEAD:
            raise TooLarge(f"the answer's headers are larger than {size(MAX_HEAD)}")
        lines = bytes(buf[:end]).split(b"\r\n")
        del buf[: end + 4]
        version, _, rest = lines[0].partition(b" ")
        code, _, reason = rest.partition(b" ")
        if not version.startswith(b"HTTP/1.") or len(code) != 3 or not code.isdigit():
            raise Malformed("the answer is not HTTP/1.1")
        status = int(code)
        if len(lines) > MAX_HEADER_LINES + 1:
            raise TooLarge(f"the answer has more than {MAX_HEADER_LINES} headers")
        if 100 <= status < 200 and status != 101:
            continue
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(b":")
            if not sep or not name or name[-1:] in (b" ", b"\t") or name[:1] in (b" ", b"\t"):
                raise Malformed("a header line of the answer is not 'name: value'")
            key = name.decode("latin-1").lower()
            text = value.strip(b" \t").decode("latin-1")
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
        return status, reason.decode("latin-1")[:200], headers, version == b"HTTP/1.1"


def framing_of(method: str, status: int, headers: dict[str, str]) -> tuple[int, int]:
    if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
        return EMPTY, 0
    coding = headers.get("transfer-encoding")
    if coding is not None:
        return (CHUNKED, 0) if coding.rpartition(",")[2].strip().lower() == "chunked" else (CLOSE, 0)
    declared = headers.get("content-length")
    if declared is None:
        return CLOSE, 0
    values = {part.strip() for part in declared.split(",")}
    value = values.pop() if len(values) == 1 else ""
    length = whole(value, 10**18 - 1)  # krmfn.numbers: ASCII digits only, bounded
    if length is None:
        raise Malformed("the answer's Content-Length is not one number")
    return (LENGTH, length) if length else (EMPTY, 0)
