"""`krmfn apply` while the control plane or the network fails under it: the deterministic forms of the
fault campaign's survivable faults (tests/chaos/). etcd restarted, kube-controller-manager down (the Job
stalls), connections reset, refused or stalled by a loopback proxy, all during a step's wait.

After each: exit 0, every step healthy, the Job ran once (one pod), the inventory is coherent.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from chaos.proxy import FaultProxy
from lightkube import Client
from lightkube.resources.core_v1 import Secret

from krmfn.net.ceilings import OBJECT, Ceiling
from krmfn.net.errors import Unreachable
from krmfn.runner.cluster.kube import HttpApi, load_config
from krmfn.runner.cluster.wire import Reply
from krmfn.runner.engine.engine import Options, Runner
from krmfn.runner.plan import build_plan
from krmfn.runner.reserved import JOB_RECORDS, LOCK

from .cluster import Cluster
from .objects import annotations_of
from .patience import STEP_TIMEOUT_SECONDS
from .runner_fixtures import Spawn, configmap, final_wait, inventory_problems, job
from .runner_fixtures import spawn as spawn  # noqa: PLC0414 (re-exported fixture)
from .test_apply_faults import runs_of, waiting_in


@pytest.fixture
def proxy(cluster: Cluster, tmp_path: Path) -> Iterator[tuple[FaultProxy, Path]]:
    """A fault proxy in front of the API server and a kubeconfig that goes through it."""
    with FaultProxy(int(cluster.server.rpartition(":")[2]), lifetime=120) as p:
        config = json.loads(cluster.kubeconfig.read_text())
        config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{p.port}"
        path = tmp_path / "proxy.kubeconfig"
        path.write_text(json.dumps(config))
        yield p, path


def survives(spawn: Spawn, client: Client, namespace: str, fault: Callable[[], object], *flags: str) -> None:
    run = spawn([job("db-migration", 0, slow="3s"), final_wait(job("warmup", 1))], *flags)
    run.until(waiting_in(0))
    fault()
    out = run.finish()
    assert out.code == 0, out.error + out.stderr
    assert out.step_results() == [("step0", "healthy"), ("step1", "healthy")]
    assert runs_of(client, "db-migration", namespace)[1:] == (1, 1)
    assert runs_of(client, "warmup", namespace)[1:] == (1, 1)
    assert inventory_problems(client, namespace) == []


def test_etcd_restart_during_a_wait_is_survived(
    cluster: Cluster, kube_client: Client, namespace: str, spawn: Spawn
) -> None:
    survives(spawn, kube_client, namespace, lambda: cluster.restart("etcd", down_for=1.0))


def test_controller_manager_down_during_a_wait_stalls_the_job_and_the_run_waits(
    cluster: Cluster, kube_client: Client, namespace: str, spawn: Spawn
) -> None:
    # Down for longer than the Job's pod takes: its completion is seen only once the controller is back.
    survives(spawn, kube_client, namespace, lambda: cluster.restart("kube-controller-manager", down_for=4.0))


@pytest.mark.parametrize(
    "fault",
    [
        pytest.param(lambda p: p.reset_all(), id="reset"),
        pytest.param(lambda p: p.drop_all(), id="drop"),
        pytest.param(lambda p: (p.reset_all(), p.refuse_for(3.0)), id="refuse"),
        pytest.param(lambda p: p.stall_for(3.0), id="stall"),
    ],
)
def test_network_fault_during_a_wait_is_survived(
    fault: Callable[[FaultProxy], object],
    proxy: tuple[FaultProxy, Path],
    kube_client: Client,
    namespace: str,
    spawn: Spawn,
) -> None:
    p, kubeconfig = proxy
    survives(spawn, kube_client, namespace, lambda: fault(p), "--kubeconfig", str(kubeconfig))


# --- regressions found by the campaign -------------------------------------------------------------------


@pytest.mark.parametrize("lost", ["release", "record"])
def test_parent_write_whose_answer_is_lost_is_not_taken_for_a_lost_lock(
    lost: str, kubeconfig: Path, kube_client: Client, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Campaign seed 7, run 95 (proxy-cut-watches): the run's last write of the parent (records, lock
    released) reached the API server, its connection was reset before the answer came back, the client
    retried the PUT with the old resourceVersion and got 409; the runner read the parent, found no lock
    and reported "lost the lock ... changed by another run" (exit 1) after a run that had succeeded.
    Here the answer of one PUT of the parent is dropped after the server applied it: the release at the
    end, or a record written mid-run (it carries the lock)."""
    api = HttpApi(load_config(str(kubeconfig), None))
    real = api._wire.send
    dropped: list[str] = []

    def send(method: str, target: str, body: bytes | None, headers: Any, ceiling: Ceiling = OBJECT) -> Reply:
        reply = real(method, target, body, headers, ceiling)
        sent = json.loads(body or b"{}")
        locked = LOCK in ((sent.get("metadata") or {}).get("annotations") or {})
        path = target.partition("?")[0]
        is_parent = method == "PUT" and path.endswith(f"/namespaces/{namespace}/secrets/krmfn")
        if is_parent and not dropped and locked == (lost == "record") and reply.status == 200:
            dropped.append(method)
            raise Unreachable("the connection was reset (the answer was lost)")
        return reply

    monkeypatch.setattr(api._wire, "send", send)
    docs = [job("db-migration", 0), configmap("after", 1)]
    plan = build_plan(docs, namespace=namespace, default_timeout=STEP_TIMEOUT_SECONDS)
    try:
        result = Runner(api, Options(namespace=namespace), lambda event: None).run(plan)
    finally:
        api.close()
    assert dropped == ["PUT"]
    assert result.ok, result.error
    notes = annotations_of(kube_client.get(Secret, "krmfn", namespace=namespace))
    assert LOCK not in notes
    assert "db-migration=" in notes[JOB_RECORDS]
    assert inventory_problems(kube_client, namespace) == []
