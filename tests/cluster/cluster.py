"""A real Kubernetes control plane for krmfn's tests, built from source and run on 127.0.0.1.

etcd, kube-apiserver, kube-controller-manager and kube-scheduler are the real thing; kwok plays the
kubelet of one fake Node, following the stages in stages.yaml. Nothing here is mocked: Jobs, Deployments,
CRDs, RBAC, admission and garbage collection all run the upstream code. One optional component: the Flux
Operator (``start_flux_operator()``), built by build-flux-operator.sh, for the ResourceSet e2e tests.

    with Cluster(Path("/tmp/c")) as c:
        c.client().create(...)
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import functools
import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from lightkube import ApiError, Client, KubeConfig, codecs
from lightkube.models.authentication_v1 import TokenRequestSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.resources.core_v1 import Namespace, Node, Pod, ServiceAccount

from .patience import EVENT_WAIT

HERE = Path(__file__).resolve().parent
BUILD_SH = HERE / "build.sh"
FLUX_OPERATOR_SH = HERE / "build-flux-operator.sh"
FLUX_OPERATOR = "flux-operator"
FLUX_NAMESPACE = "flux-system"  # the operator's RUNTIME_NAMESPACE
OPTIONAL = (FLUX_OPERATOR,)  # the components `up --with` and the fixtures can add
STAGES = HERE / "stages.yaml"
NODE_NAME = "kwok-node-0"
# kwok manages only nodes carrying this annotation, so the cluster could hold other nodes too.
KWOK_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
POLL = 0.05
SERVICE_CIDR = "10.96.0.0/16"
# Stop order and SIGTERM grace seconds. Clients first: an apiserver that loses etcd spends its whole grace
# period retrying. etcd's graceful stop can wait 7s for connections to go idle, but its data is thrown away.
STOP_WAVES = (
    ((FLUX_OPERATOR, "kwok", "kube-scheduler", "kube-controller-manager"), 10.0),
    (("kube-apiserver",), 10.0),
    (("etcd",), 1.0),
)


class ClusterError(RuntimeError):
    """The control plane could not be built, started or reached."""


def cache_dir() -> Path:
    return Path(os.environ.get("KRMFN_CACHE") or Path.home() / ".cache" / "krmfn")


def _run_build(script: Path) -> list[str]:
    """Runs a build script (a no-op when everything is cached) and returns its stdout lines."""
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise ClusterError(f"{script} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    return proc.stdout.strip().splitlines()


def build() -> Path:
    """Runs build.sh and returns the directory of the binaries."""
    return Path(_run_build(BUILD_SH)[-1])


def build_flux_operator() -> tuple[Path, Path]:
    """Runs build-flux-operator.sh; returns the operator binary and the directory of its CRDs."""
    binary, crds = _run_build(FLUX_OPERATOR_SH)[-2:]
    return Path(binary), Path(crds)


def wait_until(what: str, check: Callable[[], bool], timeout: float, interval: float = POLL) -> None:
    """Polls check() until it returns True; raises ClusterError after timeout seconds, and never sooner
    than patience.EVENT_WAIT: a wait for the cluster to act bounds a hang, it does not time the cluster
    (on a busy machine its controllers lag by tens of seconds)."""
    timeout = max(timeout, EVENT_WAIT)
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise ClusterError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def has_default_service_account(client: Client, namespace: str) -> bool:
    try:
        client.get(ServiceAccount, "default", namespace=namespace)
    except ApiError as e:
        if e.status.code == 404:
            return False
        raise
    return True


def create_namespace(
    client: Client, name: str, labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None
) -> str:
    """Creates namespace ``name`` and returns the name once its default ServiceAccount exists: pods are
    refused until the controller-manager has made it. Raises ClusterError after 30 s."""
    client.create(Namespace(metadata=ObjectMeta(name=name, labels=labels, annotations=annotations)))
    wait_until(
        f"default ServiceAccount in {name}", lambda: has_default_service_account(client, name), timeout=30
    )
    return name


def _established(client: Client, name: str) -> bool:
    got = client.get(CustomResourceDefinition, name)
    conditions = got.status.conditions if got.status else None  # no status yet: not established
    return any(c.type == "Established" and c.status == "True" for c in conditions or [])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


_prctl = ctypes.CDLL(None).prctl  # looked up here, not in the forked child


def _die_with_parent() -> None:
    # PR_SET_PDEATHSIG: a killed pytest must not leave an apiserver behind.
    _prctl(1, signal.SIGTERM)


def spawn(
    argv: list[str], log_path: Path, *, cwd: Path, env: dict[str, str] | None = None, die_with_parent: bool
) -> tuple[subprocess.Popen[bytes], IO[bytes]]:
    """Starts one component with its output appended to ``log_path``; returns it and the open log."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = log_path.open("ab")
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=cwd,
        env=env,
        start_new_session=True,  # Ctrl-C in a terminal must not hit the components
        # Safe enough here: the tests do not start threads that could hold locks across the fork.
        preexec_fn=_die_with_parent if die_with_parent else None,  # noqa: PLW1509
    )
    return proc, log


