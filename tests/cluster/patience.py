"""How long the control-plane tests let a run take when its time is not what they test.

A step the test expects to end by itself (a Job that completes or fails, a Deployment that rolls out, a
custom resource its fake controller settles) gets ``STEP_TIMEOUT``: on a quiet machine it ends in seconds,
and the budget is only the bound of a hang. On a busy machine (both cores taken by other work, as on a
laptop or a shared CI runner) a simulated pod's stages can lag by tens of seconds, and a 30 s budget made
a test that waits for a Job's failure see a step timeout instead (issue 30). A budget that is the subject
of a test (the step is meant to time out, a value meant to be exported) is written where it is used with
the marker ``# timeout under test``; tests/cluster/test_suite_patience.py keeps every other one at least
this long.
"""

from __future__ import annotations

STEP_TIMEOUT_SECONDS = 300.0
STEP_TIMEOUT = "5m"
EVENT_WAIT = 300.0
"""A test's own wait for the next event of a run in the background, and for the run's end."""
MARKER = "# timeout under test"
