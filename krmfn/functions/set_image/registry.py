"""Tag lists from an OCI distribution registry: ``GET /v2/<name>/tags/list``.

Anonymous access first; on ``401`` with a ``WWW-Authenticate: Bearer`` challenge, an anonymous token is
fetched from the challenge's realm (service and scope as given) and the request repeated. Pages follow
the ``Link: <...>; rel="next"`` header. Loopback registries are spoken to over plain HTTP, every other
host over HTTPS. Nothing here runs unless a rule asks for ``registry: true``.

Everything a registry sends is hostile: pages and redirects stay on the registry's origin (scheme, host
and port), the token realm must be HTTPS (loopback excepted) and gets no credentials, the token goes
to the registry's origin only, every answer is read up to a size cap, tags that are not valid OCI tags
are dropped, and errors summarize an answer (status, error codes), never echo its text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import urljoin, urlsplit

DOCKER_HUB = "registry-1.docker.io"
_HUB_ALIASES = ("docker.io", "index.docker.io")
_LOOPBACK = ("localhost", "127.0.0.1", "[::1]")
_CHALLENGE_PARAM = re.compile(r'(\w+)="([^"]*)"')
_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="?next"?')
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}")  # the OCI distribution spec's tag grammar
_CODE = re.compile(r"[A-Z][A-Z0-9_]{0,63}")
_TOKEN = re.compile(r"[\x21-\x7e]{1,8192}")  # one header-safe word
MAX_PAGES = 200
MAX_REDIRECTS = 5
MAX_PAGE_BYTES = 4 * 1024 * 1024
MAX_TOKEN_BYTES = 64 * 1024
TIMEOUT_SECONDS = 10.0


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


def list_tags(repo: Repository, page_size: int = 1000, client: Any = None) -> list[str]:
    """Every tag of ``repo``; raises RegistryError with a readable reason."""
    import httpx  # imported here: most runs never talk to a registry, and start-up time matters

    own = client is None
    http = client or httpx.Client(timeout=TIMEOUT_SECONDS, follow_redirects=False)
    try:
        return _pages(http, repo, page_size)
    except httpx.HTTPError as err:
        raise RegistryError(f"registry {repo.host} is unreachable: {type(err).__name__}") from None
    finally:
        if own:
            http.close()


@dataclass(frozen=True)
class _Answer:
    status: int
    headers: Any
    body: bytes

    def json(self) -> Any:
        import json

        try:
            return json.loads(self.body)
        except ValueError:
            return None


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), port


def _shown(url: str) -> str:
    """An origin as it may appear in a message: scheme and host only, host characters only."""
    scheme, host, port = _origin(url)
    return re.sub(r"[^a-z0-9.:\[\]-]", "?", f"{scheme}://{host}" + (f":{port}" if port else ""))


def _get(http: Any, url: str, headers: dict[str, str], limit: int) -> _Answer:
    """One GET, redirects not followed, the body read up to ``limit`` bytes."""
    with http.stream("GET", url, headers=headers) as response:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise RegistryError(f"{_shown(url)} answered {int(declared)} bytes, over the limit of {limit}")
        body = bytearray()
        for chunk in response.iter_bytes():
            body += chunk
            if len(body) > limit:
                raise RegistryError(f"{_shown(url)} answered more than {limit} bytes")
        return _Answer(response.status_code, response.headers, bytes(body))


def _fetch(http: Any, url: str, token: str | None, repo: Repository) -> tuple[_Answer, str]:
    """GET on the registry's origin, following redirects that stay on it."""
    origin = _origin(repo.base_url)
    for _ in range(MAX_REDIRECTS + 1):
        answer = _get(http, url, _auth(token), MAX_PAGE_BYTES)
        if answer.status not in (301, 302, 303, 307, 308):
            return answer, url
        target = urljoin(url, answer.headers.get("location", ""))
        if _origin(target) != origin:
            raise RegistryError(
                f"{repo.host} redirected to another origin ({_shown(target)}); refused: tags and "
                "tokens stay on the registry's origin"
            )
        url = target
    raise RegistryError(f"{repo.host}: more than {MAX_REDIRECTS} redirects")


def _pages(http: Any, repo: Repository, page_size: int) -> list[str]:
    url: str | None = f"{repo.base_url}/v2/{repo.path}/tags/list?n={page_size}"
    token: str | None = None
    tags: list[str] = []
    for _ in range(MAX_PAGES):
        if url is None:
            return tags
        answer, url = _fetch(http, url, token, repo)
        if answer.status == 401 and token is None:
            token = _token(http, answer.headers.get("www-authenticate", ""), repo)
            answer, url = _fetch(http, url, token, repo)
        if answer.status != 200:
            raise RegistryError(f"listing tags of {repo} failed: {_summary(answer)}")
        body = answer.json()
        found = body.get("tags") if isinstance(body, dict) else None
        tags.extend(
            t for t in (found if isinstance(found, list) else []) if isinstance(t, str) and _TAG.fullmatch(t)
        )
        link = _NEXT.search(answer.headers.get("link", ""))
        url = urljoin(url, link.group(1)) if link else None
        if url is not None and _origin(url) != _origin(repo.base_url):
            raise RegistryError(
                f"{repo.host} links its next page on another origin ({_shown(url)}); refused: tags and "
                "tokens stay on the registry's origin"
            )
    raise RegistryError(f"listing tags of {repo}: more than {MAX_PAGES} pages")


def _auth(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def _token(http: Any, challenge: str, repo: Repository) -> str:
    scheme, _, params_text = challenge.partition(" ")
    if scheme.lower() != "bearer":
        raise RegistryError(
            f"{repo.host} asks for {re.sub(r'[^A-Za-z-]', '?', scheme[:20]) or 'unknown'} authentication; "
            "only anonymous bearer tokens are supported"
        )
    params = dict(_CHALLENGE_PARAM.findall(params_text))
    realm = params.pop("realm", "")
    if not realm:
        raise RegistryError(f"{repo.host} sent a bearer challenge without a realm")
    realm_scheme, realm_host, _ = _origin(realm)
    loopback = realm_host in ("localhost", "127.0.0.1", "::1")
    if realm_scheme != "https" and not (realm_scheme == "http" and loopback):
        raise RegistryError(f"{repo.host} sent a token realm that is not HTTPS ({_shown(realm)}); refused")
    import httpx

    params.setdefault("scope", f"repository:{repo.path}:pull")
    url = str(httpx.URL(realm, params=params))
    answer = _get(http, url, {}, MAX_TOKEN_BYTES)  # no credentials, no redirects
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
