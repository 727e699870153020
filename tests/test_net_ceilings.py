"""Issue 29, finding 4: every answer from the cluster or a registry is read under a byte ceiling.

Before, a Job's log request asked for ``limitBytes`` and read the whole answer: a server ignoring the limit
sent 300 MB and the runner peaked at 938 MB. Here a loopback server ignores every limit and sends 400 MB
(never announcing a length) for each kind of request: the unary get, list and apply, discovery, a watch's
single line and a watch's total, the logs, a registry's tag page and its token. Each request runs in a
child process, whose peak RSS (``VmHWM``, tests/peak_rss.py) must stay far below what reading the
answer would take, and whose error must be one clear line naming the ceiling (the logs: the first
64 KiB, as ``limitBytes`` would have cut them).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hostile_server import CORE_DISCOVERY, Behaviour, answer, hostile_server, kubeconfig
from peak_rss import READ_PEAK

FLOOD = 400 * 1024 * 1024
PEAK_MB = 220
"""The child's peak RSS: its imports (~45 MB) and one answer at the largest ceiling (64 MiB), with room."""
EVENT = json.dumps({"type": "MODIFIED", "object": {"metadata": {"name": "x"}, "data": {"k": "v" * 2**20}}})

RUNNER = (
    READ_PEAK.replace("{", "{{").replace("}", "}}")
    + """
import json, sys, threading
from krmfn.runner.cluster.api import Resource
from krmfn.runner.cluster.kube import connect
api = connect(sys.argv[1], None, retry_budget=0)
cms = Resource("", "v1", "ConfigMap", "configmaps", True)
try:
    found = {call}
    outcome = "returned " + (str(len(found)) if isinstance(found, (str, list)) else type(found).__name__)
except Exception as err:
    outcome = f"{{type(err).__name__}}: {{err}}"
peak = _peak_bytes() / 2**20
print(json.dumps({{"outcome": outcome, "peak_mb": peak}}))
"""
)
CM = "/api/v1/namespaces/apps/configmaps"
CALLS = {
    "get": ("GET", f"{CM}/x", "api.get(cms, 'x', 'apps')", "over its ceiling of 64 MiB"),
    "list": ("GET", CM, "api.list(cms, 'apps', 'app=x')", "over its ceiling of 64 MiB"),
    "apply": ("PATCH", f"{CM}/x",
              "api.apply(cms, {'metadata': {'name': 'x', 'namespace': 'apps'}}, field_manager='m', "
              "force=False, dry_run=False)", "over its ceiling of 64 MiB"),
    "discovery": ("GET", "/apis/example.com/v1", "api.resource('example.com/v1', 'Widget')",
                  "over its ceiling of 8 MiB"),
    "watch line": ("GET", CM,
                   "list(api.watch(cms, 'x', 'apps', '', threading.Event()))",
                   "a line of the watch of x is over its ceiling of 64 MiB"),
    "watch total": ("GET", CM,  # each event read, then dropped
                    "[sum(1 for _ in api.watch(cms, 'x', 'apps', '', threading.Event()))]",
                    "the watch of x is over its ceiling of 256 MiB in all"),
    "logs": ("GET", "/api/v1/namespaces/apps/pods/p/log", "api.logs('p', 'apps', 'main', 20)",
             "returned 65536"),
}  # fmt: skip


def run_child(code: str, *args: str) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=600, check=False
    )
    assert proc.returncode == 0, proc.stderr
    found: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return found


@pytest.mark.parametrize("kind", list(CALLS))
def test_a_runner_request_reads_a_flood_under_its_ceiling(tmp_path: Path, kind: str) -> None:
    method, path, call, expected = CALLS[kind]
    if kind == "watch total":
        flood = Behaviour("flood-lines", line=EVENT.encode() + b"\n", total=FLOOD)
    else:
        flood = Behaviour("flood-line" if kind == "watch line" else "flood", total=FLOOD)
    script = {(method, path): flood, ("GET", "/api/v1"): answer(200, CORE_DISCOVERY)}
    with hostile_server(script) as server:
        found = run_child(RUNNER.format(call=call), str(kubeconfig(tmp_path / "kc", server.port)))
    print(f"\n{kind}: {found['outcome']}; peak RSS {found['peak_mb']:.0f} MB")
    assert expected in str(found["outcome"])
    assert "\n" not in str(found["outcome"])
    assert isinstance(found["peak_mb"], float) and found["peak_mb"] < PEAK_MB


REGISTRY = (
    READ_PEAK
    + """
import json, sys
from krmfn.functions.set_image import registry as oci
try:
    oci.list_tags(oci.repository_of(sys.argv[1] + "/acme/app"))
    outcome = "returned"
except oci.RegistryError as err:
    outcome = str(err)
peak = _peak_bytes() / 2**20
print(json.dumps({"outcome": outcome, "peak_mb": peak}))
"""
)


@pytest.mark.parametrize("kind", ["tags", "token"])
def test_a_registry_request_reads_a_flood_under_its_ceiling(kind: str) -> None:
    flood = Behaviour("flood", total=FLOOD)
    with hostile_server({("GET", "/token"): flood}) as realm:
        challenge = {"WWW-Authenticate": f'Bearer realm="http://127.0.0.1:{realm.port}/token",service="s"'}
        page = answer(401, b"", **challenge) if kind == "token" else flood
        with hostile_server({("GET", "/v2/acme/app/tags/list"): page}) as registry:
            found = run_child(REGISTRY, f"127.0.0.1:{registry.port}")
    print(f"\nregistry {kind}: {found['outcome']}; peak RSS {found['peak_mb']:.0f} MB")
    ceiling = "4 MiB" if kind == "tags" else "64 KiB"
    assert f"over its ceiling of {ceiling}" in str(found["outcome"])
    assert isinstance(found["peak_mb"], float) and found["peak_mb"] < PEAK_MB
