"""How the API server's answers are read, for HttpApi (kube.py): the request target, a field selector's
value, one watch event, a JSON body, an error status, the ``Date`` of an answer. Pure: bytes and strings
in, values or ``ApiStatusError`` out; a body that is not the API server's is named as such, never parsed
as something else."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import quote, urlencode

from krmfn.runner.cluster.api import ApiStatusError, Unreadable, WatchEvent, parse_json
from krmfn.runner.cluster.wire import Reply


def request_target(path: str, params: Mapping[str, str] | None) -> str:
    return f"{path}?{urlencode(params, quote_via=quote)}" if params else path


def field_value(value: str) -> str:
    """``value`` escaped for a field selector (apimachinery's ``fields.EscapeValue``), so a name cannot
    add terms to the selector."""
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def watch_event(line: bytes) -> WatchEvent | None:
    """One line of a watch: ``{"type": ..., "object": {...}}``, or None when it is not that."""
    try:
        event = parse_json(line)
    except Unreadable:
        raise
    except ValueError:
        return None
    found = event.get("object") if isinstance(event, dict) else None
    if not isinstance(found, dict):
        return None
    return str(event.get("type")), found


def decode(reply: Reply) -> dict[str, Any]:
    try:
        body = reply.json()
    except Unreadable as err:
        raise ApiStatusError(reply.status, "InvalidResponse", f"the answer {err}") from None
    except ValueError:  # a proxy's HTML page, a truncated body: not the API server's answer
        raise ApiStatusError(
            reply.status, "InvalidResponse", "the answer is not JSON (is the server an API server?)"
        ) from None
    return body if isinstance(body, dict) else {}


def status_error(reply: Reply) -> ApiStatusError:
    try:
        body = reply.json()
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    return ApiStatusError(
        reply.status, str(body.get("reason") or reply.reason), str(body.get("message") or "")
    )


def server_date(text: str) -> datetime | None:
    """An answer's ``Date`` header (``Thu, 03 Dec 2026 08:00:00 GMT``) as a time, or None: empty, too
    long for an HTTP date (29 characters), not a date, or without a zone."""
    if not text or len(text) > 64:
        return None
    try:
        date = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    return date if date.tzinfo is not None else None
