"""The peak RSS of a child process, as the child's own address space saw it.

``ru_maxrss`` cannot say it, neither from ``getrusage`` in the child nor from ``wait4`` in the parent:
Linux keeps the high-water mark of the process image that called exec, so a child of a 340 MB pytest
reports at least 340 MB however little it used (a flood test measured 337 MB for every request kind in
the whole suite, and 50 MB alone). ``VmHWM`` in ``/proc/self/status`` belongs to the address space the
child runs in, so the child reads it itself.
"""

from __future__ import annotations

READ_PEAK = """
def _peak_bytes():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")
"""
"""Python source defining ``_peak_bytes()``, for the code a test runs with ``python -c``."""

KRMFN_CLI = (
    READ_PEAK
    + """
import os, sys
from krmfn.cli import main
code = main(sys.argv[1:])
sys.stdout.flush()
sys.stderr.flush()
os.write(3, str(_peak_bytes()).encode())
os._exit(code)
"""
)
"""``python -c KRMFN_CLI ARGS`` runs ``krmfn ARGS`` and writes its peak RSS in bytes on file descriptor 3."""
