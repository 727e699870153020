"""set-image's registry client against hostile loopback servers (issue 15 item 5): pages and redirects stay
on the registry's origin, the token realm must be HTTPS (loopback excepted), the token is never sent to
another origin, answers are size-capped, and what a registry says is summarized, never echoed."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from krmfn.functions.set_image import FUNCTION
from krmfn.functions.set_image import registry as oci
from krmfn.yaml.io import _load_fast, dump_fast

TOKEN = "tok-CANARY-7c2e"
ECHO = "CANARYregistrytext"


@dataclass
class Server:
    """A loopback HTTP server whose answers a test scripts; it records every request it gets."""

    answer: Callable[[Server, BaseHTTPRequestHandler], tuple[int, dict[str, str], bytes]]
    requests: list[tuple[str, str]] = field(default_factory=list)  # (path, Authorization header)
    host: str = ""


@contextmanager
def serving(
    *answers: Callable[[Server, BaseHTTPRequestHandler], tuple[int, dict[str, str], bytes]],
) -> Iterator[list[Server]]:
    servers, running = [], []
    for answer in answers:
        state = Server(answer)

        class Handler(BaseHTTPRequestHandler):
            server_state = state

            def do_GET(self) -> None:
                self.server_state.requests.append((self.path, self.headers.get("Authorization", "")))
                status, headers, body = self.server_state.answer(self.server_state, self)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                if "X-Unannounced" not in headers:  # else HTTP/1.0: the body runs until the close
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        state.host = f"127.0.0.1:{server.server_address[1]}"
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(state)
        running.append(server)
    try:
        yield servers
    finally:
        for server in running:
            server.shutdown()
            server.server_close()


def tags(*names: str) -> bytes:
    return json.dumps({"name": "acme/app", "tags": list(names)}).encode()


def ok(
    body: bytes, **headers: str
) -> Callable[[Server, BaseHTTPRequestHandler], tuple[int, dict[str, str], bytes]]:
    return lambda server, handler: (200, dict(headers), body)


def list_tags(host: str) -> list[str]:
    return oci.list_tags(oci.repository_of(f"{host}/acme/app"), page_size=2)


def test_a_next_page_on_another_origin_is_refused_and_never_requested() -> None:
    with serving(ok(tags("9.9.9"))) as (elsewhere,):
        link = f'<http://{elsewhere.host}/v2/acme/app/tags/list>; rel="next"'
        refused = pytest.raises(oci.RegistryError, match="links its next page on another origin")
        with serving(ok(tags("1.0.0"), Link=link)) as (registry,), refused:
            list_tags(registry.host)
        assert elsewhere.requests == []


def test_a_redirect_to_another_origin_is_refused_and_one_on_the_origin_is_followed() -> None:
    with serving(ok(tags("9.9.9"))) as (elsewhere,):

        def redirect(server: Server, handler: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
            if handler.path.startswith("/moved"):
                return 302, {"Location": f"https://{elsewhere.host}/v2/acme/app/tags/list"}, b""
            if handler.path.startswith("/v2/"):
                return 307, {"Location": "/moved/tags"}, b""
            return 404, {}, b""

        with serving(redirect) as (registry,):
            with pytest.raises(oci.RegistryError, match="redirected to another origin"):
                list_tags(registry.host)
            assert [path for path, _ in registry.requests] == ["/v2/acme/app/tags/list?n=2", "/moved/tags"]
        assert elsewhere.requests == []


def _challenge(realm: str) -> Callable[[Server, BaseHTTPRequestHandler], tuple[int, dict[str, str], bytes]]:
    def answer(server: Server, handler: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        if handler.headers.get("Authorization") != f"Bearer {TOKEN}":
            return 401, {"WWW-Authenticate": f'Bearer realm="{realm}",service="s"'}, b""
        return 200, {}, tags("1.0.0", "1.1.0")

    return answer


@pytest.mark.parametrize(
    "realm",
    ["http://token.example.invalid/token", "ftp://127.0.0.1/token", "file:///etc/passwd", "//127.0.0.1/x"],
)
def test_a_token_realm_that_is_not_https_is_refused_before_any_request(realm: str) -> None:
    with serving(_challenge(realm)) as (registry,):
        with pytest.raises(oci.RegistryError, match="token realm that is not HTTPS"):
            list_tags(registry.host)
        assert len(registry.requests) == 1  # the anonymous attempt only


def test_the_token_goes_to_the_registry_origin_only() -> None:
    with serving(ok(json.dumps({"token": TOKEN}).encode()), ok(tags("9.9.9"))) as (realm, third):

        def answer(server: Server, handler: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
            if handler.headers.get("Authorization") != f"Bearer {TOKEN}":
                return 401, {"WWW-Authenticate": f'Bearer realm="http://{realm.host}/token",service="s"'}, b""
            return 200, {"Link": f'<http://{third.host}/v2/acme/app/tags/list>; rel="next"'}, tags("1.0.0")

        with serving(answer) as (registry,):
            with pytest.raises(oci.RegistryError, match="another origin"):
                list_tags(registry.host)
            assert [auth for _, auth in registry.requests] == ["", f"Bearer {TOKEN}"]
        assert [auth for _, auth in realm.requests] == [""]  # the realm gets no credentials
        assert third.requests == []  # and the third host nothing, the token least of all


@pytest.mark.parametrize("announced", [True, False], ids=["announced", "unannounced"])
def test_answers_are_size_capped(announced: bool) -> None:
    body = b'{"tags": [' + b'"1.0.0",' * (oci.MAX_PAGE_BYTES // 8) + b'"1.0.1"]}'
    headers = {} if announced else {"X-Unannounced": "1"}
    refused = pytest.raises(oci.RegistryError, match=r"over its ceiling of 4 MiB")
    with serving(ok(body, **headers)) as (registry,), refused:
        list_tags(registry.host)


@pytest.mark.parametrize("token", ["x" * (oci.MAX_TOKEN_BYTES + 1), "a\r\nX-Injected: y", ""])
def test_a_token_answer_is_size_capped_and_a_token_is_one_header_safe_word(token: str) -> None:
    with serving(ok(json.dumps({"token": token}).encode())) as (realm,):
        challenge = _challenge(f"http://{realm.host}/token")
        refused = pytest.raises(oci.RegistryError, match=r"over its ceiling of 64 KiB|usable token")
        with serving(challenge) as (registry,), refused:
            list_tags(registry.host)
        assert len(registry.requests) == 1  # nothing was sent with it


def _run(host: str) -> tuple[int, list[dict[str, Any]]]:
    name = f"{host}/acme/app"
    rule = {"name": name, "semver": ">=5", "registry": True}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"template": {"spec": {"containers": [{"name": "app", "image": f"{name}:1"}]}}},
    }
    rl = {
        "apiVersion": "config.kubernetes.io/v1",
        "kind": "ResourceList",
        "items": [deployment],
        "functionConfig": {"apiVersion": "fn.krmfn.dev/v1alpha1", "kind": "SetImage", "images": [rule]},
    }
    text, code = FUNCTION.process(dump_fast(rl), "fast")
    return code, _load_fast(text)["results"]


def test_what_a_registry_says_is_summarized_never_echoed() -> None:
    error = {"errors": [{"code": "DENIED", "message": f"{ECHO}\n::error::injected", "detail": ECHO}]}

    def refuse(server: Server, handler: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        return 403, {}, json.dumps(error).encode()

    with serving(refuse) as (registry,):
        code, results = _run(registry.host)
    assert code == 1
    assert results[0]["message"].endswith("failed: HTTP 403 Forbidden (DENIED)")
    assert ECHO not in str(results)
    # Tags that are not OCI tags (control characters, a workflow command, 200 characters) are dropped.
    hostile = ["1.0.0", f"{ECHO}\n::error::x", "::set-output name=x::y", "a" * 200, "2.0.0\x1b[31m"]
    with serving(ok(json.dumps({"tags": hostile}).encode())) as (registry,):
        assert list_tags(registry.host) == ["1.0.0"]
        code, results = _run(registry.host)
    assert code == 1 and ECHO not in str(results) and "::" not in results[0]["message"].split("candidate")[-1]
