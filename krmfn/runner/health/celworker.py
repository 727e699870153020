"""Health check evaluations in a child process, so that an expression cannot take the runner's memory or
its time.

cel-cpp bounds the iterations of one evaluation (10,000 comprehension steps) but not its memory: a short
expression can grow a string past any limit (``'xxxxxxxxxx'.replace('', 'xxxxxxxxxx')`` is eleven times
longer, and the calls chain), and the values it reads come from the cluster. A C++ call cannot be stopped
in the runner's own process, so evaluations run in one child (``python -m krmfn.runner.health.celworker``)
with an address-space limit (``MEMORY``) and a time limit per evaluation (``SECONDS``). An evaluation that
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
from collections.abc import Callable
from typing import IO, Any

from krmfn.runner.errors import HealthCheckError

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
            [sys.executable, "-m", "krmfn.runner.health.celworker", str(self.memory)],
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


Evaluate = Callable[[dict[str, Any]], bool]
"""True or False; raises NotBool for a result of another type, EvaluationError when it cannot be had."""


class CompileError(Exception):
    pass


class EvaluationError(Exception):
    pass


class NotBool(Exception):
    """The expression's result is not a bool; the message is the type's name (``str``)."""


def compile_in_process() -> Callable[[str], Evaluate]:
    """A compile function on a CEL environment like Flux's: the optional types, strings and encoders
    extensions; no declared variables (an expression is parsed, not type-checked, so any top-level field
    of an object can be named). Its evaluations run in this process: the worker's."""
    try:
        from cel_expr_python import cel  # only when there are expressions: the library is an extra
        from cel_expr_python.ext import ext_encoders, ext_optional, ext_strings
    except ImportError:
        raise HealthCheckError(
            "health checks need the CEL library: pip install 'krmfn[cel]' (cel-expr-python)"
        ) from None
    env = cel.NewEnv(
        extensions=[ext_strings.ExtStrings(), ext_optional.ExtOptional(), ext_encoders.ExtEncoders()]
    )

    def compile_(text: str) -> Evaluate:
        try:
            program = env.compile(text, disable_check=True)
        except Exception as err:  # cel-cpp reports every parse error as a RuntimeError
            raise CompileError(one_line(str(err))) from None

        def evaluate(obj: dict[str, Any]) -> bool:
            try:
                value = program.eval(data=obj)
                kind = value.type()
                if kind == cel.Type.ERROR:
                    raise EvaluationError(one_line(str(value.value())))
            except EvaluationError:
                raise
            except Exception as err:  # a value CEL cannot hold (an integer beyond 64 bits), ...
                raise EvaluationError(one_line(f"{type(err).__name__}: {err}")) from None
            if kind != cel.Type.BOOL:
                raise NotBool(type(value.plain_value()).__name__)
            return bool(value.value())

        return evaluate

    return compile_


def one_line(text: str) -> str:
    """cel-cpp's messages span lines (the expression again, a caret under the column, a status code);
    the position and the reason are what matter, on one line."""
    for code in ("INVALID_ARGUMENT", "NOT_FOUND", "UNKNOWN"):
        text = text.removeprefix(f"{code}: ").removesuffix(f" [{code}]")
    lines = [line.strip() for line in text.splitlines()]
    flat = " ".join(line for line in lines if line and not line.startswith("|"))
    return flat if len(flat) <= 300 else flat[:297] + "..."


def serve(memory: int, requests: IO[str], answers: IO[str]) -> None:
    """The child's side: answers each request line until its input ends."""
    with contextlib.suppress(ValueError, OSError):  # a system without RLIMIT_AS (macOS): time limit only
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
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
