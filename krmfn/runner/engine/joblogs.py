"""The last log lines of a failed Job's containers, for the error and the ``status`` event.

A failed migration's last lines usually say why it failed; they are fetched once, when the Job is judged
failed, for the latest failed containers (``MAX_CONTAINERS``), ``--log-lines`` lines each (0: none). Log
text is hostile: a line is cut at ``MAX_LINE`` characters and a request asks for at most
``LOG_LIMIT_BYTES`` (api.py; only the last that many characters of what comes back are read, whatever
the server sent), so a container that logs one huge line cannot flood the error; the text printer
escapes what remains (terminal.py), ``-o json`` carries the lines as JSON strings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from krmfn.runner.cluster.api import LOG_LIMIT_BYTES
from krmfn.runner.engine.jobs import PodProblem

DEFAULT_LINES = 20
MAX_CONTAINERS = 3
MAX_LINE = 512
FetchLogs = Callable[[str, str, int, bool], "str | None"]
"""(pod, container, lines, previous) -> the log text, or None when the node does not serve it."""


@dataclass(frozen=True)
class ContainerLog:
    pod: str
    container: str
    previous: bool
    """The lines are of the container's run before its last restart (``restartPolicy: OnFailure``)."""
    lines: tuple[str, ...]

    def to_dict(self) -> dict[str, object]:
        return {"pod": self.pod, "container": self.container, "previous": self.previous,
                "lines": list(self.lines)}  # fmt: skip


def last_lines(text: str, count: int) -> tuple[str, ...]:
    """The last ``count`` non-empty lines of ``text``, each cut at ``MAX_LINE`` characters. Lines end at
    ``\\n`` only, as a container wrote them: a ``\\r`` inside stays, for the printer to show escaped."""
    if count <= 0:
        return ()
    # The bound holds even where the server ignores limitBytes: the last LOG_LIMIT_BYTES characters only (the
    # first line may then start mid-line, as one cut by limitBytes ends mid-line).
    lines = [line for line in text[-LOG_LIMIT_BYTES:].split("\n") if line.strip()]
    return tuple(cut_line(line) for line in lines[-count:])


def cut_line(line: str) -> str:
    """One log line as krmfn shows it: without its ``\r\n``'s ``\r``, at most ``MAX_LINE`` characters."""
    line = line.removesuffix("\r")
    return (
        line if len(line) <= MAX_LINE else line[:MAX_LINE] + f"... ({len(line) - MAX_LINE} more characters)"
    )


def collect(
    problems: list[PodProblem], fetch: FetchLogs, count: int
) -> list[tuple[PodProblem, ContainerLog | None]]:
    """The latest ``MAX_CONTAINERS`` problems, each with its container's last ``count`` log lines (None:
    no container, logs turned off, or none served)."""
    found: list[tuple[PodProblem, ContainerLog | None]] = []
    for problem in problems[-MAX_CONTAINERS:]:
        log = None
        if problem.container and count > 0:
            text = fetch(problem.pod, problem.container, count, problem.previous)
            lines = last_lines(text or "", count)
            if lines:
                log = ContainerLog(problem.pod, problem.container, problem.previous, lines)
        found.append((problem, log))
    return found


def describe(problem: PodProblem, log: ContainerLog | None) -> str:
    """One line: the container's failure, then its last log lines separated by `` / ``."""
    text = problem.describe()
    if log is not None:
        which = "log lines before the restart" if log.previous else "log lines"
        text += f" | last {len(log.lines)} {which}: " + " / ".join(log.lines)
    return text
