"""Issue 29, finding 14: a registry cannot send set-image somewhere more private than itself.

Before, "plain HTTP on loopback only" was checked on the token realm's name alone: a public HTTPS registry
answering ``realm="http://127.0.0.1:<port>/"`` made set-image call a loopback service. The rule now: no
hop (the token realm, a redirect, the next page, any later connection to the registry's own name) may
reach an address class more private than the registry's (public -> private -> loopback), whatever the
scheme, and plain HTTP only where every address is loopback. Classes come from the addresses a name
resolves to, where the connection is made (so a name that resolves to 127.0.0.1 is loopback, and a name
that resolves differently the second time is caught).

The matrix is generated: registry class x hop class x scheme, for the realm, a redirect and the next
page. Names end in ``.test`` and resolve through the lookup's ``resolver`` to an address of the class
wanted (10.1.2.3, 93.184.216.34, 127.0.0.1) while the connection goes to a loopback TLS server; an
allowed hop must work, a refused one must never reach the server.
"""

from __future__ import annotations

import itertools
import json
import socket
import ssl
import subprocess
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from krmfn.functions.set_image import registry as oci
from krmfn.net.addresses import AddressClass, Resolved, address_class, class_of, resolve

CLASSES = {"loopback": "127.0.0.1", "private": "10.1.2.3", "public": "93.184.216.34"}
ORDER = {"loopback": 0, "private": 1, "public": 2}
TOKEN = "tok-hops"
TAGS = json.dumps({"name": "acme/app", "tags": ["1.0.0", "1.1.0"]}).encode()


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """(server context, client context trusting it) for the test's names and 127.0.0.1."""
    workdir = tmp_path_factory.mktemp("tls")
    key, cert = workdir / "key.pem", workdir / "cert.pem"
    names = ",".join(f"DNS:{role}-{cls}.test" for role in ("registry", "realm") for cls in CLASSES)
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=krmfn-hops",
         "-addext", f"subjectAltName={names},IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        capture_output=True, check=True,
    )  # fmt: skip
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert, key)
    return server, ssl.create_default_context(cafile=str(cert))


class Served:
    """A loopback HTTP(S) server answering with ``answer(handler)``; it records each request's path."""

    def __init__(self, answer: Callable[[BaseHTTPRequestHandler], tuple[int, dict[str, str], bytes]],
                 context: ssl.SSLContext | None) -> None:  # fmt: skip
        self.paths: list[str] = []
        served = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                served.paths.append(self.path)
                code, headers, body = answer(self)
                self.send_response(code)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if context is not None:
            self.http.socket = context.wrap_socket(self.http.socket, server_side=True)
        self.port = self.http.server_address[1]
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def servers(tls: tuple[ssl.SSLContext, ssl.SSLContext]) -> Iterator[dict[str, Served]]:
    token = json.dumps({"token": TOKEN}).encode()
    realm_answer = lambda handler: (200, {"Content-Type": "application/json"}, token)  # noqa: E731
    running = {"https": Served(realm_answer, tls[0]), "http": Served(realm_answer, None)}
    yield running
    for server in running.values():
        server.close()


def resolver(answers: dict[str, list[str]]) -> Callable[[str, int], list[Resolved]]:
    """Names ending in ``.test`` resolve to the next class of their list (the last one again when the
    list runs out); the connection always goes to 127.0.0.1 on the port asked. Other names resolve as the
    system resolves them."""
    pending = {name: iter(classes) for name, classes in answers.items()}
    last: dict[str, str] = {}

    def resolve_name(host: str, port: int) -> list[Resolved]:
        if not host.endswith(".test"):
            return resolve(host, port)
        cls = next(pending[host], last.get(host, ""))
        last[host] = cls
        return [Resolved(socket.AF_INET, CLASSES[cls], ("127.0.0.1", port))]

    return resolve_name


TLS = tuple[ssl.SSLContext, ssl.SSLContext]


