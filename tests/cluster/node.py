"""A real node beside kwok's fake one: Debian's containerd and runc and a kubelet v1.35.4 on this machine,
joined to a test control plane as node ``127.0.0.1``, with kube-proxy (nftables mode) for Services and a
CNI bridge for pod networking. Containers really run: exit codes, logs, restarts, probes and exec are the
kubelet's.

    node = RealNode(cluster, log_dir)
    node.up()      # waits for the machine's node lock, sweeps what a killed run left, returns once Ready
    ...            # pods of a namespace carrying REAL_NAMESPACE run here; every other pod stays on kwok
    node.down()    # pods, kubelet, containers, containerd; then the bridge, netns, mounts, cgroups

One real node per machine at a time: containerd's state, the kubelet's directories, the CNI bridge,
kube-proxy's nftables tables and the kubepods cgroups belong to the machine, not to a pytest session (two
kube-proxies would overwrite each other's tables). ``up()`` takes LOCK; another session waits for it and
says who holds it. Why each setting is what it is: tests/cluster/README.md, "The real node".
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import http.client
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from lightkube import ApiError, Client
from lightkube.resources.core_v1 import Node, Pod

from .cluster import (
    Cluster,
    ClusterError,
    answers_200,
    build,
    cert_user,
    check_alive,
    free_port,
    peak_rss_kib,
    spawn,
    stop,
    wait_until,
    write_kubeconfig,
)

HERE = Path(__file__).resolve().parent
INSTALL_SH = HERE.parent.parent / "scripts" / "install-containerd.sh"
IMAGES_SH = HERE / "images" / "build.sh"
NODE = "127.0.0.1"
"""The node's name and its InternalIP: the kubelet's --hostname-override (--node-ip refuses loopback)."""
LABEL = ("krmfn.dev/node", "real")
TAINT = "krmfn.dev/real-node"
"""The node is tainted NoSchedule, so only pods that tolerate it (REAL_NAMESPACE) leave kwok's node."""
REAL_NAMESPACE = {
    "scheduler.alpha.kubernetes.io/node-selector": "=".join(LABEL),
    "scheduler.alpha.kubernetes.io/defaultTolerations": json.dumps(
        [{"key": TAINT, "operator": "Exists", "effect": "NoSchedule"}]
    ),
}
"""Namespace annotations that send every pod of the namespace to the real node: the API server's
PodNodeSelector and PodTolerationRestriction admission plugins add the selector and the toleration."""

LOCK = Path("/run/lock/krmfn-real-node.lock")
STATE = Path("/var/lib/krmfn-node")
"""Kept from run to run: containerd's images (imported once per content). The kubelet's part is wiped."""
RUN = Path("/run/krmfn-node")
"""This run's: sockets, containerd's state (task bundles, sandboxes' netns), configs, CNI state. Removed
by down(); still there at up() means a run was killed, and up() sweeps first."""
BRIDGE = "krmfn0"
POD_SUBNET = "10.209.0.0/24"
CNI_BIN = Path("/usr/lib/cni")
NAMESPACE = "k8s.io"  # containerd's namespace for the kubelet's images and containers
MNT_DETACH = 2
POLL = 0.05


def _containerd_config(pause: str) -> str:
    sock, run = RUN / "containerd.sock", RUN / "containerd"
    return f"""\
version = 2
root = "{STATE / "containerd"}"
state = "{run}"
# Not used here, and each costs start time or writes outside root/state (opt: /opt/containerd).
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "{sock}"
[ttrpc]
  address = "{sock}.ttrpc"
[debug]
  level = "warn"
[metrics]
  address = ""

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{pause}"
  # The VM drops CAP_SYS_RESOURCE: runc cannot lower oom_score_adj below the parent's, and the sandbox
  # start fails ("can't get final child's PID from pipe") unless containerd clamps the kubelet's value.
  restrict_oom_score_adj = true
  # The pods' network namespaces under state, so a sweep finds every one of them.
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{CNI_BIN}"
    conf_dir = "{RUN / "cni" / "net.d"}"
    max_conf_num = 1
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        # runc, not crun: crun refuses the mixed cgroup v1/v2 mounts of these machines.
        BinaryName = "{shutil.which("runc") or "runc"}"
        SystemdCgroup = false
"""


