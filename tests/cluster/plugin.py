"""pytest fixtures for tests against the real control plane; tests/conftest.py registers this plugin.

    cluster      session   the running Cluster (started lazily, once, by the first test that needs it)
    kubeconfig   session   Path of its admin kubeconfig (system:masters)
    kube_client  session   lightkube Client for that admin
    namespace    function  name of a fresh namespace, deleted after the test
    flux_operator session  the same Cluster with the Flux Operator running (built and started once, by
                           the first test that needs it; build-flux-operator.sh)

Tests using any of them are marked `cluster` automatically (select with -m cluster / -m "not cluster").
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

_LOG_DIR = pytest.StashKey[Path]()
_KEEP_LOGS = pytest.StashKey[bool]()
_SUMMARY = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "cluster: needs the test control plane (started once per session)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "cluster" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.cluster)


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
    if summary := config.stash.get(_SUMMARY, ""):
        terminalreporter.write_line(summary)
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
        pytestconfig.stash[_SUMMARY] = (
            f"krmfn test cluster: ready in {c.timings['ready']:.1f}s, peak RSS {sum(rss.values())} MiB "
            f"({', '.join(f'{name} {mib}' for name, mib in rss.items())})"
        )
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


@pytest.fixture
def namespace(request: pytest.FixtureRequest, kube_client: Client) -> Iterator[str]:
    name = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:48].rstrip("-")
    name = f"{name}-{secrets.token_hex(3)}"
    try:
        create_namespace(kube_client, name, labels={"test.krmfn.dev/namespace": "true"})
    except ClusterError as e:
        pytest.fail(str(e), pytrace=False)
    yield name
    # Not waited for: the namespace controller finishes the deletion in the background.
    kube_client.delete(Namespace, name)