def stop(procs: list[subprocess.Popen[bytes]], grace: float) -> None:
    """SIGTERM to all of ``procs`` at once, SIGKILL to those still running ``grace`` seconds later."""
    for proc in procs:
        proc.terminate()
    deadline = time.monotonic() + grace
    for proc in procs:
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def answers_200(conn: http.client.HTTPConnection, path: str) -> bool:
    """Whether a GET of ``path`` on ``conn`` answers 200 (False while nothing listens); closes ``conn``."""
    try:
        conn.request("GET", path)
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


def check_alive(procs: dict[str, subprocess.Popen[bytes]], log_dir: Path) -> None:
    """Raises ClusterError with the end of its log if a component has exited."""
    for name, proc in procs.items():
        if proc.poll() is not None:
            tail = (log_dir / f"{name}.log").read_text(errors="replace")[-3000:]
            raise ClusterError(f"{name} exited with {proc.returncode}:\n{tail}")


def peak_rss_kib(pids: dict[str, int]) -> dict[str, int]:
    """Peak resident set size (VmHWM) of each process, in KiB."""
    out = {}
    for name, pid in pids.items():
        status = Path(f"/proc/{pid}/status").read_text()
        out[name] = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM"))
    return out


_OPENSSL_CNF = """\
[req]
distinguished_name = dn
prompt = no
[dn]
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
[server]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,\
DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local
[client]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = clientAuth
"""

# name -> (subject, extensions section). The scheduler authenticates as in a kubeadm cluster, so the
# bootstrap RBAC roles apply to it; the controller-manager and kwok act as cluster admins (see _up).
_CERTS = {
    "apiserver": ("/CN=kube-apiserver", "server"),
    "admin": ("/O=system:masters/CN=krmfn-admin", "client"),
    "controller-manager": ("/O=system:masters/CN=system:kube-controller-manager", "client"),
    "scheduler": ("/CN=system:kube-scheduler", "client"),
    "kwok": ("/O=system:masters/CN=kwok", "client"),
    "kwok-serving": (f"/CN={NODE_NAME}", "server"),  # the node's "kubelet" endpoint: logs (container_logs)
    # The real node (node.py): the API server's identity towards kubelets (pods/log, exec), the kubelet's
    # own (the Node authorizer knows it by this name and group), its serving certificate and kube-proxy's.
    "apiserver-kubelet-client": ("/O=system:masters/CN=kube-apiserver-kubelet-client", "client"),
    "kubelet": ("/O=system:nodes/CN=system:node:127.0.0.1", "client"),
    "kubelet-serving": ("/CN=127.0.0.1", "server"),
    "kube-proxy": ("/CN=system:kube-proxy", "client"),  # bound to system:node-proxier by the bootstrap
}


