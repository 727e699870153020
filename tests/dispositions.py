"""A process's signal dispositions as the kernel reports them, and the prefix that starts a command as a
non-interactive shell starts ``command &``: with SIGINT ignored."""

from __future__ import annotations

from pathlib import Path

IGNORING = ("sh", "-c", 'trap "" INT; exec "$@"', "sh")


def signals(status: str, field: str) -> set[int]:
    """The signals of a /proc/<pid>/status mask field (``SigIgn``, ``SigCgt``: hexadecimal, bit n-1 for
    signal n)."""
    mask = int(next(line for line in status.splitlines() if line.startswith(f"{field}:")).split()[1], 16)
    return {n for n in range(1, 65) if mask >> (n - 1) & 1}


def of(pid: int) -> tuple[set[int], set[int]]:
    """(ignored, caught) signals of process ``pid`` now."""
    status = Path(f"/proc/{pid}/status").read_text()
    return signals(status, "SigIgn"), signals(status, "SigCgt")
