"""`krmfn apply` and the logs of a container restarted in place, on kwok: kwok serves the test pods'
container logs from files (cluster.write_container_logs), including a previous run's. The other log tests
run on the real node (test_real_node_jobs.py); this one stays here because on a real kubelet the Job
controller deletes the failed pod and the previous run's log can be gone before the runner reads it (see
the note there), while here the previous run's lines are always served."""

from __future__ import annotations

from .cluster import PREVIOUS_LOG
from .runner_fixtures import Apply, Doc, job
from .runner_fixtures import apply as apply  # noqa: PLC0414 (re-exported fixture)


def _failed_status(events: list[Doc]) -> Doc:
    failed = [e for e in events if e["type"] == "status" and e["state"] == "failed"]
    assert len(failed) == 1, events
    return failed[0]


def test_a_container_restarted_in_place_reports_its_previous_run(apply: Apply) -> None:
    out = apply([job("migrate", 0, fail=True, restart_policy="OnFailure", backoff_limit=1)], "--wait")
    assert out.code == 1
    assert "last 2 log lines before the restart: " + " / ".join(PREVIOUS_LOG) in out.error, out.error
    [log] = _failed_status(out.events)["logs"]
    assert log["previous"] is True and log["lines"] == list(PREVIOUS_LOG)
