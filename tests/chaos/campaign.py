"""The fault campaign: many ``krmfn apply`` runs of changing renders, faults at random points, invariants
checked from the cluster after every run.

    campaign = Campaign(cluster, namespace, workdir, seed=22, runs=24)
    report = campaign.run()          # report.violations == [] when everything held
    print(report.table())

Every run is a ``krmfn apply -o json`` child process talking to the API server through a FaultProxy (so
network faults can hit it at any time). A run gets one fault from a seeded schedule that cycles through
every fault type in a shuffled order, fired after a seeded random delay while the run is going; a fault
whose moment comes after the run ended is counted as missed, not injected. The seed fixes the renders,
the schedule and the delays; the interleaving with the cluster's timing is not deterministic, so a
violation is reduced to a deterministic regression test in tests/cluster/ before it is fixed.

Invariants (invariants.py), after every run:
- no Job run (name + ``krmfn.dev/applied-spec-hash``) started twice (except a failed Job under
  recreate-on-failure), no Job with more pods than its backoffLimit allows;
- a run that exited 0 left every object of its render healthy and nothing else in the ApplySet, and the
  inventory lists every member;
- no lock outlives its run (unless that run was SIGKILLed) nor its lease;
- the exit code agrees with the last JSON event; no traceback;
- survivable faults (restarts, network faults) do not fail a render that is valid;
and at the end, after a clean run without faults, the cluster equals the last render.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cluster.cluster import Cluster
from lightkube import Client
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import ConfigMap
from lightkube.types import PatchType

from krmfn.yaml.io import dump_all_fast

from .invariants import JobLedger, exit_problems, lock_problems, render_problems
from .proxy import FaultProxy
from .renders import Doc, Render, Renders

KRMFN = str(Path(sys.executable).parent / "krmfn")
RUN_TIMEOUT = 240.0  # a run that takes longer is a hang: recorded as a violation and killed
WRITER = "chaos-writer"

# Faults after which a valid render must still succeed: the runner retries, resumes watches, waits.
SURVIVABLE = {
    "none",
    "apiserver-restart",
    "etcd-restart",
    "controller-manager-restart",
    "proxy-latency",
    "proxy-reset",
    "proxy-drop",
    "proxy-cut-watches",
    "proxy-refuse",
    "proxy-stall",
}
FAULTS = sorted(SURVIVABLE | {"sigkill", "sigterm", "second-run", "second-run-waiting", "writer"})


@dataclass
class Proc:
    proc: subprocess.Popen[bytes]
    out: Path
    err: Path

    def outcome(self) -> tuple[int, list[Doc], str]:
        events = []
        for line in self.out.read_text().splitlines():
            try:
                events.append(json.loads(line))
            except ValueError:
                events.append({"type": "unparsable", "line": line[:200]})
        return self.proc.returncode, events, self.err.read_text(errors="replace")


@dataclass
class RunRecord:
    number: int
    fault: str
    injected: bool
    delay: float
    render: Render
    codes: list[int]
    seconds: float
    violations: list[str]
    errors: list[str]


@dataclass
class Report:
    seed: int
    records: list[RunRecord] = field(default_factory=list)
    final: list[str] = field(default_factory=list)
    checks: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0

    @property
    def violations(self) -> list[str]:
        found = [f"run {r.number} ({r.fault}): {v}" for r in self.records for v in r.violations]
        return found + [f"final clean run: {v}" for v in self.final]

    def table(self) -> str:
        faults = Counter(r.fault for r in self.records)
        injected = Counter(r.fault for r in self.records if r.injected)
        exits = Counter(c for r in self.records for c in r.codes)
        lines = [
            f"seed {self.seed}: {len(self.records)} runs + 1 final clean run in {self.seconds:.0f}s, "
            f"{sum(self.checks.values())} invariant checks, {len(self.violations)} violations",
            "",
            "| fault | runs | injected while running |",
            "|---|---:|---:|",
            *(f"| {f} | {faults[f]} | {injected[f]} |" for f in FAULTS if faults[f]),
            "",
            "| invariant | checks |",
            "|---|---:|",
            *(f"| {name} | {n} |" for name, n in sorted(self.checks.items())),
            "",
            "exit codes: " + ", ".join(f"{code}: {n}" for code, n in sorted(exits.items())),
        ]
        lines += [f"VIOLATION {v}" for v in self.violations]
        return "\n".join(lines)


class Campaign:
    def __init__(
        self,
        cluster: Cluster,
        namespace: str,
        workdir: Path,
        *,
        seed: int,
        runs: int,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.cluster, self.namespace, self.workdir = cluster, namespace, workdir
        # Two streams, so that the renders do not depend on which faults happened to be injected.
        self.rng = random.Random(seed)  # schedule, delays, fault parameters: drawn for every run
        render_rng = random.Random(seed * 7919 + 1)
        self.seed, self.runs = seed, runs
        self.log = log or (lambda line: None)
        self.client: Client = cluster.client()
        self.writer: Client = cluster.client(field_manager=WRITER)
        self.ledger = JobLedger(self.client, namespace)
        self.report = Report(seed)
        self.renders = Renders(render_rng)
        self.conflicted = False  # the writer took fields over: the next runs pass --force-conflicts
        workdir.mkdir(parents=True, exist_ok=True)

    # --- the loop -----------------------------------------------------------------------------------------

    def schedule(self) -> list[str]:
        """Every fault type in turn, each round in a fresh shuffled order; "none" included."""
        out: list[str] = []
        while len(out) < self.runs:
            round_ = list(FAULTS)
            self.rng.shuffle(round_)
            out += round_
        return out[: self.runs]

    def run(self) -> Report:
        started = time.monotonic()
        proxy_lifetime = self.runs * RUN_TIMEOUT + 600
        with FaultProxy(int(self.cluster.server.rpartition(":")[2]), lifetime=proxy_lifetime) as proxy:
            self.proxy = proxy
            self.proxy_kubeconfig = self._kubeconfig(f"https://127.0.0.1:{proxy.port}")
            render = self.renders.next(clean=True)
            for number, fault in enumerate(self.schedule(), 1):
                repeat, delay, scale = self.rng.random() < 0.2, self.rng.uniform(0.3, 5.0), self.rng.random()
                if number > 1:
                    render = self.renders.next(repeat=repeat)
                record = self._one(number, fault, render, round(delay, 2), scale)
                self.report.records.append(record)
                self._log(self._describe(record))
        self.report.final = self._final(render)
        self.report.seconds = time.monotonic() - started
        return self.report

    def _log(self, text: str) -> None:
        with (self.workdir / "campaign.log").open("a") as f:
            f.write(text + "\n")
        self.log(text)

    def _describe(self, r: RunRecord) -> str:
        state = "injected" if r.injected else "missed"
        text = (
            f"run {r.number:3} {r.fault:26} {state:8} at {r.delay:4.1f}s exits {r.codes} "
            f"in {r.seconds:4.1f}s [{', '.join(r.render.changes)}]"
        )
        for e in r.errors:
            text += f"\n        error: {e[:160]}"
        for v in r.violations:
            text += f"\n    VIOLATION {v}"
        return text

    def _one(self, number: int, fault: str, render: Render, delay: float, scale: float) -> RunRecord:
        """One run (two for the second-run faults) with ``fault`` fired ``delay`` seconds in; ``scale``
        in [0, 1) sets the fault's size (outage, latency), drawn whether or not it fires."""
        path = self.workdir / f"render-{number:04}.yaml"
        path.write_text(dump_all_fast(render.docs))
        flags = ["--force-conflicts"] if self.conflicted else []
        started = time.monotonic()
        sampling = threading.Event()
        sampler = threading.Thread(target=self._sample, args=(sampling,), daemon=True)
        sampler.start()
        first = self._spawn(path, number, "a", flags)
        procs, killed, violations = [first], set[int](), list[str]()
        injected = self._wait_running(first, delay)
        if injected:
            second = self._inject(fault, scale, first, path=path, number=number, flags=flags, killed=killed)
            if second is not None:
                procs.append(second)
        for p in procs:
            try:
                p.proc.wait(max(1.0, RUN_TIMEOUT - (time.monotonic() - started)))
            except subprocess.TimeoutExpired:
                violations.append(f"krmfn pid {p.proc.pid} still running after {RUN_TIMEOUT:.0f}s: killed")
                p.proc.kill()
                p.proc.wait()
                killed.add(p.proc.pid)
        self.proxy.clear()
        sampling.set()
        sampler.join()
        seconds = time.monotonic() - started
        # A fault that never fired allows no more than a run without one.
        violations += self._check(fault if injected else "none", render, procs, killed)
        outcomes = [p.outcome() for p in procs]
        errors = [str(e["message"]) for _, events, _ in outcomes for e in events if e.get("type") == "error"]
        if any(code == 0 for code, _, _ in outcomes) and flags:
            self.conflicted = False
        return RunRecord(
            number, fault, injected, delay, render, [c for c, _, _ in outcomes], seconds, violations, errors
        )

    def _sample(self, stop: threading.Event) -> None:
        while not stop.wait(0.3):
            self.ledger.observe_quietly()

    def _spawn(
        self, path: Path, number: int, tag: str, flags: list[str], kubeconfig: Path | None = None
    ) -> Proc:
        out, err = self.workdir / f"run-{number:04}{tag}.jsonl", self.workdir / f"run-{number:04}{tag}.err"
        argv = [
            KRMFN,
            "apply",
            "-f",
            str(path),
            "-n",
            self.namespace,
            "-o",
            "json",
            "--kubeconfig",
            str(kubeconfig or self.proxy_kubeconfig),
            "--applyset",  # the inventory the invariants read
            "krmfn",
            *flags,
        ]
        with out.open("wb") as o, err.open("wb") as e:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=o, stderr=e)
        return Proc(proc, out, err)

    @staticmethod
    def _wait_running(p: Proc, delay: float) -> bool:
        """Sleeps ``delay`` seconds unless the run ends first; whether it is still running."""
        try:
            p.proc.wait(delay)
        except subprocess.TimeoutExpired:
            return True
        return False

    # --- faults -------------------------------------------------------------------------------------------

    def _inject(
        self,
        fault: str,
        scale: float,
        first: Proc,
        *,
        path: Path,
        number: int,
        flags: list[str],
        killed: set[int],
    ) -> Proc | None:
        proxy = self.proxy
        if fault == "apiserver-restart":
            self.cluster.restart("kube-apiserver", down_for=2 * scale)
        elif fault == "etcd-restart":
            self.cluster.restart("etcd", down_for=2 * scale)
        elif fault == "controller-manager-restart":
            self.cluster.restart("kube-controller-manager", down_for=1 + 3 * scale)
        elif fault == "sigkill":
            first.proc.kill()
            killed.add(first.proc.pid)
        elif fault == "sigterm":
            first.proc.send_signal(signal.SIGTERM)
        elif fault in ("second-run", "second-run-waiting"):
            wait = ["--wait-for-lock", "90s"] if fault == "second-run-waiting" else []
            return self._spawn(path, number, "b", [*flags, *wait])
        elif fault == "writer":
            self._write_owned_fields(scale)
        elif fault == "proxy-latency":
            proxy.latency = 0.05 + 0.35 * scale
            self._wait_running(first, 1 + 3 * scale)
            proxy.latency = 0.0
        elif fault == "proxy-reset":
            proxy.reset_all()
        elif fault == "proxy-drop":
            proxy.drop_all()
        elif fault == "proxy-cut-watches":
            proxy.cut_older_than(0.5)
        elif fault == "proxy-refuse":
            proxy.reset_all()
            proxy.refuse_for(1 + 4 * scale)
        elif fault == "proxy-stall":
            proxy.stall_for(1 + 4 * scale)
        elif fault != "none":
            raise ValueError(f"unknown fault {fault}")
        return None

    def _write_owned_fields(self, scale: float) -> None:
        """Another field manager takes over fields krmfn owns (as kubectl edit or an HPA would)."""
        if scale < 0.5:
            res: type[ConfigMap | Deployment] = ConfigMap
            body: Doc = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "data": {"revision": f"written-{scale:.6f}"},
            }
            name = "app-config"
        else:
            res, name = Deployment, "web"
            body = {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 4}}
        body["metadata"] = {"name": name, "namespace": self.namespace}
        self.writer.patch(res, name, body, namespace=self.namespace, patch_type=PatchType.APPLY, force=True)
        self.conflicted = True

    # --- checks -------------------------------------------------------------------------------------------

    def _check(self, fault: str, render: Render, procs: list[Proc], killed: set[int]) -> list[str]:
        checks, problems = self.report.checks, []
        self.ledger.observe()
        problems += self.ledger.reruns()
        checks["no Job run started twice (pods per run hash)"] += 1
        problems += lock_problems(self.client, self.namespace, killed)
        checks["no lock outlives its run or lease"] += 1
        outcomes = [p.outcome() for p in procs]
        for code, events, stderr in outcomes:
            problems += exit_problems(code, events, stderr)
            checks["exit code agrees with the last JSON event"] += 1
        codes = [code for code, _, _ in outcomes]
        errors = [str(events[-1].get("error")) for code, events, _ in outcomes if code == 1 and events]
        if 0 in codes:
            problems += render_problems(self.client, self.namespace, render, exact=False)
            checks["exit 0: render healthy, nothing else in the ApplySet, inventory complete"] += 1
        # Liveness: what each fault may cost a valid render.
        checks["the outcome is one the fault allows"] += 1
        if render.expect_failure:
            if 0 in codes and fault not in ("sigkill", "sigterm"):
                problems.append("a render with a failing Job exited 0")
            return problems
        if fault in SURVIVABLE and codes != [0]:
            problems.append(f"a valid render did not survive {fault}: exits {codes}, errors {errors}")
        elif fault == "writer" and codes != [0] and not all("conflict" in e for e in errors):
            problems.append(f"writer fault: failed for another reason than a conflict: {errors}")
        elif fault == "second-run" and sorted(codes) not in ([0, 0], [0, 1]):
            problems.append(f"two runs: exits {codes}, errors {errors}")
        elif (
            fault == "second-run" and 1 in codes and not all("is locked by another run" in e for e in errors)
        ):
            problems.append(f"two runs: the loser failed for another reason than the lock: {errors}")
        elif fault == "second-run-waiting" and codes != [0, 0]:
            problems.append(f"two runs with --wait-for-lock: exits {codes}, errors {errors}")
        elif fault == "sigterm" and codes not in ([0], [143], [-15]):  # -15: before its handler
            problems.append(f"SIGTERM: exit {codes}")
        elif fault == "sigkill" and codes not in ([0], [-9]):
            problems.append(f"SIGKILL: exit {codes}")
        return problems

    def _final(self, last: Render) -> list[str]:
        """A clean run of the last render (failing Jobs fixed) straight to the API server: exit 0 and
        the cluster equals the render."""
        render = self.renders.next(clean=True, repeat=True) if last.expect_failure else last
        path = self.workdir / "render-final.yaml"
        path.write_text(dump_all_fast(render.docs))
        p = self._spawn(path, 0, "final", ["--force-conflicts"], kubeconfig=self.cluster.kubeconfig)
        p.proc.wait(RUN_TIMEOUT)
        code, events, stderr = p.outcome()
        problems = exit_problems(code, events, stderr)
        if code != 0:
            problems.append(f"exit {code}: {events[-1] if events else stderr}")
        self.ledger.observe()
        problems += self.ledger.reruns()
        problems += render_problems(self.client, self.namespace, render, exact=True)
        problems += lock_problems(self.client, self.namespace, set())
        self.report.checks["final clean run: the cluster equals the last render"] += 1
        return problems

    def _kubeconfig(self, server: str) -> Path:
        config = json.loads(self.cluster.kubeconfig.read_text())
        config["clusters"][0]["cluster"]["server"] = server
        path = self.workdir / "proxy.kubeconfig"
        path.write_text(json.dumps(config))
        path.chmod(0o600)
        return path
