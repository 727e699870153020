"""URLs as krmfn prints them. Every URL in a message goes through ``redact`` (or ``origin_of``).

A kubeconfig's server may carry a password (``https://admin:S3CRET@host``), a proxy variable its
credentials, a registry's redirect or token realm a signed query (``X-Amz-Signature=``, ``token=``): none
of that may reach a terminal or a CI log. ``redact`` keeps what helps a reader (scheme, host, port,
path, the other parameters) and writes ``***`` for the rest, as kubectl masks a server's password.
"""

from __future__ import annotations

import re
from urllib.parse import SplitResult, urlsplit

MASK = "***"
_SECRET_NAMES = frozenset({"code", "sig", "pass", "pwd", "jwt", "bearer", "assertion"})
_SECRET_PARTS = ("token", "secret", "password", "passwd", "signature", "credential", "key", "auth", "session")
_HOST_CHARS = re.compile(r"[^a-z0-9.:\[\]-]")
_SCHEME_CHARS = re.compile(r"[^a-z0-9+.-]")


def secret_parameter(name: str) -> bool:
    """Whether a query parameter of this name may carry a secret (matched loosely: better too many)."""
    lowered = name.lower()
    return lowered in _SECRET_NAMES or any(part in lowered for part in _SECRET_PARTS)


def redact(url: str) -> str:
    """``url`` without its credentials: userinfo and the values of secret parameters become ``***``,
    the fragment is dropped. Text that is not a URL is shown as its scheme only."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError for a port that is not a number
    except ValueError:
        scheme = url.partition(":")[0]
        return f"{scheme if scheme.isalnum() else '?'}:{MASK}"
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rpartition('@')[2]}"
    query = "&".join(_redacted_parameter(item) for item in parts.query.split("&")) if parts.query else ""
    return SplitResult(parts.scheme, netloc, parts.path, query, "").geturl()


def _redacted_parameter(item: str) -> str:
    name, sep, _ = item.partition("=")
    return f"{name}={MASK}" if sep and secret_parameter(name) else item


def origin_of(url: str) -> tuple[str, str, int | None]:
    """(scheme, host in lower case, port with the scheme's default); ("", "", None) when not a URL."""
    try:
        parts = urlsplit(url)
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    except ValueError:
        return "", "", None
    return parts.scheme, (parts.hostname or "").lower(), port


def shown_origin(url: str) -> str:
    """Only the origin of ``url`` (``https://host:443``), host characters only: for a URL a hostile
    server chose, whose path and query krmfn never shows."""
    scheme, host, port = origin_of(url)
    if ":" in host:
        host = f"[{host}]"
    shown = f"{_SCHEME_CHARS.sub('?', scheme.lower())}://{_HOST_CHARS.sub('?', host)}"
    return shown + (f":{port}" if port else "")