def make_pki(pki: Path) -> None:
    """Writes a throw-away CA, serving and client certificates and the service-account key pair (EC P-256:
    generating these takes milliseconds, RSA would take a noticeable part of the start time)."""
    pki.mkdir(parents=True, exist_ok=True)
    (pki / "openssl.cnf").write_text(_OPENSSL_CNF)
    req = ["openssl", "req", "-x509", "-config", str(pki / "openssl.cnf"), "-days", "3650", "-noenc",
           "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]  # fmt: skip

    def run_all(*cmds: list[str]) -> None:  # in parallel
        procs = [subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for c in cmds]
        for c, p in zip(cmds, procs, strict=True):
            _, err = p.communicate()
            if p.returncode:
                raise ClusterError(f"{' '.join(c)} failed: {err.decode()}")

    def cert(name: str, subject: str, extensions: str, *ca: str) -> list[str]:
        out = [str(pki / f"{name}.key"), str(pki / f"{name}.crt")]
        return [*req, *ca, "-extensions", extensions, "-subj", subject, "-keyout", out[0], "-out", out[1]]

    sa_key = ["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
              "-out", str(pki / "sa.key")]  # fmt: skip
    run_all(cert("ca", "/CN=krmfn-test-ca", "ca"), sa_key)
    signed_by_ca = ("-CA", str(pki / "ca.crt"), "-CAkey", str(pki / "ca.key"))
    run_all(
        *(cert(name, subject, ext, *signed_by_ca) for name, (subject, ext) in _CERTS.items()),
        ["openssl", "pkey", "-in", str(pki / "sa.key"), "-pubout", "-out", str(pki / "sa.pub")],
    )


def write_kubeconfig(path: Path, server: str, ca: Path, user: dict[str, str]) -> Path:
    """Writes a self-contained kubeconfig (certificates embedded) for one user entry."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "krmfn",
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca.read_bytes()).decode(),
                },
            }
        ],
        "users": [{"name": "krmfn", "user": user}],
        "contexts": [{"name": "krmfn", "context": {"cluster": "krmfn", "user": "krmfn"}}],
        "current-context": "krmfn",
    }
    path.write_text(json.dumps(config, indent=2))  # JSON is YAML; every kubeconfig reader accepts it.
    path.chmod(0o600)
    return path


def cert_user(pki: Path, name: str) -> dict[str, str]:
    return {
        "client-certificate-data": base64.b64encode((pki / f"{name}.crt").read_bytes()).decode(),
        "client-key-data": base64.b64encode((pki / f"{name}.key").read_bytes()).decode(),
    }


# What `kubectl logs` (pods/log) answers for every pod on kwok's node, served by kwok from files (its
# ClusterLogs configuration). The lines are in the CRI log format kwok reads; tailLines, limitBytes and
# previous (a restarted container's run before: PREVIOUS_LOG) work as with a kubelet. Tests of what a
# container itself logs run on the real node (node.py).
COUNTED_LINES = 30
COUNTED_LOG = tuple(f"migration step {i:02d} of {COUNTED_LINES}" for i in range(1, COUNTED_LINES + 1))
"""Every container: 30 numbered lines, so a tail of N shows exactly which lines came."""
PREVIOUS_LOG = ("previous run: applying 0042", "previous run: lock timeout after 30s")


def write_container_logs(directory: Path) -> Path:
    """Writes the log files and kwok's ClusterLogs configuration into ``directory``; returns the config."""
    directory.mkdir(parents=True, exist_ok=True)

    def cri(lines: tuple[str, ...]) -> str:
        stamp = "2026-01-01T00:00:00.000000000Z"
        return "".join(f"{stamp} stdout F {line}\n" for line in lines)

    files = {"counted": COUNTED_LOG, "previous": PREVIOUS_LOG}
    for name, lines in files.items():
        (directory / f"{name}.log").write_text(cri(lines), encoding="utf-8")

    def path(name: str) -> str:
        return json.dumps(str(directory / f"{name}.log"))  # a YAML string, whatever the directory

    config = directory / "cluster-logs.yaml"
    config.write_text(
        "apiVersion: kwok.x-k8s.io/v1alpha1\nkind: ClusterLogs\nmetadata: {name: krmfn-test-logs}\nspec:\n"
        "  logs:\n"
        f"  - logsFile: {path('counted')}\n    previousLogsFile: {path('previous')}\n"
    )
    return config


class Cluster:
    """One control plane with its state in workdir: pki/, etcd/, *.kubeconfig, and logs in log_dir."""

    def __init__(self, workdir: Path, *, log_dir: Path | None = None, die_with_parent: bool = True) -> None:
        self.workdir = workdir
        self.log_dir = log_dir or workdir / "logs"
        self.kubeconfig = workdir / "kubeconfig"
        self.die_with_parent = die_with_parent
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self._argv: dict[str, list[str]] = {}  # what each component was started with, for restarts
        self.timings: dict[str, float] = {}  # seconds since up() started, per milestone
        self.server = ""
        self._logs: list[IO[bytes]] = []

    # --- lifecycle ----------------------------------------------------------------------------------------

    def up(self, timeout: float = 90) -> None:
        """Builds if needed, starts all components and returns once a Pod could be scheduled and run."""
        t0 = time.monotonic()

        def mark(milestone: str) -> None:
            self.timings[milestone] = round(time.monotonic() - t0, 3)

        try:
            bin_dir = build()
            mark("build")
            self._up(bin_dir, mark, deadline=t0 + timeout)
        except BaseException as e:
            self.down()
            if isinstance(e, ClusterError) and self.log_dir.exists():
                raise ClusterError(f"{e}\ncomponent logs: {self.log_dir}") from e
            raise

    def _up(self, bin_dir: Path, mark: Callable[[str], None], deadline: float) -> None:
        pki, work = self.workdir / "pki", self.workdir
        make_pki(pki)
        mark("pki")
        etcd_port, peer_port, api_port = free_port(), free_port(), free_port()
        self.server = f"https://127.0.0.1:{api_port}"
        write_kubeconfig(self.kubeconfig, self.server, pki / "ca.crt", cert_user(pki, "admin"))
        for name in ("controller-manager", "scheduler", "kwok"):
            write_kubeconfig(work / f"{name}.kubeconfig", self.server, pki / "ca.crt", cert_user(pki, name))

        etcd_url, peer_url = f"http://127.0.0.1:{etcd_port}", f"http://127.0.0.1:{peer_port}"
        # fmt: off
        self._start(bin_dir / "etcd",
            "--name=krmfn", f"--data-dir={work / 'etcd'}", "--log-level=warn",
            f"--listen-client-urls={etcd_url}", f"--advertise-client-urls={etcd_url}",
            f"--listen-peer-urls={peer_url}", f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=krmfn={peer_url}",
            "--unsafe-no-fsync=true",  # test data is disposable; fsync dominates write latency otherwise
        )
        # The apiserver retries etcd until it answers, so both start together.
        self._start(bin_dir / "kube-apiserver",
            f"--etcd-servers={etcd_url}", "--profiling=false",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={api_port}",
            f"--cert-dir={pki}", f"--tls-cert-file={pki / 'apiserver.crt'}",
            f"--tls-private-key-file={pki / 'apiserver.key'}", f"--client-ca-file={pki / 'ca.crt'}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki / 'sa.pub'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--authorization-mode=Node,RBAC",  # real 403s for RBAC tests
            # pods/log goes to the node's kubelet endpoint, which kwok serves; the node's Hostname
            # address does not resolve, its InternalIP is 127.0.0.1 (--node-ip below).
            "--kubelet-preferred-address-types=InternalIP",
            f"--kubelet-client-certificate={pki / 'apiserver-kubelet-client.crt'}",
            f"--kubelet-client-key={pki / 'apiserver-kubelet-client.key'}",
            # A namespace's annotations can send its pods to the real node (node.py, REAL_NAMESPACE):
            # the manifests under test stay as a user wrote them. Without the annotations: no effect.
            "--enable-admission-plugins=PodNodeSelector,PodTolerationRestriction",
        )
        # fmt: on
        wait_until("kube-apiserver /readyz", self._apiserver_ready, deadline - time.monotonic())
        mark("apiserver-ready")

        # Controllers start only now: they (kwok in particular) back off by whole seconds when the
        # apiserver is not there yet, which would cost more than waiting.
        # fmt: off
        self._start(bin_dir / "kube-controller-manager",
            f"--kubeconfig={work / 'controller-manager.kubeconfig'}", "--controllers=*", "--profiling=false",
            # Per-controller ServiceAccount credentials would delay readiness by ~4.5s (3s -> 7.6s start),
            # so all controllers share the controller-manager's admin identity; they behave the same.
            "--use-service-account-credentials=false",
            f"--service-account-private-key-file={pki / 'sa.key'}", f"--root-ca-file={pki / 'ca.crt'}",
            f"--cluster-signing-cert-file={pki / 'ca.crt'}", f"--cluster-signing-key-file={pki / 'ca.key'}",
            "--leader-elect=false",  # one instance; acquiring the lease would only add seconds
            "--secure-port=0",  # no metrics/healthz endpoint: nothing reads it, and no port to collide
        )
        self._start(bin_dir / "kube-scheduler",
            f"--kubeconfig={work / 'scheduler.kubeconfig'}", "--profiling=false",
            "--leader-elect=false", "--secure-port=0",
        )
        kubelet_port = free_port()
        self._start(bin_dir / "kwok",
            f"--kubeconfig={work / 'kwok.kubeconfig'}", f"--config={STAGES}",
            f"--config={write_container_logs(work / 'container-logs')}",
            "--manage-all-nodes=false",
            f"--manage-nodes-with-annotation-selector={'='.join(KWOK_ANNOTATION)}",
            "--cidr=10.244.0.0/16", "--node-ip=127.0.0.1", "--node-lease-duration-seconds=40",
            f"--node-port={kubelet_port}", f"--server-address=127.0.0.1:{kubelet_port}",
            f"--tls-cert-file={pki / 'kwok-serving.crt'}",
            f"--tls-private-key-file={pki / 'kwok-serving.key'}",
        )
        # fmt: on

        client = self.client()
        labels = {"kubernetes.io/hostname": NODE_NAME, "kubernetes.io/os": "linux", "type": "kwok"}
        client.create(
            Node(metadata=ObjectMeta(name=NODE_NAME, annotations=dict([KWOK_ANNOTATION]), labels=labels))
        )
        schedulable = functools.partial(self._node_schedulable, client)
        wait_until(f"node {NODE_NAME} Ready and untainted", schedulable, deadline - time.monotonic())
        mark("node-ready")
        # ServiceAccount admission rejects pods until the controller-manager has created the namespace's
        # default ServiceAccount; waiting here means the controller-manager's controllers are running.
        wait_until(
            "default ServiceAccount",
            lambda: self._has_default_sa(client, "default"),
            deadline - time.monotonic(),
        )
        mark("ready")

    def down(self) -> None:
        """Stops all components (SIGTERM, then SIGKILL after a grace period). Logs stay in log_dir."""
        for wave, grace in STOP_WAVES:
            stop([self.procs[n] for n in wave if n in self.procs], grace)
        self.procs.clear()
        for f in self._logs:
            f.close()
        self._logs.clear()

    def restart_apiserver(self, grace: float = 0.0, timeout: float = 60, down_for: float = 0.0) -> float:
        """Stops kube-apiserver and starts it again with the same flags and port; returns once /readyz
        answers, with the seconds it was unavailable. ``grace``: seconds of SIGTERM before SIGKILL -- its
        graceful shutdown waits up to 60s for open watches, so the default 0 kills it at once, as a
        crash would. ``down_for``: seconds it stays stopped before the restart (a new server may take
        writes before /readyz answers, so the returned figure alone does not bound the outage). etcd
        keeps the state; the controllers and kwok reconnect by themselves."""
        return self.restart("kube-apiserver", grace=grace, timeout=timeout, down_for=down_for)

    def restart(self, name: str, grace: float = 0.0, timeout: float = 60, down_for: float = 0.0) -> float:
        """Restarts one component (``etcd``, ``kube-apiserver``, ``kube-controller-manager``, ...) with
        the same flags, as restart_apiserver does; returns once kube-apiserver's /readyz answers again
        (it checks etcd too), with the seconds since the stop. A restarted controller-manager or
        scheduler is not waited for: it resumes its work when it has re-listed."""
        started = time.monotonic()
        proc = self.procs.pop(name)
        if grace > 0:
            proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(grace)
        proc.kill()  # no-op once it has exited
        proc.wait()
        time.sleep(down_for)
        binary, *args = self._argv[name]
        self._start(Path(binary), *args)
        wait_until(f"kube-apiserver /readyz after a restart of {name}", self._apiserver_ready, timeout)
        if name in ("etcd", "kube-apiserver"):
            self._resync_pods()
        return time.monotonic() - started

    def _resync_pods(self) -> None:
        """kwok, our kubelet, drops a pod's stage when the API server answers its status patch with an
        error it does not retry (a 500 "rpc error: Unavailable" while etcd restarts, a reset connection
        while the API server dies): the pod then stays Running for ever. A real kubelet's sync loop
        writes the status again; here every pod that is not terminal is touched, which makes kwok play
        its stage again, as that sync loop would."""
        client = self.client()
        stamp = str(time.time_ns())
        for pod in client.list(Pod, namespace="*"):
            phase = pod.status.phase if pod.status else None
            if phase in ("Succeeded", "Failed") or not pod.metadata or pod.metadata.deletionTimestamp:
                continue
            with contextlib.suppress(ApiError):  # gone meanwhile
                client.patch(
                    Pod,
                    str(pod.metadata.name),
                    {"metadata": {"annotations": {"test.krmfn.dev/kubelet-resync": stamp}}},
                    namespace=pod.metadata.namespace,
                )

    def start_flux_operator(self, timeout: float = 90) -> None:
        """Builds the Flux Operator if needed, installs its CRDs (server-side apply) and starts it against
        this control plane; returns once its readiness probe answers. Idempotent."""
        if FLUX_OPERATOR in self.procs:
            return
        t0 = time.monotonic()
        binary, crds = build_flux_operator()
        self.timings["flux-operator-build"] = round(time.monotonic() - t0, 3)
        client = self.client(field_manager="krmfn-tests")
        names: list[str] = []
        for file in sorted(crds.glob("*.yaml")):
            for crd in codecs.load_all_yaml(file.read_text()):
                client.apply(crd, force=True)
                names.append(str(crd.metadata.name) if crd.metadata else "")
        with contextlib.suppress(ApiError):  # already there: a restarted operator
            client.create(Namespace(metadata=ObjectMeta(name=FLUX_NAMESPACE)))
        for name in names:
            wait_until(f"CRD {name} Established", functools.partial(_established, client, name), timeout)
        health = free_port()
        storage = self.workdir / "flux-operator-storage"
        storage.mkdir(exist_ok=True)
        # fmt: off
        self._start(binary,
            "--enable-leader-election=false",  # one instance, as for the controller-manager
            f"--health-addr=127.0.0.1:{health}", f"--metrics-addr=127.0.0.1:{free_port()}",
            "--web-server-port=0",  # no web UI (the test build embeds a placeholder page)
            f"--storage-path={storage}",
            env={
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "HOME": str(self.workdir),  # nothing from the user's ~/.kube or ~/.docker
                "KUBECONFIG": str(self.kubeconfig),  # the admin: it applies anything a ResourceSet holds
                "GODEBUG": "fips140=on",  # the operator refuses to start outside FIPS 140-3 mode
                "RUNTIME_NAMESPACE": FLUX_NAMESPACE,
            },
        )
        # fmt: on
        wait_until(
            "flux-operator /readyz",
            functools.partial(self._http_ok, health, "/readyz"),
            timeout - (time.monotonic() - t0),
        )
        self.timings["flux-operator-ready"] = round(time.monotonic() - t0, 3)

    def __enter__(self) -> Cluster:
        self.up()
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()

    # --- access -------------------------------------------------------------------------------------------

    def client(self, namespace: str | None = None, field_manager: str = "krmfn-tests") -> Client:
        """A lightkube Client for the cluster admin (system:masters)."""
        return Client(
            KubeConfig.from_file(self.kubeconfig),
            namespace=namespace,
            field_manager=field_manager,
            trust_env=False,
        )

    def service_account_kubeconfig(self, namespace: str, name: str, path: Path) -> Path:
        """Creates the ServiceAccount if missing and writes a kubeconfig that authenticates as it
        (bound token, 1h) -- for tests of what the runner does with limited RBAC."""
        client = self.client()
        with contextlib.suppress(ApiError):
            client.create(ServiceAccount(metadata=ObjectMeta(name=name, namespace=namespace)))
        request = ServiceAccount.Token(
            metadata=ObjectMeta(name=name, namespace=namespace),
            spec=TokenRequestSpec(audiences=[], expirationSeconds=3600),
        )
        token = client.create(request, name=name, namespace=namespace).to_dict()["status"]["token"]
        return write_kubeconfig(path, self.server, self.workdir / "pki" / "ca.crt", {"token": token})

    def pids(self) -> dict[str, int]:
        return {name: p.pid for name, p in self.procs.items()}

    def peak_rss_kib(self) -> dict[str, int]:
        """Peak resident set size (VmHWM) of each running component, in KiB."""
        return peak_rss_kib(self.pids())

    # --- internals ----------------------------------------------------------------------------------------

    def _start(self, binary: Path, *args: str, env: dict[str, str] | None = None) -> None:
        name = binary.name
        self._argv[name] = [str(binary), *args]
        self.procs[name], log = spawn([str(binary), *args], self.log_dir / f"{name}.log", cwd=self.workdir,
                                      env=env, die_with_parent=self.die_with_parent)  # fmt: skip
        self._logs.append(log)

    def _check_alive(self) -> None:
        check_alive(self.procs, self.log_dir)

    def _apiserver_ready(self) -> bool:
        self._check_alive()
        ctx = ssl.create_default_context(cafile=self.workdir / "pki" / "ca.crt")
        ctx.load_cert_chain(self.workdir / "pki" / "admin.crt", self.workdir / "pki" / "admin.key")
        address = self.server.removeprefix("https://")
        return answers_200(http.client.HTTPSConnection(address, context=ctx, timeout=2), "/readyz")

    def _http_ok(self, port: int, path: str) -> bool:
        self._check_alive()
        return answers_200(http.client.HTTPConnection("127.0.0.1", port, timeout=2), path)

    def _node_schedulable(self, client: Client) -> bool:
        self._check_alive()
        node = client.get(Node, NODE_NAME).to_dict()
        conditions = node.get("status", {}).get("conditions", [])
        ready = any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
        # The node lifecycle controller lifts the not-ready taint once it sees Ready; until then nothing
        # schedules.
        return ready and not node["spec"].get("taints")

    def _has_default_sa(self, client: Client, namespace: str) -> bool:
        self._check_alive()
        return has_default_service_account(client, namespace)
