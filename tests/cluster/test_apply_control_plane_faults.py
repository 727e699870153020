"""`krmfn apply` while the control plane or the network fails under it: the deterministic forms of the
fault campaign's survivable faults (tests/chaos/). etcd restarted, kube-controller-manager down (the Job
stalls), connections reset, refused or stalled by a loopback proxy, all during a step's wait.

After each: exit 0, every step healthy, the Job ran once (one pod), the inventory is coherent.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from chaos.proxy import FaultProxy
from lightkube import Client

from .cluster import Cluster
from .runner_fixtures import Spawn, final_wait, inventory_problems, job
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
    out = run.finish(timeout=120)
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