def _cni_config() -> str:
    bridge = {
        "type": "bridge",
        "bridge": BRIDGE,
        "isGateway": True,  # routes pod -> Service IP (kube-proxy's DNAT) -> pod through the host
        "ipMasq": False,  # pods talk to pods and to the host only: no iptables rules to leave behind
        "hairpinMode": True,  # a pod reaching itself through its Service
        "ipam": {
            "type": "host-local",
            "ranges": [[{"subnet": POD_SUBNET}]],
            "routes": [{"dst": "0.0.0.0/0"}],  # through the bridge: Service IPs are outside the subnet
            "dataDir": str(RUN / "ipam"),
        },
    }
    return json.dumps({"cniVersion": "1.0.0", "name": "krmfn-node", "plugins": [bridge]}, indent=2)


def _kubelet_config(pki: Path, port: int) -> str:
    config = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "containerRuntimeEndpoint": f"unix://{RUN / 'containerd.sock'}",
        "failCgroupV1": False,  # kubelet 1.35 refuses cgroup v1 by default; these machines are v1
        "failSwapOn": False,
        "cgroupDriver": "cgroupfs",  # no systemd
        "oomScoreAdj": 0,  # -999 needs CAP_SYS_RESOURCE, which the VM drops
        "address": NODE,
        "port": port,
        "readOnlyPort": 0,
        "healthzPort": 0,
        "tlsCertFile": str(pki / "kubelet-serving.crt"),  # pods/log and exec reach it on 127.0.0.1
        "tlsPrivateKeyFile": str(pki / "kubelet-serving.key"),
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(pki / "ca.crt")},
        },
        "authorization": {"mode": "Webhook"},
        "registerWithTaints": [{"key": TAINT, "effect": "NoSchedule"}],
        "podLogsDir": str(STATE / "pod-logs"),
        "clusterDomain": "cluster.local",  # no cluster DNS: pods find Services by the kubelet's variables
        "resolvConf": "/etc/resolv.conf",
        # The images are imported, never pulled (imagePullPolicy: Never): garbage collection would lose
        # them, and the machine's disk is shared, so disk-pressure eviction is off too.
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "0%", "imagefs.available": "0%"},
        "nodeStatusReportFrequency": "10s",
        "shutdownGracePeriod": "0s",
        # No KUBE-FIREWALL and canary chains in the machine's iptables: nothing here reads them.
        "makeIPTablesUtilChains": False,
    }
    return json.dumps(config, indent=2)


def _kube_proxy_config(kubeconfig: Path, healthz: int, metrics: int) -> str:
    config = {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "mode": "nftables",  # its own tables (ip/ip6 kube-proxy), nothing inserted into other chains
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "hostnameOverride": NODE,
        "clusterCIDR": POD_SUBNET,
        "bindAddress": NODE,
        "healthzBindAddress": f"{NODE}:{healthz}",
        "metricsBindAddress": f"{NODE}:{metrics}",
        # A pod calling a Service that lands on a pod of the same bridge: without the masquerade the
        # answer would go pod to pod and bypass the DNAT's conntrack entry.
        "nftables": {"masqueradeAll": True, "minSyncPeriod": "0s"},
        "oomScoreAdj": 0,  # as for the kubelet
        # 0 leaves the machine's conntrack sysctls as they are.
        "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
    }
    return json.dumps(config, indent=2)


def _mounts_under(*roots: Path) -> list[str]:
    """Mount points at or under ``roots``, deepest first (so each umount finds its children gone)."""
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].encode().decode("unicode_escape")  # octal escapes: \040 for a space
        if any(point == str(r) or point.startswith(f"{r}/") for r in roots):
            found.append(point)
    return sorted(set(found), key=lambda p: p.count("/"), reverse=True)


def _cgroup_mounts() -> list[Path]:
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        if right.split()[0] in ("cgroup", "cgroup2"):
            found.append(Path(left.split()[4]))
    return found


_libc = ctypes.CDLL(None, use_errno=True)


def _umount(point: str) -> None:
    if _libc.umount2(point.encode(), MNT_DETACH) != 0:
        err = ctypes.get_errno()
        if err not in (22, 2):  # EINVAL: not a mount point any more; ENOENT: gone
            raise ClusterError(f"umount {point}: {os.strerror(err)}")


