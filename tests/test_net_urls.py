"""Issue 29, finding 11: every URL krmfn prints is redacted by one helper (krmfn/net/urls.py).

Before, a kubeconfig server's password was printed (``cannot reach the API server at
http://admin:S3CRET@127.0.0.1:1``). Here URLs carrying credentials (userinfo, ``token=``,
``access_token=``, ``X-Amz-Signature=``) go through every error path that prints a URL: the runner's
(unreachable, not HTTP, a command's --timeout; apply, diff and status, text and JSON) and set-image's (a
token realm refused or unreachable, a redirect or a next page elsewhere, a proxy unreachable or
unusable). No output may hold the secret. A static check then finds every message in krmfn/ that
interpolates a URL and requires it to go through the helper.
"""

from __future__ import annotations

import ast
import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hostile_server import Behaviour, hostile_server, kubeconfig
from hypothesis import given, settings
from hypothesis import strategies as st

from krmfn.functions.set_image import FUNCTION
from krmfn.functions.set_image import registry as oci
from krmfn.net.addresses import Resolved, resolve
from krmfn.net.urls import redact, secret_parameter, shown_origin
from krmfn.runner.commands.cli import main as runner_main
from krmfn.runner.commands.status_cmd import main as status_main
from krmfn.yaml.io import _load_fast, dump_fast

SECRET = "S3CRETfragment"
ROOT = Path(__file__).resolve().parent.parent


# --- the helper ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://admin:S3CRET@127.0.0.1:1", "http://***@127.0.0.1:1"),
        ("https://S3CRET@api.example:6443/k8s/clusters/c-1", "https://***@api.example:6443/k8s/clusters/c-1"),
        ("https://h/token?service=s&access_token=S3CRET&scope=x", "https://h/token?service=s&access_token=***&scope=x"),
        ("https://b.s3.example/o?X-Amz-Signature=S3CRET&X-Amz-Credential=S3CRET&X-Amz-Expires=60",
         "https://b.s3.example/o?X-Amz-Signature=***&X-Amz-Credential=***&X-Amz-Expires=60"),
        ("https://h/x?sig=S3CRET&n=2#frag-S3CRET", "https://h/x?sig=***&n=2"),
        ("https://h/x?TOKEN=S3CRET&Password=S3CRET&apikey=S3CRET", "https://h/x?TOKEN=***&Password=***&apikey=***"),
        ("http://u:S3CRET@[::1]:5000/v2/", "http://***@[::1]:5000/v2/"),
        ("http://u:S3CRET@[::1:5000", "http:***"),
        ("http://u:S3CRET@h:notaport/", "http:***"),
        ("https://registry.example/v2/a/tags/list?n=100&last=1.2", "https://registry.example/v2/a/tags/list?n=100&last=1.2"),
    ],
)  # fmt: skip
def test_redact(url: str, shown: str) -> None:
    assert redact(url) == shown


@settings(max_examples=300, deadline=None)
@given(
    secret=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=6, max_size=30).map(
        lambda text: "Q" + text.replace("@", "").replace("/", "") + "Z"
    ),
    name=st.sampled_from(["token", "access_token", "X-Amz-Signature", "sig", "client_secret", "password"]),
    where=st.sampled_from(["user", "password", "query"]),
)
def test_no_secret_survives_redact(secret: str, name: str, where: str) -> None:
    from urllib.parse import quote

    encoded = quote(secret, safe="")
    url = {
        "user": f"https://{encoded}@host.example/p",
        "password": f"https://admin:{encoded}@host.example:8443/p?n=1",
        "query": f"https://host.example/p?n=1&{name}={encoded}",
    }[where]
    shown = redact(url)
    assert encoded not in shown and secret not in shown
    assert shown_origin(url) == ("https://host.example" + (":8443" if where == "password" else ":443"))


def test_secret_parameters() -> None:
    assert all(secret_parameter(n) for n in ["token", "id_token", "X-Amz-Security-Token", "sig", "api_key"])
    assert not any(secret_parameter(n) for n in ["n", "last", "scope", "service", "limit", "continue"])


# --- the runner's error paths ----------------------------------------------------------------------------


