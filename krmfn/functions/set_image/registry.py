"""Tag lists from an OCI distribution registry: ``GET /v2/<name>/tags/list``.

Anonymous access first; on ``401`` with a ``WWW-Authenticate: Bearer`` challenge, an anonymous token is
fetched from the challenge's realm (service and scope as given) and the request repeated. Pages follow
the ``Link: <...>; rel="next"`` header. Loopback registries are spoken to over plain HTTP, every other
host over HTTPS (the system's trust store; ``HTTPS_PROXY``/``NO_PROXY`` honoured, krmfn/net/proxies.py).
Requests go over krmfn.net, the project's one HTTP stack. Nothing here runs unless a rule asks for
``registry: true``.

Everything a registry sends is hostile: pages and redirects stay on the registry's origin (scheme, host
and port), the token realm must be HTTPS (plain HTTP only where it resolves to loopback) and gets no
credentials, the token goes to the registry's origin only, and no hop (realm, redirect, page, a later
connection to the same name) may reach an address more private than the registry's own (public ->
private -> loopback, krmfn/net/addresses.py). Every answer is read under a ceiling and a time for the
whole request, the whole lookup under ``REGISTRY_LOOKUP`` (krmfn/net/ceilings.py); header values are
length-capped, then parsed in linear time (krmfn/net/headers.py); tags that are not valid OCI tags are
dropped; errors summarize an answer (status, error codes), never echo its text, and show only origins.
"""

from __future__ import annotations

import json
import re
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import urlencode, urljoin, urlsplit

from krmfn.net.addresses import AddressClass, Floor, Resolver, class_of, resolve
from krmfn.net.budget import Budget, Timer
from krmfn.net.ceilings import MAX_REGISTRY_HEADER, REGISTRY_LOOKUP, TAGS_PAGE, TOKEN, Ceiling, size
from krmfn.net.errors import Malformed, NetError, Refused, Stopped, TooLarge, Unreachable
from krmfn.net.headers import challenges, next_link
from krmfn.net.urls import origin_of, shown_origin
from krmfn.net.wire import Pool, Request

DOCKER_HUB = "registry-1.docker.io"
_HUB_ALIASES = ("docker.io", "index.docker.io")
_LOOPBACK = ("localhost", "127.0.0.1", "[::1]")
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}")  # the OCI distribution spec's tag grammar
_CODE = re.compile(r"[A-Z][A-Z0-9_]{0,63}")
_TOKEN = re.compile(r"[\x21-\x7e]{1,8192}")  # one header-safe word
_SCHEME_SHOWN = re.compile(r"[^A-Za-z-]")
MAX_PAGES = 200
MAX_REDIRECTS = 5
MAX_PAGE_BYTES = TAGS_PAGE.max_bytes
MAX_TOKEN_BYTES = TOKEN.max_bytes


class RegistryError(Exception):
    """The registry cannot be reached or refuses the request; the message is for humans."""


@dataclass(frozen=True)
class Repository:
    host: str
    path: str

    @property
    def base_url(self) -> str:
        hostname = self.host.rsplit(":", 1)[0] if not self.host.startswith("[") else self.host
        scheme = "http" if hostname in _LOOPBACK else "https"
        return f"{scheme}://{self.host}"

    def __str__(self) -> str:
        return f"{self.host}/{self.path}"


def repository_of(name: str) -> Repository:
    """Where an image name lives, with Docker's defaults: ``nginx`` is ``library/nginx`` on Docker Hub."""
    first, sep, rest = name.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        host, path = first, rest
    else:
        host, path = DOCKER_HUB, name
    if host in _HUB_ALIASES:
        host = DOCKER_HUB
    if host == DOCKER_HUB and "/" not in path:
        path = f"library/{path}"
    return Repository(host, path)


@dataclass(frozen=True)
class Network:
    """How set-image reaches registries; tests give their own: names resolved by ``resolver`` (to
    addresses classified as given, connected to where given), HTTPS verified with ``tls`` (None: the
    system's trust store), proxies read from ``environ`` (None: the process's environment)."""

    resolver: Resolver = resolve
    tls: ssl.SSLContext | None = None
    environ: Mapping[str, str] | None = None
    lookup: float = REGISTRY_LOOKUP


