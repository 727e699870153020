"""pytest fixtures for tests against the real control plane; tests/conftest.py registers this plugin.

    cluster      session   the running Cluster (started lazily, once, by the first test that needs it)
    kubeconfig   session   Path of its admin kubeconfig (system:masters)
    kube_client  session   lightkube Client for that admin
    namespace    function  name of a fresh namespace, deleted after the test
    flux_operator session  the same Cluster with the Flux Operator running (built and started once, by
                           the first test that needs it; build-flux-operator.sh)
    real_node    session   a RealNode (node.py): containerd + kubelet joined to the cluster; started by the
                           first test that needs it, stopped right after the last one (it holds the
                           machine's node lock), before the cluster
    real_namespace function  like namespace, but its pods run on the real node

Tests using any of them are marked `cluster` automatically (select with -m cluster / -m "not cluster"),
and those on the real node `real_node` too.
If the cluster (or the operator) cannot be built or started the tests error; they are never skipped.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import tempfile
import time
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest
from lightkube import Client
from lightkube.resources.core_v1 import Namespace

from .cluster import Cluster, ClusterError, cache_dir, create_namespace
from .node import REAL_NAMESPACE, RealNode

_LOG_DIR = pytest.StashKey[Path]()
_KEEP_LOGS = pytest.StashKey[bool]()
_SUMMARY = pytest.StashKey[list[str]]()
_NODE = pytest.StashKey[RealNode]()
_LAST_ON_NODE = pytest.StashKey[str]()  # node id of the last test that needs the real node


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "cluster: needs the test control plane (started once per session)")
    config.addinivalue_line("markers", "real_node: runs pods on the real node (node.py; as root)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    on_node = []
    for item in items:
        if "cluster" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.cluster)
        if "real_node" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.real_node)
            on_node.append(item.nodeid)
    if on_node:
        config.stash[_LAST_ON_NODE] = on_node[-1]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    yield
    # The real node is the machine's (one at a time): free it as soon as this session is done with it.
    if item.nodeid == item.config.stash.get(_LAST_ON_NODE, None):
        _stop_node(item.config)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    log_dir = item.config.stash.get(_LOG_DIR, None)
    if report.failed and log_dir is not None and "cluster" in getattr(item, "fixturenames", ()):
        item.config.stash[_KEEP_LOGS] = True
        if log_dir.exists():
            report.sections.append(("krmfn test cluster", f"component logs: {log_dir}"))
    return report


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    for line in config.stash.get(_SUMMARY, []):
        terminalreporter.write_line(line)
    if config.stash.get(_KEEP_LOGS, False) and config.stash[_LOG_DIR].exists():
        terminalreporter.write_line(f"krmfn test cluster logs kept in {config.stash[_LOG_DIR]}", red=True)


@pytest.fixture(scope="session")
def cluster(pytestconfig: pytest.Config) -> Iterator[Cluster]:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    log_dir = cache_dir() / "cluster-logs" / f"{stamp}-{os.getpid()}"
    pytestconfig.stash[_LOG_DIR] = log_dir
    workdir = Path(tempfile.mkdtemp(prefix="krmfn-cluster-"))
    c = Cluster(workdir, log_dir=log_dir)
    try:
        c.up()
    except ClusterError as e:
        pytestconfig.stash[_KEEP_LOGS] = True
        shutil.rmtree(workdir, ignore_errors=True)
        pytest.fail(f"the krmfn test cluster did not start: {e}", pytrace=False)
    try:
        yield c
    finally:
        rss = {name: kib // 1024 for name, kib in c.peak_rss_kib().items()}
        pytestconfig.stash.setdefault(_SUMMARY, []).insert(
            0,
            f"krmfn test cluster: ready in {c.timings['ready']:.1f}s, peak RSS {sum(rss.values())} MiB "
            f"({', '.join(f'{name} {mib}' for name, mib in rss.items())})",
        )
        _stop_node(pytestconfig)  # before the control plane, if a test was interrupted
        c.down()
        shutil.rmtree(workdir, ignore_errors=True)
        if not pytestconfig.stash.get(_KEEP_LOGS, False):
            shutil.rmtree(log_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def flux_operator(cluster: Cluster) -> Cluster:
    try:
        cluster.start_flux_operator()
    except ClusterError as e:
        pytest.fail(f"the Flux Operator did not start: {e}", pytrace=False)
    return cluster


@pytest.fixture(scope="session")
def kubeconfig(cluster: Cluster) -> Path:
    return cluster.kubeconfig


@pytest.fixture(scope="session")
def kube_client(cluster: Cluster) -> Client:
    return cluster.client()


@pytest.fixture(scope="session")
def real_node(cluster: Cluster, pytestconfig: pytest.Config) -> RealNode:
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")
    terminal = pytestconfig.pluginmanager.getplugin("terminalreporter")

    def say(message: str) -> None:  # shown at once, whatever the capture mode
        with capture.global_and_fixture_disabled():
            terminal.write_line(f"krmfn real node: {message}", yellow=True)

    node = RealNode(cluster, pytestconfig.stash[_LOG_DIR] / "real-node", on_wait=say)
    try:
        node.up()
    except ClusterError as e:
        pytestconfig.stash[_KEEP_LOGS] = True
        pytest.fail(f"the krmfn real node did not start: {e}", pytrace=False)
    if node.swept:
        say(f"swept what a killed run left: {len(node.swept) - 1} containers and tasks, mounts, bridge")
    pytestconfig.stash[_NODE] = node
    return node  # stopped by _stop_node, after the last test that needs it


def _stop_node(config: pytest.Config) -> None:
    node = config.stash.get(_NODE, None)
    if node is None:
        return
    del config.stash[_NODE]
    rss = {name: kib // 1024 for name, kib in node.peak_rss_kib().items()}
    try:
        node.down()
        stopped = f"stopped in {node.timings['down']:.1f}s"
    except ClusterError as e:
        config.stash[_KEEP_LOGS] = True
        stopped = f"stopping it failed: {e}"
    config.stash.setdefault(_SUMMARY, []).append(
        f"krmfn real node: Ready {node.timings['ready'] - node.timings['sweep']:.1f}s after its start "
        f"(images imported in {node.timings['images-imported']:.1f}s; builds checked in "
        f"{node.timings['build']:.1f}s, lock taken {node.timings['lock'] - node.timings['build']:.1f}s "
        f"later), peak RSS {sum(rss.values())} MiB "
        f"({', '.join(f'{name} {mib}' for name, mib in rss.items())}), {stopped}"
    )


def _fresh_namespace(
    request: pytest.FixtureRequest, client: Client, annotations: dict[str, str] | None = None
) -> Iterator[str]:
    name = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:48].rstrip("-")
    name = f"{name}-{secrets.token_hex(3)}"
    try:
        create_namespace(client, name, labels={"test.krmfn.dev/namespace": "true"}, annotations=annotations)
    except ClusterError as e:
        pytest.fail(str(e), pytrace=False)
    yield name
    # Not waited for: the namespace controller finishes the deletion in the background.
    client.delete(Namespace, name)


@pytest.fixture
def namespace(request: pytest.FixtureRequest, kube_client: Client) -> Iterator[str]:
    yield from _fresh_namespace(request, kube_client)


@pytest.fixture
def real_namespace(request: pytest.FixtureRequest, kube_client: Client, real_node: RealNode) -> Iterator[str]:
    yield from _fresh_namespace(request, kube_client, REAL_NAMESPACE)