def clean_host() -> list[str]:
    """Removes what the node leaves on the machine once its processes are gone: mounts under its
    directories (pods' volumes, netns, rootfs), the kubelet's files, this run's state, the CNI bridge,
    kube-proxy's nftables tables and the kubelet's kubepods cgroups. Returns what could not be removed
    (a cgroup that still holds processes: never killed here, they are not ours to kill)."""
    for point in _mounts_under(RUN, STATE / "kubelet"):
        _umount(point)
    for path in (RUN, STATE / "kubelet", STATE / "pod-logs"):
        shutil.rmtree(path, ignore_errors=True)
    if Path(f"/sys/class/net/{BRIDGE}").exists():
        subprocess.run(["ip", "link", "delete", BRIDGE], check=False, capture_output=True)
    tables = subprocess.run(["nft", "list", "tables"], capture_output=True, text=True, check=False).stdout
    for family in ("ip", "ip6"):
        if f"table {family} kube-proxy" in tables:
            subprocess.run(["nft", "delete", "table", family, "kube-proxy"], check=False, capture_output=True)
    left = []
    for mount in _cgroup_mounts():
        top = mount / "kubepods"
        if not top.is_dir():
            continue
        for directory, _, _ in sorted(os.walk(top), key=lambda d: d[0].count("/"), reverse=True):
            try:
                os.rmdir(directory)
            except OSError as e:
                procs = (Path(directory) / "cgroup.procs").read_text().split() if e.errno == 16 else []
                held = f" (processes {' '.join(procs)})" if procs else ""
                left.append(f"{directory}: {e.strerror}{held}")
    return left