def list_tags(repo: Repository, page_size: int = 1000, network: Network | None = None) -> list[str]:
    """Every tag of ``repo``; raises RegistryError with a readable reason."""
    session = _Session(repo, network or Network())
    try:
        return _pages(session, repo, page_size)
    finally:
        session.close()


@dataclass(frozen=True)
class _Answer:
    status: int
    headers: Mapping[str, str]
    body: bytes | bytearray

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except (ValueError, RecursionError):
            return None

    def header(self, name: str, where: str) -> str:
        """A header's value, refused past ``MAX_REGISTRY_HEADER`` before anything parses it."""
        value = self.headers.get(name, "")
        if len(value) > MAX_REGISTRY_HEADER:
            raise RegistryError(
                f"{where} sent a {name} header longer than {size(MAX_REGISTRY_HEADER)}; refused"
            )
        return value


class _Session:
    """The connections of one lookup: a pool per origin, every connection checked against the
    registry's address class (set by its first connection), the whole lookup under one deadline."""

    def __init__(self, repo: Repository, network: Network) -> None:
        self._repo = repo
        self._network = network
        self._budget = Budget(network.lookup)
        self._pools: dict[tuple[str, str, int | None], Pool] = {}
        self._floor = Floor(what=f"the registry {repo.host}")
        self._tls: ssl.SSLContext | None = network.tls

    def get(self, url: str, headers: dict[str, str], ceiling: Ceiling) -> _Answer:
        """One GET, redirects not followed, the body read under ``ceiling``."""
        parts = urlsplit(url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        shown = _shown(url)
        try:
            pool = self._pool(url)
            with pool.open(Request("GET", target, headers), Timer(ceiling, self._budget)) as response:
                body = response.read_all(ceiling.max_bytes, ceiling.what)
                return _Answer(response.status, response.headers, body)
        except TooLarge as err:
            raise RegistryError(f"{shown}: {err}") from None
        except Refused as err:
            why = "a registry cannot send set-image somewhere more private than itself"
            raise RegistryError(f"{shown}: {err}; refused: {why}") from None
        except Stopped:
            raise RegistryError(
                f"listing tags of {self._repo}: not done within {self._network.lookup:g}s"
            ) from None
        except (Unreachable, Malformed) as err:
            raise RegistryError(f"registry {self._repo.host} is unreachable ({shown}): {err}") from None
        except NetError as err:
            raise RegistryError(f"registry {self._repo.host}, {shown}: {err}") from None

    def loopback_only(self, url: str) -> bool:
        """Whether every address ``url``'s host resolves to is this machine's."""
        _, host, port = origin_of(url)
        try:
            found = self._network.resolver(host, port or 80)
        except NetError:
            return False
        return bool(found) and class_of(r.ip for r in found) == AddressClass.LOOPBACK

    def close(self) -> None:
        for pool in self._pools.values():
            pool.close()

    def _pool(self, url: str) -> Pool:
        origin = origin_of(url)
        scheme, host, port = origin
        pool = self._pools.get(origin)
        if pool is not None:
            return pool
        if scheme not in ("http", "https") or not host or port is None:
            raise Refused(f"{_shown(url)} is not an http(s) URL")
        registry = origin_of(self._repo.base_url)
        floor = self._floor
        if origin != registry:  # the token realm: as public as the registry at least
            lowest = AddressClass.PUBLIC if self._floor.lowest is None else self._floor.lowest
            floor = Floor(lowest, what=f"the registry {self._repo.host}")
        tls = None
        if scheme == "https":
            if self._tls is None:
                self._tls = ssl.create_default_context()
            tls = self._tls
        from krmfn.net.proxies import proxy_for

        proxy = proxy_for(
            scheme, host, dict(self._network.environ) if self._network.environ is not None else None
        )
        pool = Pool(host, port, tls=tls, floor=floor, proxy=proxy, resolver=self._network.resolver)
        self._pools[origin] = pool
        return pool


def _shown(url: str) -> str:
    """An origin as it may appear in a message: scheme and host only, host characters only."""
    return shown_origin(url)


def _fetch(session: _Session, url: str, token: str | None, repo: Repository) -> tuple[_Answer, str]:
    """GET on the registry's origin, following redirects that stay on it."""
    origin = origin_of(repo.base_url)
    for _ in range(MAX_REDIRECTS + 1):
        answer = session.get(url, _auth(token), TAGS_PAGE)
        if answer.status not in (301, 302, 303, 307, 308):
            return answer, url
        target = urljoin(url, answer.header("location", repo.host))
        if origin_of(target) != origin:
            raise RegistryError(
                f"{repo.host} redirected to another origin ({_shown(target)}); refused: tags and "
                "tokens stay on the registry's origin"
            )
        url = target
    raise RegistryError(f"{repo.host}: more than {MAX_REDIRECTS} redirects")


def _pages(session: _Session, repo: Repository, page_size: int) -> list[str]:
    url: str | None = f"{repo.base_url}/v2/{repo.path}/tags/list?n={page_size}"
    token: str | None = None
    tags: list[str] = []
    for _ in range(MAX_PAGES):
        if url is None:
            return tags
        answer, url = _fetch(session, url, token, repo)
        if answer.status == 401 and token is None:
            token = _token(session, answer.header("www-authenticate", repo.host), repo)
            answer, url = _fetch(session, url, token, repo)
        if answer.status != 200:
            raise RegistryError(f"listing tags of {repo} failed: {_summary(answer)}")
        body = answer.json()
        found = body.get("tags") if isinstance(body, dict) else None
        tags.extend(
            t for t in (found if isinstance(found, list) else []) if isinstance(t, str) and _TAG.fullmatch(t)
        )
        link = next_link(answer.header("link", repo.host))
        url = urljoin(url, link) if link else None
        if url is not None and origin_of(url) != origin_of(repo.base_url):
            raise RegistryError(
                f"{repo.host} links its next page on another origin ({_shown(url)}); refused: tags and "
                "tokens stay on the registry's origin"
            )
    raise RegistryError(f"listing tags of {repo}: more than {MAX_PAGES} pages")


def _auth(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def _token(session: _Session, challenge: str, repo: Repository) -> str:
    try:
        found = challenges(challenge)
    except Malformed:
        raise RegistryError(f"{repo.host} sent a WWW-Authenticate header krmfn cannot read") from None
    bearer = next((params for scheme, params in found if scheme.lower() == "bearer"), None)
    if bearer is None:
        scheme = found[0][0] if found else ""
        raise RegistryError(
            f"{repo.host} asks for {_SCHEME_SHOWN.sub('?', scheme[:20]) or 'unknown'} authentication; "
            "only anonymous bearer tokens are supported"
        )
    params = {name: value for name, value in bearer.items() if name and name != "realm"}
    realm = bearer.get("realm", "")
    if not realm:
        raise RegistryError(f"{repo.host} sent a bearer challenge without a realm")
    realm_scheme = origin_of(realm)[0]
    if realm_scheme != "https" and not (realm_scheme == "http" and session.loopback_only(realm)):
        raise RegistryError(f"{repo.host} sent a token realm that is not HTTPS ({_shown(realm)}); refused")
    params.setdefault("scope", f"repository:{repo.path}:pull")
    parts = urlsplit(realm)
    query = "&".join(q for q in (parts.query, urlencode(params)) if q)
    url = parts._replace(query=query, fragment="").geturl()
    answer = session.get(url, {}, TOKEN)  # no credentials, no redirects
    if answer.status != 200:
        raise RegistryError(f"token service {_shown(realm)} refused: {_summary(answer)}")
    body = answer.json()
    token = body.get("token") or body.get("access_token") if isinstance(body, dict) else None
    if not isinstance(token, str) or not _TOKEN.fullmatch(token):
        raise RegistryError(f"token service {_shown(realm)} answered without a usable token")
    return token


def _summary(answer: _Answer) -> str:
    """HTTP status, its standard phrase and the registry's error codes: never the text it sent."""
    try:
        phrase = HTTPStatus(answer.status).phrase
    except ValueError:
        phrase = "unknown status"
    body = answer.json()
    errors = body.get("errors") if isinstance(body, dict) else None
    codes = [
        e["code"]
        for e in (errors if isinstance(errors, list) else [])
        if isinstance(e, dict) and isinstance(e.get("code"), str) and _CODE.fullmatch(e["code"])
    ]
    return f"HTTP {answer.status} {phrase}" + (f" ({', '.join(codes[:3])})" if codes else "")
