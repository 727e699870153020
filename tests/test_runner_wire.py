"""HttpApi's standard-library wire (krmfn/runner/cluster/wire.py) against a real HTTP server on loopback: what
goes on the wire (raw paths, the server's path prefix), connection reuse, a server that closes idle
connections, and every kubeconfig credential kind (token, token file, exec plugin, basic auth) with
lightkube's refresh after a 401. TLS is exercised by every cluster test (the control plane serves HTTPS)."""

from __future__ import annotations

import base64
import json
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from lightkube.config.kubeconfig import KubeConfig

from krmfn.runner.cluster.api import ApiStatusError, Resource
from krmfn.runner.cluster.kube import HttpApi
from krmfn.runner.errors import ClusterUnreachable, KubeconfigError

JOBS = Resource(group="batch", version="v1", kind="Job", plural="jobs", namespaced=True)
CONFIGMAPS = Resource(group="", version="v1", kind="ConfigMap", plural="configmaps", namespaced=True)


class Server:
    """A keep-alive HTTP/1.1 server that records each request line, its Authorization header and the
    connection it came on; ``answer`` decides the reply."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, int]] = []  # (request line, authorization, connection number)
        self.connections = 0
        self.accepted_tokens = {"Bearer good"}
        self.close_after_reply = False  # with "Connection: close"
        self.drop_after_reply = False  # silently, as an idle timeout does
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                with server.lock:
                    server.connections += 1
                    self.number = server.connections

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                auth = self.headers.get("Authorization") or ""
                with server.lock:
                    server.requests.append((self.requestline, auth, self.number))
                if auth not in server.accepted_tokens:
                    code, reply = 401, {"kind": "Status", "reason": "Unauthorized", "message": "Unauthorized"}
                else:
                    code, reply = 200, {"kind": "ConfigMap", "metadata": {"name": "x"}, "echo": body.decode()}
                data = json.dumps(reply).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if server.close_after_reply:
                    self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(data)
                if server.close_after_reply or server.drop_after_reply:
                    self.close_connection = True

            do_GET = do_PATCH = do_DELETE = do_POST = do_PUT = _answer

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.port = self.http.server_address[1]
        self.thread = threading.Thread(target=self.http.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def lines(self) -> list[str]:
        return [line for line, _, _ in self.requests]

    def stop(self) -> None:
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def server() -> Iterator[Server]:
    running = Server()
    yield running
    running.stop()


def connect(server: Server, user: dict[str, Any], prefix: str = "", budget: float = 0.0) -> HttpApi:
    config = KubeConfig.from_dict({
        "apiVersion": "v1", "kind": "Config", "current-context": "ctx",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{server.port}{prefix}"}}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u", "namespace": "apps"}}],
        "users": [{"name": "u", "user": user}],
    }).get()  # fmt: skip
    assert config is not None
    return HttpApi(config, retry_budget=budget, sleep=lambda _: None)


def test_a_hostile_name_stays_inside_its_segment_on_the_wire_and_the_server_prefix_is_kept(
    server: Server,
) -> None:
    api = connect(server, {"token": "good"}, prefix="/k8s/clusters/c-1/")
    api.get(JOBS, "x/../../../prod/jobs/victim", "team")
    api.get(JOBS, "victim", "team/../prod")
    api.get(JOBS, "a b?c=d#e%f", "team")
    assert api.list(CONFIGMAPS, "apps", "app in (a,b)") == []  # the answer has no items
    prefix = "GET /k8s/clusters/c-1"
    assert server.lines() == [
        f"{prefix}/apis/batch/v1/namespaces/team/jobs/x%2F..%2F..%2F..%2Fprod%2Fjobs%2Fvictim HTTP/1.1",
        f"{prefix}/apis/batch/v1/namespaces/team%2F..%2Fprod/jobs/victim HTTP/1.1",
        f"{prefix}/apis/batch/v1/namespaces/team/jobs/a%20b%3Fc%3Dd%23e%25f HTTP/1.1",
        f"{prefix}/api/v1/namespaces/apps/configmaps?labelSelector=app%20in%20%28a%2Cb%29&limit=500 HTTP/1.1",
    ]


def test_requests_share_a_pool_of_connections_across_threads(server: Server) -> None:
    """The runner's worker threads come and go with each group of a step: a connection outlives them."""
    api = connect(server, {"token": "good"})
    for _ in range(5):
        api.get(CONFIGMAPS, "x", "apps")
    assert server.connections == 1
    for _ in range(5):  # one thread after another, as the groups of a step run
        thread = threading.Thread(target=api.get, args=(CONFIGMAPS, "x", "apps"))
        thread.start()
        thread.join()
    assert server.connections == 1
    together = [threading.Thread(target=api.get, args=(CONFIGMAPS, "x", "apps")) for _ in range(4)]
    for thread in together:
        thread.start()
    for thread in together:
        thread.join()
    assert 1 <= server.connections <= 4  # at most one per request in flight
    body = api.apply(CONFIGMAPS, {"metadata": {"name": "x", "namespace": "apps"}, "data": {"k": "é"}},
                     field_manager="krmfn", force=False, dry_run=True)[0]  # fmt: skip
    assert json.loads(body["echo"]) == {"metadata": {"name": "x", "namespace": "apps"}, "data": {"k": "é"}}
    assert server.lines()[-1].startswith(
        "PATCH /api/v1/namespaces/apps/configmaps/x?fieldManager=krmfn&dryRun=All "
    )


