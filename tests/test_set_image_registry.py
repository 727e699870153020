"""set-image's semver selection against a real registry (Debian's docker-registry), anonymous and behind
bearer-token auth, plus pagination (which docker-registry 2.8 does not do) against a tiny in-test server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from registry_server import ISSUER, SERVICE, Pusher, free_port, registry, token_server
from set_image_support import set_image_config

from krmfn.functions.set_image import FUNCTION
from krmfn.functions.set_image import registry as oci
from krmfn.yaml.io import _load_fast, dump_fast

TAGS = ["1.0.0", "1.2.0", "1.9.3", "1.10.1", "2.0.0-rc.1", "2.0.0", "latest", "main-abc123"]


@pytest.fixture(scope="module")
def open_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with registry(tmp_path_factory.mktemp("open")) as host:
        Pusher(host).push("acme/app", TAGS)
        yield host


@pytest.fixture(scope="module")
def token_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[Any]]]:
    workdir = tmp_path_factory.mktemp("token")
    with token_server(workdir) as (realm, bundle, issuer):
        auth = {
            "token": {"realm": realm, "service": SERVICE, "issuer": ISSUER, "rootcertbundle": str(bundle)}
        }
        with registry(workdir, auth) as host:
            Pusher(host).push("team/api", ["0.9.0", "1.4.0", "1.5.2", "edge"])
            yield host, issuer.requests


def _deployment(image: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"template": {"spec": {"containers": [{"name": "app", "image": image}]}}},
    }


def _run(image: str, rule: dict[str, Any]) -> tuple[int, str, list[dict[str, Any]]]:
    rl = {
        "apiVersion": "config.kubernetes.io/v1",
        "kind": "ResourceList",
        "items": [_deployment(image)],
        "functionConfig": set_image_config([rule]),
    }
    text, code = FUNCTION.process(dump_fast(rl), "fast")
    out = _load_fast(text)
    return code, out["items"][0]["spec"]["template"]["spec"]["containers"][0]["image"], out["results"]


def test_highest_matching_tag_from_an_open_registry(open_registry: str) -> None:
    name = f"{open_registry}/acme/app"
    code, image, results = _run(f"{name}:1.0.0", {"name": name, "semver": "^1.2", "registry": True})
    assert (code, image) == (0, f"{name}:1.10.1")  # numeric order, not string order
    assert results[-1]["message"] == "updated 1 image(s) in 1 resource(s)"
    _, image, _ = _run(f"{name}:1.0.0", {"name": name, "semver": "*", "registry": True})
    assert image == f"{name}:2.0.0"  # the pre-release and the non-semver tags are ignored
    _, image, _ = _run(f"{name}:1.0.0", {"name": name, "semver": ">=2.0.0-rc.0 <2.0.0", "registry": True})
    assert image == f"{name}:2.0.0-rc.1"


def test_registry_and_config_tags_are_both_candidates(open_registry: str) -> None:
    name = f"{open_registry}/acme/app"
    rule = {"name": name, "semver": "1.x", "registry": True, "tags": ["1.99.0"]}
    assert _run(f"{name}:1.0.0", rule)[1] == f"{name}:1.99.0"


def test_registry_behind_bearer_token_auth(token_registry: tuple[str, list[Any]]) -> None:
    host, token_requests = token_registry
    before = len(token_requests)
    name = f"{host}/team/api"
    code, image, _ = _run(f"{name}:0.9.0", {"name": name, "semver": "~1.5", "registry": True})
    assert (code, image) == (0, f"{name}:1.5.2")
    assert token_requests[before:] == [{"service": [SERVICE], "scope": ["repository:team/api:pull"]}]


def test_new_name_is_the_repository_asked(token_registry: tuple[str, list[Any]]) -> None:
    host, _ = token_registry
    rule = {"name": "api", "newName": f"{host}/team/api", "semver": "<1.5", "registry": True}
    assert _run("api:old", rule)[1] == f"{host}/team/api:1.4.0"


def test_no_tag_satisfies_the_constraint_is_an_error(open_registry: str) -> None:
    name = f"{open_registry}/acme/app"
    code, image, results = _run(f"{name}:1.0.0", {"name": name, "semver": ">=3", "registry": True})
    assert (code, image) == (1, f"{name}:1.0.0")
    error = results[0]
    assert error["severity"] == "error"
    assert "no tag satisfies '>=3' among 8 candidate(s)" in error["message"]
    assert error["field"]["path"] == "functionConfig.images[0].semver"


def test_unknown_repository_is_an_error(open_registry: str) -> None:
    name = f"{open_registry}/acme/missing"
    code, _, results = _run(f"{name}:1", {"name": name, "semver": "*", "registry": True})
    assert code == 1
    assert "HTTP 404 Not Found (NAME_UNKNOWN)" in results[0]["message"]  # the code, not the text sent


def test_unreachable_registry_is_an_error() -> None:
    name = f"127.0.0.1:{free_port()}/acme/app"
    code, image, results = _run(f"{name}:1", {"name": name, "semver": "*", "registry": True})
    assert (code, image) == (1, f"{name}:1")
    assert "is unreachable" in results[0]["message"]


def test_no_network_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: Any, **__: Any) -> list[str]:
        raise AssertionError("the registry was contacted without registry: true")

    monkeypatch.setattr(oci, "list_tags", refuse)
    rule = {"name": "127.0.0.1:1/acme/app", "semver": "^1", "tags": ["1.0.0", "1.3.0", "2.0.0"]}
    assert _run("127.0.0.1:1/acme/app:0.1", rule)[1] == "127.0.0.1:1/acme/app:1.3.0"


@pytest.fixture
def paginating_server() -> Iterator[tuple[str, list[str]]]:
    """Serves 7 tags two per page with relative ``Link`` headers, as distribution v3 does."""
    tags = ["0.1.0", "0.2.0", "1.0.0", "1.1.0", "nightly", "1.2.0", "0.3.0"]
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            query = parse_qs(urlparse(self.path).query)
            size = int(query.get("n", ["2"])[0])
            last = query.get("last", [""])[0]
            start = tags.index(last) + 1 if last else 0
            page = tags[start : start + size]
            body = json.dumps({"name": "acme/paged", "tags": page}).encode()
            self.send_response(200)
            if start + size < len(tags):
                self.send_header("Link", f'</v2/acme/paged/tags/list?n={size}&last={page[-1]}>; rel="next"')
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def test_tag_list_pagination(paginating_server: tuple[str, list[str]]) -> None:
    host, seen = paginating_server
    tags = oci.list_tags(oci.repository_of(f"{host}/acme/paged"), page_size=2)
    assert tags == ["0.1.0", "0.2.0", "1.0.0", "1.1.0", "nightly", "1.2.0", "0.3.0"]
    assert len(seen) == 4


def test_repository_of_follows_docker_defaults() -> None:
    assert str(oci.repository_of("nginx")) == "registry-1.docker.io/library/nginx"
    assert str(oci.repository_of("docker.io/bitnami/redis")) == "registry-1.docker.io/bitnami/redis"
    assert str(oci.repository_of("acme/app")) == "registry-1.docker.io/acme/app"
    assert str(oci.repository_of("localhost/app")) == "localhost/app"
    assert oci.repository_of("localhost:5000/a/b").base_url == "http://localhost:5000"
    assert oci.repository_of("ghcr.io/acme/app").base_url == "https://ghcr.io"


def test_docker_registry_binary_is_present() -> None:
    assert Path("/usr/bin/docker-registry").exists(), "apt-get install -y docker-registry"
