"""Issue 29, finding 12: one deadline for the command that every request honours, and SIGINT/SIGTERM end a
blocked request, for every command that talks to the cluster (apply, diff, status; plan and export never
connect).

Before, a server sending one byte every 2 s kept a request alive (the timeouts were per read): `apply
--timeout 5s` needed SIGKILL after 45 s, SIGTERM was only recorded, `krmfn status` hung the same way.
Here a loopback server trickles (the status line one byte at a time, or the body) or stays silent, and
each command runs as a real process (the console script). The test waits on events (the server saw the
request, the process exited); it asserts that the process ended by itself, not how fast: the guard is
only there so a regression fails instead of hanging. Each test prints how long the process took after
the deadline or the signal (``pytest -s``).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import dispositions
import pytest
from hostile_server import (
    CORE_DISCOVERY,
    Behaviour,
    HostileServer,
    answer,
    created,
    hostile_server,
    kubeconfig,
    status,
    wait_for,
)

KRMFN = Path(sys.executable).parent / "krmfn"
GUARD = 90.0
"""How long a process may take before the test kills it and fails: far past every bound under test."""
MANIFEST = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n"
COMMANDS = {
    "apply": ["apply", "-n", "apps", "--applyset", "app", "-o", "json"],
    "diff": ["diff", "-n", "apps", "--applyset", "app"],
    "status": ["status", "-n", "apps", "--applyset", "app"],
}
TIMEOUT_EXIT = {"apply": 1, "diff": 2, "status": 1}


def start(
    command: str, tmp_path: Path, server: HostileServer, *extra: str, sigint_ignored: bool = False
) -> subprocess.Popen[str]:
    """The command as a process; ``sigint_ignored``: started as a shell starts ``krmfn ... &`` in a
    script, with SIGINT ignored."""
    assert KRMFN.exists(), f"the console script {KRMFN} is missing: pip install -e ."
    manifest = tmp_path / "m.yaml"
    manifest.write_text(MANIFEST)
    args = [str(KRMFN), *COMMANDS[command], "--kubeconfig", str(kubeconfig(tmp_path / "kc", server.port))]
    if command != "status":
        args += ["-f", str(manifest)]
    shell = list(dispositions.IGNORING) if sigint_ignored else []
    return subprocess.Popen(
        [*shell, *args, *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def ended_by_itself(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=GUARD)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"the process did not end by itself within {GUARD}s and needed SIGKILL")
    return proc.returncode, out, err


@pytest.mark.parametrize("phase", ["trickle-head", "trickle-body", "silent"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_the_commands_deadline_ends_a_request_the_server_trickles(
    tmp_path: Path, command: str, phase: str
) -> None:
    every = Behaviour(phase)
    with hostile_server({}, default=every) as server:
        began = time.monotonic()
        proc = start(command, tmp_path, server, "--timeout", "2s")
        wait_for(every.hit, "the first request")
        code, out, err = ended_by_itself(proc)
        took = time.monotonic() - began
    print(f"\n{command} --timeout 2s against {phase}: exit {code} after {took:.2f}s")
    assert code == TIMEOUT_EXIT[command], err
    assert took >= 2.0  # the deadline ended it, not an early failure
    if command == "apply":
        result = json.loads(out.splitlines()[-1])
        assert result["type"] == "result" and "did not finish within --timeout 2s" in result["error"]
    else:
        assert "within --timeout 2s" in err and len(err.splitlines()) == 1, err


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_signal_ends_a_request_the_server_trickles(
    tmp_path: Path, command: str, sig: signal.Signals
) -> None:
    every = Behaviour("trickle-head")
    with hostile_server({}, default=every) as server:
        proc = start(command, tmp_path, server)
        wait_for(every.hit, "the first request")
        sent = time.monotonic()
        proc.send_signal(sig)
        code, out, err = ended_by_itself(proc)
        took = time.monotonic() - sent
    print(f"\n{command} {sig.name} during a trickled request: exit {code} {took:.2f}s after the signal")
    assert code == 128 + sig, err
    if command == "apply":
        result = json.loads(out.splitlines()[-1])
        assert result["type"] == "result" and f"interrupted by {sig.name}" in result["error"]
    else:
        assert "interrupted" in err, err


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_command_started_with_sigint_ignored_keeps_ignoring_it_and_sigterm_still_ends_it(
    tmp_path: Path, command: str
) -> None:
    """As kubectl, Helm, kapp and kpt (Go keeps an inherited SIG_IGN) and Python itself: ``krmfn apply &``
    in a script is not stopped by the Ctrl-C meant for the script's foreground command. SIGINT then
    SIGTERM are sent in that order: exit 143 says the first was ignored. Before, krmfn's handler replaced
    the ignore (the kernel's mask said caught) and diff and status exited 130."""
    every = Behaviour("trickle-head")
    with hostile_server({}, default=every) as server:
        proc = start(command, tmp_path, server, sigint_ignored=True)
        wait_for(every.hit, "the first request")
        ignored, caught = dispositions.of(proc.pid)  # the shell exec'd krmfn: the same process
        assert signal.SIGINT in ignored and signal.SIGTERM in caught, (ignored, caught)
        proc.send_signal(signal.SIGINT)
        proc.send_signal(signal.SIGTERM)
        code, out, err = ended_by_itself(proc)
    assert code == 128 + signal.SIGTERM, (code, out, err)  # diff and status say "interrupted", no more
    if command == "apply":
        said = json.loads(out.splitlines()[-1])["error"]
        assert "interrupted by SIGTERM" in said, said


def _locked_then_trickled() -> dict[tuple[str, str], Behaviour]:
    """An API server where apply takes the lock, then the apply of the object and the release of the
    lock both trickle."""
    return {
        ("GET", "/api/v1/namespaces/apps/secrets/app"): status(404, "NotFound"),
        ("GET", "/api/v1"): answer(200, CORE_DISCOVERY),
        ("POST", "/api/v1/namespaces/apps/secrets"): Behaviour("answer", created),
        ("PATCH", "/api/v1/namespaces/apps/configmaps/a"): Behaviour("trickle-body"),
        ("PUT", "/api/v1/namespaces/apps/secrets/app"): Behaviour("trickle-body"),
    }


@pytest.mark.parametrize("second", [False, True], ids=["one signal", "a second signal"])
def test_the_lock_release_after_a_signal_is_bounded_and_a_second_signal_ends_it(
    tmp_path: Path, second: bool
) -> None:
    """After SIGTERM the run still releases its lock (a request started after the stop gets a grace of
    its own, krmfn/net/budget.py); against a server that trickles that too, the run ends when the grace
    is over, or at once on a second signal."""
    script = _locked_then_trickled()
    with hostile_server(script) as server:
        proc = start("apply", tmp_path, server)
        wait_for(script["PATCH", "/api/v1/namespaces/apps/configmaps/a"].hit, "the apply")
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        wait_for(script["PUT", "/api/v1/namespaces/apps/secrets/app"].hit, "the release of the lock")
        if second:
            proc.send_signal(signal.SIGTERM)
        code, out, _ = ended_by_itself(proc)
        took = time.monotonic() - sent
    print(f"\napply, SIGTERM{' twice' if second else ''} during a trickled apply and release: exit {code} "
          f"{took:.2f}s after the first signal")  # fmt: skip
    assert code == 143
    assert "interrupted by SIGTERM" in json.loads(out.splitlines()[-1])["error"]
