"""A real OCI registry (Debian's ``docker-registry``) for the tests, optionally behind bearer-token auth.

The token server is a small ``http.server`` thread that signs RS256 JWTs with ``openssl`` (the registry
checks them against a throw-away certificate through the ``x5c`` header), granting whatever is asked.
"""

from __future__ import annotations

import base64
import hashlib
import json
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.error import HTTPError, URLError
from urllib.parse import parse_qs, urlencode, urlparse
from urllib.request import ProxyHandler, Request, build_opener

BINARY = Path("/usr/bin/docker-registry")
INSTALL = "apt-get update && apt-get install -y docker-registry"
SERVICE = "krmfn-test-registry"
ISSUER = "krmfn-test-issuer"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"


_OPENER = build_opener(ProxyHandler({}))  # the standard library's client, never through a proxy


@dataclass
class Reply:
    status_code: int
    headers: dict[str, str]
    content: bytes

    def json(self) -> Any:
        return json.loads(self.content)


def http(method: str, url: str, content: bytes | None = None, headers: dict[str, str] | None = None,
         timeout: float = 10) -> Reply:  # fmt: skip
    """One request with urllib (not krmfn's client, which the tests check): its status, headers, body."""
    request = Request(url, data=content, headers=headers or {}, method=method)
    try:
        with _OPENER.open(request, timeout=timeout) as answer:
            return Reply(answer.status, {k.lower(): v for k, v in answer.headers.items()}, answer.read())
    except HTTPError as err:
        return Reply(err.code, {k.lower(): v for k, v in err.headers.items()}, err.read())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@dataclass
class TokenIssuer:
    key: Path
    cert_der: bytes
    requests: list[dict[str, list[str]]]

    def token(self, scope: str) -> str:
        access = []
        if scope:
            kind, name, actions = scope.split(":", 2)
            access.append({"type": kind, "name": name, "actions": actions.split(",")})
        now = int(time.time())
        header = {"alg": "RS256", "typ": "JWT", "x5c": [base64.b64encode(self.cert_der).decode()]}
        claims = {
            "iss": ISSUER,
            "sub": "",
            "aud": SERVICE,
            "exp": now + 300,
            "nbf": now - 10,
            "iat": now,
            "jti": f"t{now}{len(self.requests)}",
            "access": access,
        }
        signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
        signature = subprocess.run(
            ["openssl", "dgst", "-sha256", "-sign", str(self.key)],
            input=signing_input.encode(),
            capture_output=True,
            check=True,
        ).stdout
        return f"{signing_input}.{_b64(signature)}"


@contextmanager
def token_server(workdir: Path) -> Iterator[tuple[str, Path, TokenIssuer]]:
    """(realm URL, certificate bundle path, issuer); the issuer records every token request."""
    key, cert = workdir / "token.key", workdir / "token.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-subj", "/CN=krmfn-test", "-keyout", str(key), "-out", str(cert)),
        ],
        capture_output=True,
        check=True,
    )
    der = subprocess.run(
        ["openssl", "x509", "-in", str(cert), "-outform", "DER"], capture_output=True, check=True
    ).stdout
    issuer = TokenIssuer(key, der, [])

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            query = parse_qs(urlparse(self.path).query)
            issuer.requests.append(query)
            scopes = query.get("scope", [""])
            body = json.dumps({"token": issuer.token(scopes[0])}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/token", cert, issuer
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def registry(workdir: Path, auth: dict[str, Any] | None = None) -> Iterator[str]:
    """Starts docker-registry on a free loopback port; yields ``127.0.0.1:<port>``."""
    assert BINARY.exists(), f"{BINARY} is required for the registry tests; install it: {INSTALL}"
    port = free_port()
    storage = workdir / "storage"
    storage.mkdir(parents=True, exist_ok=True)
    config: dict[str, Any] = {
        "version": 0.1,
        "log": {"level": "error", "accesslog": {"disabled": True}},
        "storage": {"filesystem": {"rootdirectory": str(storage)}},
        "http": {"addr": f"127.0.0.1:{port}"},
    }
    if auth:
        config["auth"] = auth
    config_path = workdir / "config.yml"
    config_path.write_text(json.dumps(config))  # JSON is YAML
    log = (workdir / "registry.log").open("w")
    proc = subprocess.Popen([str(BINARY), "serve", str(config_path)], stdout=log, stderr=subprocess.STDOUT)
    host = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            assert proc.poll() is None, f"docker-registry exited: {(workdir / 'registry.log').read_text()}"
            try:
                if http("GET", f"http://{host}/v2/", timeout=1).status_code in (200, 401):
                    break
            except (URLError, OSError):
                pass
            assert time.monotonic() < deadline, "docker-registry did not start within 20s"
            time.sleep(0.05)
        yield host
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


class Pusher:
    """Pushes a tiny OCI image manifest per tag over the distribution HTTP API."""

    def __init__(self, host: str) -> None:
        self.base = f"http://{host}"
        self.tokens: dict[str, str] = {}

    def _send(
        self, method: str, url: str, repo: str, content: bytes = b"", headers: dict[str, str] | None = None
    ) -> Reply:
        scope = f"repository:{repo}:pull,push"
        headers = dict(headers or {})
        if scope in self.tokens:
            headers["Authorization"] = f"Bearer {self.tokens[scope]}"
        response = http(method, url, content, headers)
        challenge = response.headers.get("www-authenticate", "")
        if response.status_code == 401 and challenge.startswith("Bearer"):
            realm = challenge.split('realm="')[1].split('"')[0]
            service = challenge.split('service="')[1].split('"')[0]
            got = http("GET", f"{realm}?{urlencode({'service': service, 'scope': scope})}")
            self.tokens[scope] = got.json()["token"]
            headers["Authorization"] = f"Bearer {self.tokens[scope]}"
            response = http(method, url, content, headers)
        assert response.status_code < 300, f"{method} {url}: {response.status_code} {response.content!r}"
        return response

    def blob(self, repo: str, data: bytes) -> str:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        start = self._send("POST", f"{self.base}/v2/{repo}/blobs/uploads/", repo)
        location = start.headers["location"]
        url = location if location.startswith("http") else self.base + location
        # appended by hand, after the upload's own _state query parameter
        url += ("&" if "?" in url else "?") + f"digest={digest}"
        self._send(
            "PUT",
            url,
            repo,
            content=data,
            headers={"Content-Type": "application/octet-stream"},
        )
        return digest

    def push(self, repo: str, tags: list[str]) -> None:
        for tag in tags:
            config = json.dumps({"architecture": "amd64", "os": "linux", "tag": tag}).encode()
            layer = f"layer of {repo}:{tag}".encode()
            manifest = {
                "schemaVersion": 2,
                "mediaType": OCI_MANIFEST,
                "config": {
                    "mediaType": "application/vnd.oci.image.config.v1+json",
                    "digest": self.blob(repo, config),
                    "size": len(config),
                },
                "layers": [
                    {
                        "mediaType": "application/vnd.oci.image.layer.v1.tar",
                        "digest": self.blob(repo, layer),
                        "size": len(layer),
                    }
                ],
            }
            self._send(
                "PUT",
                f"{self.base}/v2/{repo}/manifests/{tag}",
                repo,
                content=json.dumps(manifest).encode(),
                headers={"Content-Type": OCI_MANIFEST},
            )