@pytest.mark.parametrize("how", ["close_after_reply", "drop_after_reply"])
def test_a_connection_the_server_closed_is_replaced_without_a_failed_request(
    server: Server, how: str
) -> None:
    sleeps: list[float] = []
    api = connect(server, {"token": "good"}, budget=10.0)
    api._sleep = sleeps.append
    setattr(server, how, True)
    for _ in range(3):
        assert api.get(CONFIGMAPS, "x", "apps") is not None
        time.sleep(0.05)  # the server's close reaches the client's socket
    assert server.connections == 3
    assert sleeps == []  # no retry: each request went out on a fresh connection


def test_an_unreachable_server_is_one_line_after_the_retry_budget(server: Server) -> None:
    api = connect(server, {"token": "good"}, budget=0.2)
    server.stop()
    with pytest.raises(
        ClusterUnreachable, match=r"^cannot reach the API server at http://127\.0\.0\.1:\d+: "
    ):
        api.get(CONFIGMAPS, "x", "apps")


def test_a_fixed_token_that_is_refused_is_an_error_not_a_loop(server: Server) -> None:
    api = connect(server, {"token": "stale"})
    with pytest.raises(ApiStatusError) as caught:
        api.get(CONFIGMAPS, "x", "apps")
    assert caught.value.code == 401
    assert [auth for _, auth, _ in server.requests] == ["Bearer stale"]


def test_a_token_file_is_read_again_after_a_401(server: Server, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("good\n")
    api = connect(server, {"tokenFile": str(token)})
    api.get(CONFIGMAPS, "x", "apps")
    token.write_text("rotated\n")  # the kubelet rotated it; the server now wants the new one
    server.accepted_tokens = {"Bearer rotated"}
    api.get(CONFIGMAPS, "x", "apps")
    api.get(CONFIGMAPS, "x", "apps")
    assert [auth for _, auth, _ in server.requests] == [
        "Bearer good", "Bearer good", "Bearer rotated", "Bearer rotated",
    ]  # fmt: skip


def exec_plugin(tmp_path: Path, tokens: list[str]) -> tuple[dict[str, Any], Callable[[], int]]:
    """An exec credential plugin that hands out ``tokens`` in turn and counts its runs."""
    runs = tmp_path / "runs"
    script = tmp_path / "plugin.py"
    script.write_text(
        "import json, pathlib, sys\n"
        f"runs = pathlib.Path({str(runs)!r})\n"
        "n = len(runs.read_text()) if runs.exists() else 0\n"
        "runs.write_text('x' * (n + 1))\n"
        f"tokens = {tokens!r}\n"
        "print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1beta1', 'kind': 'ExecCredential',"
        " 'status': {'token': tokens[min(n, len(tokens) - 1)]}}))\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": sys.executable,
                     "args": [str(script)]}}  # fmt: skip

    def count() -> int:
        return len(runs.read_text()) if runs.exists() else 0

    return user, count


def test_an_exec_plugin_runs_once_and_again_only_after_a_401(server: Server, tmp_path: Path) -> None:
    user, runs = exec_plugin(tmp_path, ["good", "renewed"])
    api = connect(server, user)
    for _ in range(4):
        api.get(CONFIGMAPS, "x", "apps")
    assert runs() == 1
    server.accepted_tokens = {"Bearer renewed"}  # the first token expired
    api.get(CONFIGMAPS, "x", "apps")
    api.get(CONFIGMAPS, "x", "apps")
    assert runs() == 2
    assert [auth for _, auth, _ in server.requests][-3:] == [
        "Bearer good",
        "Bearer renewed",
        "Bearer renewed",
    ]


def test_a_failing_exec_plugin_is_one_line_without_its_output(server: Server, tmp_path: Path) -> None:
    script = tmp_path / "plugin.py"
    script.write_text("import sys\nprint('SECRET-TOKEN', file=sys.stderr)\nsys.exit(3)\n")
    api = connect(server, {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                                    "command": sys.executable, "args": [str(script)]}})  # fmt: skip
    with pytest.raises(KubeconfigError) as caught:
        api.get(CONFIGMAPS, "x", "apps")
    assert "exit code 3" in str(caught.value)
    assert "SECRET" not in str(caught.value)
    assert server.requests == []


def test_basic_auth_is_sent(server: Server) -> None:
    server.accepted_tokens = {"Basic " + base64.b64encode(b"admin:s3cret").decode()}
    api = connect(server, {"username": "admin", "password": "s3cret"})
    assert api.get(CONFIGMAPS, "x", "apps") is not None


@pytest.mark.parametrize("token", ["sec\nret", "sec\rret", "sec\x00ret"])
def test_credentials_with_a_line_break_are_one_line_without_them(server: Server, token: str) -> None:
    """http.client refused the header with a ValueError that quoted it: a traceback showing the token."""
    api = connect(server, {"token": token})
    with pytest.raises(KubeconfigError) as caught:
        api.get(CONFIGMAPS, "x", "apps")
    assert "ret" not in str(caught.value)
    assert len(str(caught.value).splitlines()) == 1
    assert server.requests == []
