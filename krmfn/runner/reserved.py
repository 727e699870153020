"""The annotations and labels krmfn's ApplySet inventory reserves on its parent Secret.

The ground floor of the runner: the inventory (applyset.py, lock.py, runs.py) writes them, and the plan
refuses a rendered object that carries one, so they live below both.
"""

from __future__ import annotations

APPLYSET_PREFIX = "applyset.kubernetes.io/"
"""Every ApplySet label and annotation (KEP-3659) starts so; only the runner writes them."""
JOB_RECORDS = "krmfn.dev/jobs"
LEGACY_COMPLETED_JOBS = "krmfn.dev/completed-jobs"
"""What krmfn 0.1 recorded (``namespace/name=<hash of the whole spec>`` of completed Jobs): read, then
replaced by ``JOB_RECORDS`` on the next write."""
LOCK = "krmfn.dev/lock"
RUNS = "krmfn.dev/runs"
LAST_PLAN = "krmfn.dev/last-plan"
ON_DELETE_STEPS = "krmfn.dev/on-delete-steps"
"""The names of the on-delete steps of the last apply's render (comma-separated): ``krmfn delete`` without
that render refuses rather than skip them (a backup) without a word."""
MAX_ON_DELETE_STEPS = 20
"""Names read back from ``ON_DELETE_STEPS`` (set-steps allows 20 such steps); each cut to 63 characters."""
INVENTORY = frozenset({JOB_RECORDS, LEGACY_COMPLETED_JOBS, LOCK, RUNS, LAST_PLAN, ON_DELETE_STEPS})
"""krmfn's own annotations of the parent."""
MAX_JOB_RECORDS = 1000
"""At most ~170 bytes per record (namespace and name of at most 63 characters each, a 32-character hash):
1000 of them stay under 170 KiB of the 256 KiB all annotations of an object may take."""
