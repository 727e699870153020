"""The proxy for a registry request, from the environment as curl and httpx read it: ``https_proxy``
(or ``HTTPS_PROXY``, then ``all_proxy``/``ALL_PROXY``) for HTTPS destinations, except hosts that
``no_proxy``/``NO_PROXY`` names. Only HTTPS destinations use one, through a ``CONNECT`` tunnel (plain HTTP
goes to loopback only, which is never proxied). The proxy itself must be ``http://``; its credentials
(``http://user:pass@proxy:3128``) are sent as ``Proxy-Authorization`` and never printed (urls.redact).
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from krmfn.net.errors import Refused
from krmfn.net.urls import redact


@dataclass(frozen=True)
class Proxy:
    host: str
    port: int
    authorization: str | None
    url: str
    """As printed: redacted."""


def proxy_for(scheme: str, host: str, environ: Mapping[str, str] | None = None) -> Proxy | None:
    if scheme != "https":
        return None
    env = os.environ if environ is None else environ
    url = next(
        (env[name] for name in ("https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY") if env.get(name)), ""
    )
    if not url:
        return None
    if bypassed(host, env.get("no_proxy") or env.get("NO_PROXY") or ""):
        return None
    return parse_proxy(url)


def bypassed(host: str, no_proxy: str) -> bool:
    """Whether ``no_proxy`` (``*``, or names and domains separated by commas: ``example.com`` and
    ``.example.com`` match it and its subdomains, a ``:port`` is ignored) names ``host``."""
    host = host.lower().strip("[]")
    for entry in no_proxy.split(","):
        name = entry.strip().lower()
        if name == "*":
            return True
        if name.startswith("[") and "]" in name:
            name = name[1 : name.index("]")]
        elif name.count(":") == 1:
            name = name.partition(":")[0]
        name = name.lstrip(".")
        if name and (host == name or host.endswith("." + name)):
            return True
    return False


def parse_proxy(url: str) -> Proxy:
    shown = redact(url)
    if "://" not in url:
        url = f"http://{url}"  # curl's reading of a bare host:port
    try:
        parts = urlsplit(url)
        port = parts.port or 80
    except ValueError:
        raise Refused(f"the proxy {shown} is not a URL krmfn can use") from None
    if parts.scheme != "http" or not parts.hostname:
        raise Refused(f"the proxy {shown} is not an http:// proxy; krmfn supports only those")
    authorization = None
    if parts.username is not None:
        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        authorization = "Basic " + base64.b64encode(pair.encode()).decode()
    return Proxy(parts.hostname, port, authorization, shown)