def registry(tls: TLS, first: Callable[[BaseHTTPRequestHandler], Any]) -> Served:
    """The registry: ``first`` answers what is not the authorised tag list."""

    def answer(handler: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        if handler.headers.get("Authorization") == f"Bearer {TOKEN}" or handler.path.endswith("moved"):
            return 200, {}, TAGS
        found: tuple[int, dict[str, str], bytes] = first(handler)
        return found

    return Served(answer, tls[0])


def allowed(registry_class: str, hop_class: str, scheme: str = "https") -> bool:
    return ORDER[hop_class] >= ORDER[registry_class] and (scheme == "https" or hop_class == "loopback")


MATRIX = list(itertools.product(CLASSES, CLASSES, ["https", "http"]))


MATRIX_IDS = ["-".join(case) for case in MATRIX]


@pytest.mark.parametrize(("registry_class", "realm_class", "scheme"), MATRIX, ids=MATRIX_IDS)
def test_a_token_realm_may_not_be_more_private_than_the_registry(
    tls: tuple[ssl.SSLContext, ssl.SSLContext], servers: dict[str, Served], registry_class: str,
    realm_class: str, scheme: str,
) -> None:  # fmt: skip
    realm = f"{scheme}://realm-{realm_class}.test:{servers[scheme].port}/token"
    challenge = {"WWW-Authenticate": f'Bearer realm="{realm}",service="s"'}
    served = registry(tls, lambda handler: (401, challenge, b""))
    network = oci.Network(
        resolver=resolver({f"registry-{registry_class}.test": [registry_class],
                           f"realm-{realm_class}.test": [realm_class]}),
        tls=tls[1], environ={},
    )  # fmt: skip
    repo = oci.repository_of(f"registry-{registry_class}.test:{served.port}/acme/app")
    try:
        if allowed(registry_class, realm_class, scheme):
            assert oci.list_tags(repo, network=network) == ["1.0.0", "1.1.0"]
            assert len(servers[scheme].paths) == 1
        else:
            with pytest.raises(oci.RegistryError, match="refused") as caught:
                oci.list_tags(repo, network=network)
            assert servers[scheme].paths == [], "a refused realm was requested"
            assert str(caught.value).count("\n") == 0
    finally:
        served.close()


HOPS = list(itertools.product(["redirect", "next page"], CLASSES, CLASSES))


@pytest.mark.parametrize(("hop", "first_class", "then_class"), HOPS, ids=["-".join(case) for case in HOPS])
def test_a_later_connection_to_the_registry_may_not_be_more_private_than_the_first(
    tls: tuple[ssl.SSLContext, ssl.SSLContext], hop: str, first_class: str, then_class: str
) -> None:
    """A redirect and the next page stay on the registry's origin; its name may resolve again (each
    answer closes its connection here) and must not then reach a more private class (DNS rebinding)."""

    def first(handler: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        if hop == "redirect":
            return 307, {"Location": "/v2/acme/app/tags/list?moved"}, b""
        return 200, {"Link": '</v2/acme/app/tags/list?moved>; rel="next"'}, TAGS

    served = registry(tls, first)
    name = f"registry-{first_class}.test"
    network = oci.Network(resolver=resolver({name: [first_class, then_class]}), tls=tls[1], environ={})
    repo = oci.repository_of(f"{name}:{served.port}/acme/app")
    try:
        if allowed(first_class, then_class):
            assert oci.list_tags(repo, network=network)
            assert len(served.paths) == 2
        else:
            with pytest.raises(oci.RegistryError, match="more private than the registry"):
                oci.list_tags(repo, network=network)
            assert len(served.paths) == 1, "the more private address was reached"
    finally:
        served.close()


@pytest.mark.parametrize("realm_host", ["127.0.0.1", "localhost", "[::1]"])
def test_a_public_registrys_realm_on_this_machine_is_refused_by_its_resolved_address(
    tls: tuple[ssl.SSLContext, ssl.SSLContext], realm_host: str
) -> None:
    """The finding as reported, with the system's resolver for the realm: ``localhost`` is loopback
    because it resolves to it, not because of its name."""
    realm = f"http://{realm_host}:1/token"
    served = registry(tls, lambda handler: (401, {"WWW-Authenticate": f'Bearer realm="{realm}"'}, b""))
    network = oci.Network(resolver=resolver({"registry-public.test": ["public"]}), tls=tls[1], environ={})
    try:
        with pytest.raises(oci.RegistryError, match="loopback address, more private than the registry"):
            oci.list_tags(oci.repository_of(f"registry-public.test:{served.port}/acme/app"), network=network)
    finally:
        served.close()


@pytest.mark.parametrize(
    ("ip", "expected"),
    [
        ("127.0.0.1", "loopback"), ("127.255.0.9", "loopback"), ("::1", "loopback"), ("0.0.0.0", "loopback"),
        ("::", "loopback"), ("::ffff:127.0.0.1", "loopback"), ("10.0.0.1", "private"),
        ("172.16.5.4", "private"), ("192.168.1.1", "private"), ("169.254.169.254", "private"),
        ("100.64.0.1", "private"), ("fd00::1", "private"), ("fe80::1%eth0", "private"),
        ("::ffff:10.0.0.1", "private"), ("224.0.0.1", "private"), ("not an address", "private"),
        ("93.184.216.34", "public"), ("8.8.8.8", "public"), ("2606:4700:4700::1111", "public"),
        ("::ffff:8.8.8.8", "public"),
    ],
)  # fmt: skip
def test_address_classes(ip: str, expected: str) -> None:
    assert str(address_class(ip)) == expected


def test_a_name_has_the_class_of_its_most_private_address() -> None:
    assert class_of(["93.184.216.34", "127.0.0.1"]) == AddressClass.LOOPBACK
    assert class_of(["93.184.216.34", "10.0.0.1"]) == AddressClass.PRIVATE
    assert class_of([]) == AddressClass.PRIVATE
    assert class_of(r.ip for r in resolve("localhost", 80)) == AddressClass.LOOPBACK


def test_the_matrix_registries_speak_verified_https(tls: tuple[ssl.SSLContext, ssl.SSLContext]) -> None:
    """With the system's trust store (which does not hold the test's CA) the same registry is refused."""
    served = registry(tls, lambda handler: (200, {}, TAGS))
    network = oci.Network(resolver=resolver({"registry-public.test": ["public"]}), environ={})
    try:
        with pytest.raises(oci.RegistryError, match="TLS certificate verification failed"):
            oci.list_tags(oci.repository_of(f"registry-public.test:{served.port}/acme/app"), network=network)
        assert served.paths == []
    finally:
        served.close()
