"""Health check evaluations in a child process, so that an expression cannot take the runner's memory or
its time.

cel-cpp bounds the iterations of one evaluation (10,000 comprehension steps) but not its memory: a short
expression can grow a string past any limit (``'xxxxxxxxxx'.replace('', 'xxxxxxxxxx')`` is eleven times
longer, and the calls chain), and the values it reads come from the cluster. A C++ call cannot be stopped
in the runner's own process, so evaluations run in one child (``python -m krmfn.runner.celworker``) with
an address-space limit (``MEMORY``) and a time limit per evaluation (``SECONDS``). An evaluation that
passes either fails its object, naming the expression and the limit, and the next one starts a new child.

Protocol, one JSON line each way: ``{"expr": text, "obj": object}`` -> ``{"bool": b}``, ``{"type": name}``
(a result that is not a bool) or ``{"error": message}``. The child compiles each text once.
"""

from __future__ import annotations

import contextlib
import json
import resource
import select
import subprocess
import sys
import threading
from typing import IO, Any

MEMORY = 1 << 30
"""Bytes of address space for the child (Python and cel-cpp take ~0.3 GiB of it)."""
SECONDS = 10.0
"""Wall-clock seconds for one evaluation: the iteration budget ends an honest one in milliseconds."""
STARTUP = 60.0
"""Seconds a new child may take to be ready (a loaded CI machine)."""


class Worker:
    """The parent's side: one child, started on the first evaluation, shared by every thread."""

    def __init__(self, memory: int = MEMORY, seconds: float = SECONDS) -> None:
        self.memory, self.seconds = memory, seconds
        self._child: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def evaluate(self, text: str, obj: dict[str, Any]) -> dict[str, Any]:
        """The child's answer for ``text`` over ``obj``; ``{"error": ...}`` when it broke a limit."""
        try:
            request = (json.dumps({"expr": text, "obj": obj}) + "\n").encode()
        except (TypeError, ValueError) as err:  # not JSON data: never so for an object the API served
            return {"error": f"the object is not JSON data: {err}"}
        except RecursionError:  # never so either: api.parse_json bounds the depth of what the API served
            return {"error": "the object nests too deep to be evaluated"}
        with self._lock:
            child = self._child or self._start()
            assert child.stdin is not None and child.stdout is not None
            line, late = b"", False
            try:
                child.stdin.write(request)
                child.stdin.flush()
                late = not select.select([child.stdout], [], [], self.seconds)[0]
                line = b"" if late else child.stdout.readline()
            except OSError:  # the child is gone (a broken pipe): it died of the memory limit
                pass
            if not line:
                self._stop()
                if late:
                    return {"error": f"took longer than {self.seconds:g}s (stopped)"}
                return {"error": f"its process died (it may use {self.memory >> 20} MiB of memory)"}
        answer: dict[str, Any] = json.loads(line)
        return answer

    def _start(self) -> subprocess.Popen[bytes]:
        """A new child, once it is ready: its start (Python, cel-cpp) is not the evaluation's time. In a
        session of its own, so that Ctrl-C or a CI's signal to the group reaches only the runner, which
        stops cleanly (and may still judge); the child ends when its input does, or is killed."""
        child = subprocess.Popen(
            [sys.executable, "-m", "krmfn.runner.celworker", str(self.memory)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        self._child = child
        assert child.stdout is not None
        if select.select([child.stdout], [], [], STARTUP)[0]:
            child.stdout.readline()  # the ready line; at EOF the first request reports the death
        return child

    def _stop(self) -> None:
        child, self._child = self._child, None
        if child is not None:
            child.kill()
            child.wait()
            for pipe in (child.stdin, child.stdout):
                if pipe is not None:
                    with contextlib.suppress(OSError):  # unflushed input to a dead child: a broken pipe
                        pipe.close()

    def close(self) -> None:
        with self._lock:
            self._stop()


def serve(memory: int, requests: IO[str], answers: IO[str]) -> None:
    """The child's side: answers each request line until its input ends."""
    with contextlib.suppress(ValueError, OSError):  # a system without RLIMIT_AS (macOS): time limit only
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    from krmfn.runner.healthexprs import NotBool, compile_in_process

    compile_ = compile_in_process()
    programs: dict[str, Any] = {}
    answers.write("{}\n")  # ready
    answers.flush()
    for line in requests:
        request = json.loads(line)
        text = request["expr"]
        try:
            evaluate = programs.get(text) or programs.setdefault(text, compile_(text))
            answer: dict[str, Any] = {"bool": evaluate(request["obj"])}
        except NotBool as err:
            answer = {"type": str(err)}
        except Exception as err:  # an evaluation error, or MemoryError for what cel-cpp could not allocate
            answer = {"error": str(err) or type(err).__name__}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


if __name__ == "__main__":
    serve(int(sys.argv[1]), sys.stdin, sys.stdout)
