"""Tag lists from an OCI distribution registry: ``GET /v2/<name>/tags/list``.

Anonymous access first; on ``401`` with a ``WWW-Authenticate: Bearer`` challenge, an anonymous token is
fetched from the challenge's realm (service and scope as given) and the request repeated. Pages follow
the ``Link: <...>; rel="next"`` header. Loopback registries are spoken to over plain HTTP, every other
host over HTTPS. Nothing here runs unless a rule asks for ``registry: true``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

DOCKER_HUB = "registry-1.docker.io"
_HUB_ALIASES = ("docker.io", "index.docker.io")
_LOOPBACK = ("localhost", "127.0.0.1", "[::1]")
_CHALLENGE_PARAM = re.compile(r'(\w+)="([^"]*)"')
_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="?next"?')
MAX_PAGES = 200
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
    http = client or httpx.Client(timeout=TIMEOUT_SECONDS, follow_redirects=True)
    try:
        return _pages(http, repo, page_size)
    except httpx.HTTPError as err:
        raise RegistryError(f"registry {repo.host} is unreachable: {err or type(err).__name__}") from None
    finally:
        if own:
            http.close()


def _pages(http: Any, repo: Repository, page_size: int) -> list[str]:
    url: str | None = f"{repo.base_url}/v2/{repo.path}/tags/list?n={page_size}"
    token: str | None = None
    tags: list[str] = []
    for _ in range(MAX_PAGES):
        if url is None:
            return tags
        response = http.get(url, headers=_auth(token))
        if response.status_code == 401 and token is None:
            token = _token(http, response.headers.get("www-authenticate", ""), repo)
            response = http.get(url, headers=_auth(token))
        if response.status_code != 200:
            raise RegistryError(
                f"listing tags of {repo} failed: HTTP {response.status_code} {_reason(response)}"
            )
        body = response.json()
        tags.extend(str(t) for t in (body.get("tags") or []) if isinstance(body, dict))
        link = _NEXT.search(response.headers.get("link", ""))
        url = urljoin(url, link.group(1)) if link else None
    raise RegistryError(f"listing tags of {repo}: more than {MAX_PAGES} pages")


def _auth(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def _token(http: Any, challenge: str, repo: Repository) -> str:
    scheme, _, params_text = challenge.partition(" ")
    if scheme.lower() != "bearer":
        raise RegistryError(
            f"{repo.host} asks for {scheme or 'unknown'} authentication; only anonymous bearer tokens "
            "are supported"
        )
    params = dict(_CHALLENGE_PARAM.findall(params_text))
    realm = params.pop("realm", "")
    if not realm:
        raise RegistryError(f"{repo.host} sent a bearer challenge without a realm")
    params.setdefault("scope", f"repository:{repo.path}:pull")
    response = http.get(realm, params=params)
    if response.status_code != 200:
        raise RegistryError(f"token service {realm} refused: HTTP {response.status_code} {_reason(response)}")
    body = response.json()
    token = body.get("token") or body.get("access_token") if isinstance(body, dict) else None
    if not token:
        raise RegistryError(f"token service {realm} answered without a token")
    return str(token)


def _reason(response: Any) -> str:
    try:
        errors = response.json().get("errors") or []
        return "; ".join(str(e.get("message", e.get("code", ""))) for e in errors) or response.reason_phrase
    except Exception:
        return str(response.reason_phrase)
