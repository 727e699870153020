"""Sockets for krmfn.net: a connection with its read buffer, made and used under a request's ``Timer``.

Every wait here (connecting, the TLS handshake, sending, each read) lasts at most a ``TICK`` and asks the
timer first, so a request ends when its total, the run's deadline or a signal says so, however slowly
the server sends. Failures are ``Unreachable`` with one line saying why (``describe``).
"""

from __future__ import annotations

import errno
import os
import select
import socket
import ssl

from krmfn.net.addresses import Resolved
from krmfn.net.budget import Timer
from krmfn.net.errors import Unreachable

RECV = 256 * 1024
_WAITING = frozenset({errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EALREADY, errno.EINTR})


class Conn:
    """A socket with its read buffer. ``sock`` None: an answer held in memory (``Response.of``)."""

    __slots__ = ("buf", "sock")

    def __init__(self, sock: socket.socket | None = None, buf: bytes = b"") -> None:
        self.sock = sock
        self.buf = bytearray(buf)

    def fill(self, timer: Timer) -> int:
        """Reads once from the socket into ``buf``; the count read, 0 at the end of the stream."""
        sock = self.sock
        if sock is None:
            return 0
        while True:
            sock.settimeout(timer.wait())
            try:
                data = sock.recv(RECV)
            except TimeoutError:
                continue
            except OSError as err:
                raise Unreachable(describe(err)) from None
            timer.progress()
            self.buf += data
            return len(data)

    def send(self, data: bytes | memoryview, timer: Timer) -> None:
        sock = self.sock
        assert sock is not None
        view = memoryview(data)
        while view:
            sock.settimeout(timer.wait())
            try:
                sent = sock.send(view)
            except TimeoutError:
                continue
            except OSError as err:
                raise Unreachable(describe(err)) from None
            timer.progress()
            view = view[sent:]

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        self.buf = bytearray()


def dial(found: list[Resolved], timer: Timer) -> socket.socket:
    """A TCP connection to the first of ``found`` that accepts one; each attempt bounded by the
    connect timeout and the request's timer."""
    last: BaseException | None = None
    for address in found:
        sock = socket.socket(address.family, socket.SOCK_STREAM)
        try:
            sock.setblocking(False)
            code = sock.connect_ex(address.sockaddr)
            if code in _WAITING:
                opened = timer.started
                while not writable(sock, timer.connect_wait(opened)):
                    pass
                code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if code:
                raise OSError(code, os.strerror(code))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return sock
        except OSError as err:
            sock.close()
            last = err
        except BaseException:
            sock.close()
            raise
    raise Unreachable(describe(last) if last is not None else "the name resolves to no address")


def handshake(tls: ssl.SSLContext, sock: socket.socket, host: str, timer: Timer) -> socket.socket:
    try:
        # wrap_socket itself reads: on a socket the server already reset it raises ECONNRESET.
        secure = tls.wrap_socket(sock, server_hostname=host, do_handshake_on_connect=False)
    except OSError as err:
        sock.close()
        raise Unreachable(describe(err)) from None
    try:
        while True:
            secure.settimeout(timer.wait())
            try:
                secure.do_handshake()
                return secure
            except TimeoutError:
                continue
    except OSError as err:
        secure.close()
        raise Unreachable(describe(err)) from None
    except BaseException:
        secure.close()
        raise


def writable(sock: socket.socket, seconds: float) -> bool:
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(sock, select.POLLOUT)
        return bool(poller.poll(seconds * 1000))
    return bool(select.select([], [sock], [], seconds)[1])


def readable(sock: socket.socket) -> bool:
    try:
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(sock, select.POLLIN)
            return bool(poller.poll(0))
        return bool(select.select([sock], [], [], 0)[0])
    except (OSError, ValueError):
        return True


def describe(err: BaseException) -> str:
    """One line for a socket or TLS failure."""
    if isinstance(err, ssl.SSLCertVerificationError):
        return f"TLS certificate verification failed: {err.verify_message or 'unknown reason'}"
    if isinstance(err, ssl.SSLError):
        return f"TLS failed: {err.reason or type(err).__name__}"
    if isinstance(err, ConnectionRefusedError):
        return "connection refused"
    if isinstance(err, ConnectionResetError):
        return "the connection was reset"
    if isinstance(err, BrokenPipeError):
        return "the connection was closed while sending"
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    text = str(err) or type(err).__name__
    return text.splitlines()[0]