class RealNode:
    """containerd + kubelet + kube-proxy joined to ``cluster``; logs in ``log_dir``."""

    def __init__(self, cluster: Cluster, log_dir: Path, on_wait: Callable[[str], None] = print) -> None:
        self.cluster = cluster
        self.log_dir = log_dir
        self.on_wait = on_wait
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.images: dict[str, str] = {}  # name -> image reference in containerd (see images/build.sh)
        self.timings: dict[str, float] = {}
        self.swept: list[str] = []  # what up() found left behind by a killed run
        self._logs: list[IO[bytes]] = []
        self._lock: IO[str] | None = None

    # --- lifecycle ----------------------------------------------------------------------------------------

    def up(self, timeout: float = 120) -> None:
        """Installs containerd if missing (as root), builds the kubelet and the images if needed, takes the
        machine's node lock (waiting for it), sweeps leftovers and starts the node; returns once the Node is
        Ready and kube-proxy has synced."""
        t0 = time.monotonic()

        def mark(milestone: str) -> None:
            self.timings[milestone] = round(time.monotonic() - t0, 3)

        if os.geteuid() != 0:
            raise ClusterError(
                "the real node runs containerd, a kubelet and kube-proxy as root (mounts, cgroups, network "
                "namespaces, nftables): run the tests as root, e.g. `sudo scripts/test.sh`"
            )
        bin_dir = build()
        _run(["bash", str(INSTALL_SH)], "installing containerd (scripts/install-containerd.sh)")
        for line in _run(["bash", str(IMAGES_SH)], "building the node's images").splitlines():
            name, ref = line.split()
            self.images[name] = ref
        mark("build")
        self._take_lock()
        mark("lock")
        deadline = time.monotonic() + timeout
        try:
            if RUN.exists():
                self._sweep()
            mark("sweep")
            self._start(bin_dir, deadline)
            mark("ready")
        except BaseException:
            self.down()
            raise

    def down(self) -> None:
        """Stops the node in the order that leaves nothing behind: its pods (deleted through the API and
        waited for, so the kubelet stops their containers and sandboxes), kube-proxy and the kubelet, any
        container left in containerd, containerd; then the host's side (clean_host). Idempotent."""
        if self._lock is None:
            return
        t0 = time.monotonic()
        try:
            if "kubelet" in self.procs:
                with contextlib.suppress(ApiError, ClusterError, OSError):
                    self._drain()
            self.timings["down-drained"] = round(time.monotonic() - t0, 3)
            self._stop(("kube-proxy", "kubelet"))
            with contextlib.suppress(ApiError, OSError):  # the control plane may be gone already
                self.cluster.client().delete(Node, NODE)  # its pods go with it (pod GC)
            if "containerd" in self.procs:
                self._remove_containers()
            self._stop(("containerd",))
            left = clean_host()
            self.timings["down"] = round(time.monotonic() - t0, 3)
            if left:
                raise ClusterError("the real node left cgroups that still hold processes: " + "; ".join(left))
        finally:
            for f in self._logs:
                f.close()
            self._logs.clear()
            self._release_lock()

    # --- access -------------------------------------------------------------------------------------------

    def image(self, name: str) -> str:
        """The reference of one of the node's images (pause, postgres, app)."""
        return self.images[name]

    def tag(self, name: str, ref: str) -> str:
        """Gives image ``name`` one more reference in containerd (``localhost/app:1.1.0``): a new tag of
        the same content, as a registry would serve it. Returns ``ref``."""
        listed = self._ctr("images", "ls", "-q").split()
        if ref in listed:
            self._ctr("images", "rm", ref)
        self._ctr("images", "tag", self.images[name], ref)
        return ref

    def pids(self) -> dict[str, int]:
        return {name: p.pid for name, p in self.procs.items()}

    def peak_rss_kib(self) -> dict[str, int]:
        return peak_rss_kib(self.pids())

    # --- internals ----------------------------------------------------------------------------------------

    def _take_lock(self) -> None:
        LOCK.parent.mkdir(parents=True, exist_ok=True)
        lock = LOCK.open("a+")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "unknown"
            self.on_wait(f"waiting for the machine's real node ({LOCK}), held by {holder}")
            fcntl.flock(lock, fcntl.LOCK_EX)  # released by the holder's down() or its death
        lock.seek(0)
        lock.truncate()
        lock.write(f"pid {os.getpid()} ({os.getcwd()}) since {time.strftime('%H:%M:%S')}\n")
        lock.flush()
        self._lock = lock

    def _release_lock(self) -> None:
        if self._lock is not None:
            self._lock.truncate(0)
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None

    def _sweep(self) -> None:
        """A killed run left its state: its containerd (killed with pytest) may have left shims and
        containers running. A containerd on the same state finds them; they are removed through it (the
        shims exit with their tasks), then the host's side is cleaned."""
        self._write_configs()
        self._spawn("containerd", "/usr/bin/containerd", "--config", str(RUN / "config" / "containerd.toml"))
        wait_until("containerd (sweep)", self._containerd_up, 30)
        self.swept = [f"{RUN} of a run that did not stop", *self._remove_containers()]
        self._stop(("containerd",))
        left = clean_host()
        if left:
            raise ClusterError(
                "a killed real node left cgroups that still hold processes: " + "; ".join(left)
            )

    def _write_configs(self) -> None:
        config = RUN / "config"
        for d in (config, RUN / "cni" / "net.d", STATE / "containerd"):
            d.mkdir(parents=True, exist_ok=True)
        (config / "containerd.toml").write_text(_containerd_config(self.images["pause"]))
        (RUN / "cni" / "net.d" / "10-krmfn-node.conflist").write_text(_cni_config())

    def _start(self, bin_dir: Path, deadline: float) -> None:
        t0 = time.monotonic()
        cluster, pki = self.cluster, self.cluster.workdir / "pki"
        self._write_configs()
        config = RUN / "config"
        self._spawn("containerd", "/usr/bin/containerd", "--config", str(config / "containerd.toml"))
        wait_until("containerd", self._containerd_up, deadline - time.monotonic())
        self.timings["containerd-up"] = round(time.monotonic() - t0, 3)
        self._import_images()
        self.timings["images-imported"] = round(time.monotonic() - t0, 3)

        kubelet_kubeconfig = write_kubeconfig(
            config / "kubelet.kubeconfig", cluster.server, pki / "ca.crt", cert_user(pki, "kubelet")
        )
        proxy_kubeconfig = write_kubeconfig(
            config / "kube-proxy.kubeconfig", cluster.server, pki / "ca.crt", cert_user(pki, "kube-proxy")
        )
        (config / "kubelet.json").write_text(_kubelet_config(pki, free_port()))
        healthz = free_port()
        (config / "kube-proxy.json").write_text(_kube_proxy_config(proxy_kubeconfig, healthz, free_port()))
        # fmt: off
        self._spawn("kubelet", str(bin_dir / "kubelet"),
            f"--config={config / 'kubelet.json'}", f"--kubeconfig={kubelet_kubeconfig}",
            f"--hostname-override={NODE}", f"--root-dir={STATE / 'kubelet'}",
            f"--node-labels={'='.join(LABEL)}", "--v=1",
        )
        self._spawn("kube-proxy", str(bin_dir / "kube-proxy"),
            f"--config={config / 'kube-proxy.json'}", "--v=1",
        )
        # fmt: on
        client = cluster.client()
        wait_until(f"node {NODE} Ready", lambda: self._ready(client), deadline - time.monotonic())
        self.timings["node-ready"] = round(time.monotonic() - t0, 3)
        wait_until("kube-proxy synced", lambda: self._http_ok(healthz), deadline - time.monotonic())
        self.timings["proxy-synced"] = round(time.monotonic() - t0, 3)

    def _spawn(self, name: str, *argv: str) -> None:
        self.procs[name], log = spawn(list(argv), self.log_dir / f"{name}.log", cwd=RUN, die_with_parent=True)
        self._logs.append(log)

    def _stop(self, names: tuple[str, ...]) -> None:
        stop([self.procs.pop(n) for n in names if n in self.procs], grace=10.0)

    def _ctr(self, *args: str) -> str:
        argv = ["ctr", "--address", str(RUN / "containerd.sock"), "--namespace", NAMESPACE, *args]
        done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=120)
        if done.returncode != 0:
            raise ClusterError(f"{' '.join(argv)} failed: {done.stderr.strip()}")
        return done.stdout

    def _containerd_up(self) -> bool:
        check_alive({k: v for k, v in self.procs.items() if k == "containerd"}, self.log_dir)
        if not (RUN / "containerd.sock").exists():
            return False
        try:
            self._ctr("version")
        except ClusterError:
            return False
        return True

    def _import_images(self) -> None:
        """Imports the images containerd does not have yet (its store is kept from run to run)."""
        present = set(self._ctr("images", "ls", "-q").split())
        for ref in self.images.values():
            if ref in present:
                continue
            save = subprocess.Popen(
                ["podman", "save", "--format", "docker-archive", ref],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            argv = ["ctr", "--address", str(RUN / "containerd.sock"), "--namespace", NAMESPACE,
                    "images", "import", "-"]  # fmt: skip
            done = subprocess.run(argv, stdin=save.stdout, capture_output=True, text=True, check=False)
            _, save_err = save.communicate()
            if save.returncode or done.returncode:
                why = f"{save_err.decode()}{done.stderr}".strip()
                raise ClusterError(f"importing {ref} into containerd failed: {why}")

    def _remove_containers(self) -> list[str]:
        """Kills and removes every task and container in containerd's k8s.io namespace; returns what it
        removed. The kubelet is stopped by then, so nothing starts them again."""
        removed = []
        for task in self._ctr("tasks", "ls", "-q").split():
            with contextlib.suppress(ClusterError):  # exited meanwhile
                self._ctr("tasks", "rm", "--force", task)
            removed.append(f"task {task}")
        for container in self._ctr("containers", "ls", "-q").split():
            with contextlib.suppress(ClusterError):
                self._ctr("containers", "rm", container)
            removed.append(f"container {container}")
        return removed

    def _drain(self) -> None:
        """Cordons the node and deletes its pods, waiting until the kubelet has stopped them (the API
        object goes once the kubelet confirms); controllers' replacements stay Pending."""
        client = self.cluster.client()
        client.patch(Node, NODE, {"spec": {"unschedulable": True}})
        pods = list(client.list(Pod, namespace="*", fields={"spec.nodeName": NODE}))
        for pod in pods:
            meta = pod.metadata
            if meta is not None and meta.name and meta.namespace:
                with contextlib.suppress(ApiError):
                    client.delete(Pod, meta.name, namespace=meta.namespace, grace_period=1)

        def gone() -> bool:
            check_alive(self.procs, self.log_dir)
            return not list(client.list(Pod, namespace="*", fields={"spec.nodeName": NODE}))

        wait_until(f"the pods of node {NODE} to stop", gone, 60, interval=0.1)

    def _ready(self, client: Client) -> bool:
        check_alive(self.procs, self.log_dir)
        try:
            node = client.get(Node, NODE)
        except ApiError as e:
            if e.status.code == 404:
                return False
            raise
        conditions = node.status.conditions if node.status else None
        return any(c.type == "Ready" and c.status == "True" for c in conditions or [])

    def _http_ok(self, port: int) -> bool:
        check_alive(self.procs, self.log_dir)
        return answers_200(http.client.HTTPConnection(NODE, port, timeout=2), "/healthz")


def _run(argv: list[str], what: str) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ClusterError(f"{what} failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
    return done.stdout