@contextmanager
def not_http() -> Iterator[int]:
    """A server that answers every connection with text that is not HTTP."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                conn.sendall(b"SSH-2.0-OpenSSH_9.6 " + SECRET.encode() + b"\r\n\r\n")

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


SERVERS = ["http://admin:{s}@127.0.0.1:{port}", "http://{s}@127.0.0.1:{port}/k8s/clusters/c-1",
           "https://admin:{s}@127.0.0.1:{port}"]  # fmt: skip
COMMANDS = {
    "apply": ["apply", "-n", "apps", "--applyset", "app", "--retry-timeout", "0.2s"],
    "apply -o json": ["apply", "-n", "apps", "--applyset", "app", "--retry-timeout", "0.2s", "-o", "json"],
    "diff": ["diff", "-n", "apps", "--applyset", "app", "--retry-timeout", "0.2s"],
    "status": ["status", "-n", "apps", "--applyset", "app", "--retry-timeout", "0.2s"],
}


def run_command(
    command: str, server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> str:
    config = kubeconfig(tmp_path / "kc", 0, server=server)
    manifest = tmp_path / "m.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n")
    args = [*COMMANDS[command], "--kubeconfig", str(config), *extra]
    if command == "status":
        code = status_main(["status", *args[1:]])
    else:
        code = runner_main([*args, "-f", str(manifest)])
    out, err = capsys.readouterr()
    assert code != 0
    return out + err


# apply's --timeout names the step it stopped, not the server (tests/test_runner_deadlines.py)
PATHS = [(failure, command, template) for failure in ("unreachable", "not HTTP", "--timeout")
         for command in COMMANDS for template in SERVERS
         if not (failure == "--timeout" and command.startswith("apply"))]  # fmt: skip


@pytest.mark.parametrize(("failure", "command", "template"), PATHS)
def test_the_api_servers_url_is_printed_redacted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, template: str, failure: str
) -> None:
    if failure == "unreachable":
        output = run_command(command, template.format(s=SECRET, port=closed_port()), tmp_path, capsys)
        assert "***@127.0.0.1" in output and ("connection refused" in output or "TLS" in output)
    elif failure == "not HTTP":
        with not_http() as port:
            output = run_command(command, template.format(s=SECRET, port=port), tmp_path, capsys)
        assert "***@127.0.0.1" in output
    else:
        with hostile_server({}, default=Behaviour("silent")) as server:
            url = template.format(s=SECRET, port=server.port)
            output = run_command(command, url, tmp_path, capsys, "--timeout", "1s")
        assert "***@127.0.0.1" in output and "within --timeout 1s" in output
    assert SECRET not in output
    if command.endswith("json"):
        assert all(json.loads(line) for line in output.splitlines() if line.startswith("{"))


# --- set-image's error paths -----------------------------------------------------------------------------


def fake_names(host: str, port: int) -> list[Resolved]:
    """``*.test`` names are public addresses that connect to 127.0.0.1 (closed ports: nothing answers)."""
    if host.endswith(".test"):
        return [Resolved(socket.AF_INET, "93.184.216.34", ("127.0.0.1", port))]
    return resolve(host, port)


def run_set_image(host: str, network: oci.Network | None = None) -> str:
    """set-image's error for a semver rule on ``host``, as the function reports it (results)."""
    if network is not None:
        try:
            oci.list_tags(oci.repository_of(f"{host}/acme/app"), network=network)
        except oci.RegistryError as err:
            return str(err)
        pytest.fail("the registry was not refused")
    name = f"{host}/acme/app"
    rl = {
        "apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
        "items": [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                   "spec": {"template": {"spec": {"containers": [{"name": "a", "image": f"{name}:1"}]}}}}],
        "functionConfig": {"apiVersion": "fn.krmfn.dev/v1alpha1", "kind": "SetImage",
                           "images": [{"name": name, "semver": ">=1", "registry": True}]},
    }  # fmt: skip
    text, code = FUNCTION.process(dump_fast(rl), "fast")
    assert code == 1
    return json.dumps(_load_fast(text)["results"])


def challenge(realm: str) -> Behaviour:
    return Behaviour("answer", (401, {"WWW-Authenticate": f'Bearer realm="{realm}",service="s"'}, b""))


def moved(location: str) -> Behaviour:
    return Behaviour("answer", (307, {"Location": location}, b""))


def linked(target: str) -> Behaviour:
    body = json.dumps({"tags": ["1.0.0"]}).encode()
    return Behaviour("answer", (200, {"Link": f'<{target}>; rel="next"'}, body))


CREDENTIALS = f"u:{SECRET}@"
QUERY = f"?access_token={SECRET}&X-Amz-Signature={SECRET}&token={SECRET}"
REGISTRY_PATHS: dict[str, tuple[Behaviour, str]] = {
    "realm not HTTPS": (challenge(f"http://{CREDENTIALS}realm.invalid/t{QUERY}"), "not HTTPS (http://realm.invalid:80)"),
    "realm elsewhere unreachable": (challenge(f"https://{CREDENTIALS}127.0.0.1:1/t{QUERY}"), "https://127.0.0.1:1"),
    "redirect elsewhere": (moved(f"https://{CREDENTIALS}cdn.invalid/o{QUERY}"), "another origin (https://cdn.invalid:443)"),
    "next page elsewhere": (linked(f"https://{CREDENTIALS}cdn.invalid/p{QUERY}"), "another origin (https://cdn.invalid:443)"),
}  # fmt: skip


@pytest.mark.parametrize("path", list(REGISTRY_PATHS))
def test_a_registrys_urls_are_printed_as_origins_only(path: str) -> None:
    behaviour, expected = REGISTRY_PATHS[path]
    with hostile_server({("GET", "/v2/"): behaviour}) as server:
        output = run_set_image(f"127.0.0.1:{server.port}")
    assert expected in output
    assert SECRET not in output and "***" not in output  # nothing but the origin was shown


@pytest.mark.parametrize("proxy", [f"http://u:{SECRET}@127.0.0.1:{{port}}", f"socks5://u:{SECRET}@127.0.0.1:{{port}}",
                                   f"127.0.0.1:{{port}}/?token={SECRET}"])  # fmt: skip
def test_a_proxys_url_is_printed_redacted(proxy: str) -> None:
    url = proxy.format(port=closed_port())
    network = oci.Network(resolver=fake_names, environ={"HTTPS_PROXY": url})
    output = run_set_image("registry.test", network)
    assert "the proxy " in output and SECRET not in output, output


def test_a_proxy_with_credentials_gets_them_and_they_are_never_printed() -> None:
    """The proxy sees Proxy-Authorization; refusing the tunnel, it is named without its credentials."""
    refuse = Behaviour("answer", (407, {"Proxy-Authenticate": "Basic"}, b""))
    seen: list[Any] = []
    with hostile_server({}, default=refuse) as proxy:
        url = f"http://u:{SECRET}@127.0.0.1:{proxy.port}"
        network = oci.Network(resolver=fake_names, environ={"https_proxy": url, "NO_PROXY": "other.test"})
        output = run_set_image("registry.test", network)
        seen = proxy.requests
    assert seen == [("CONNECT", "registry.test:443")]
    assert "the proxy http://***@127.0.0.1" in output and "HTTP 407" in output and SECRET not in output


# --- every message that interpolates a URL goes through the helper ---------------------------------------

URL_NAMES = {"url", "server", "realm", "target", "location", "link", "proxy", "redirect", "base_url"}
ALREADY_REDACTED = {"self._server": "kube.HttpApi stores redact(config.cluster.server)",
                    "proxy.url": "proxies.Proxy.url is redact(url)"}  # fmt: skip
NOT_URLS = {("krmfn/render.py", "location"): "a file and position in the kpt package"}
MESSAGE_CALLS = {"_fail", "error", "warning", "info", "write", "print"}


def _named_url(node: ast.expr) -> str | None:
    text = ast.unparse(node)
    last = text.rsplit(".", 1)[-1].lstrip("_").lower()
    return text if last in URL_NAMES or last.endswith("_url") else None


def _messages(tree: ast.AST) -> Iterator[ast.JoinedStr]:
    """The f-strings that become messages: in a ``raise``, or an argument of an error's constructor or
    of a call that writes or reports (``_fail``, ``results.error``, ``print``...)."""
    for node in ast.walk(tree):
        roots: list[ast.AST] = []
        if isinstance(node, ast.Raise) and node.exc is not None:
            roots.append(node.exc)
        elif isinstance(node, ast.Call):
            name = ast.unparse(node.func).rsplit(".", 1)[-1]
            if name in MESSAGE_CALLS or name.endswith(("Error", "Exception")):
                roots.extend(node.args)
        for root in roots:
            yield from (found for found in ast.walk(root) if isinstance(found, ast.JoinedStr))


def test_every_message_that_interpolates_a_url_redacts_it() -> None:
    """A message in krmfn/ (a raise, an error's constructor, a write) that interpolates a variable or
    attribute named like a URL (``url``, ``server``, ``realm``, ``*_url``...) must pass it through a
    redactor (``redact``, ``shown_origin``), or be a value stored redacted."""
    found = set()
    for path in sorted((ROOT / "krmfn").rglob("*.py")):
        relative = str(path.relative_to(ROOT))
        for message in _messages(ast.parse(path.read_text(), relative)):
            for part in message.values:
                if not isinstance(part, ast.FormattedValue):
                    continue
                name = _named_url(part.value)
                if name is not None and name not in ALREADY_REDACTED and (relative, name) not in NOT_URLS:
                    found.add(f"{relative}:{message.lineno}: {{{name}}}")
    assert sorted(found) == [], "URLs in messages without krmfn.net.urls.redact:\n" + "\n".join(sorted(found))


def test_the_static_check_sees_a_url_in_a_message() -> None:
    """The check above is not vacuous: the message that printed the password is found."""
    tree = ast.parse('raise ClusterUnreachable(f"cannot reach the API server at {config.cluster.server}")')
    assert [_named_url(part.value) for m in _messages(tree) for part in m.values
            if isinstance(part, ast.FormattedValue)] == ["config.cluster.server"]  # fmt: skip
