"""A failed Job's last log lines (krmfn/runner/engine/joblogs.py) and the --log-lines flag, without a cluster;
tests/cluster/test_apply_job_logs.py runs them end to end."""

from __future__ import annotations

from pathlib import Path

import pytest

from krmfn.runner.commands.cli import main
from krmfn.runner.engine.joblogs import MAX_CONTAINERS, MAX_LINE, ContainerLog, collect, describe, last_lines
from krmfn.runner.engine.jobs import PodProblem
from krmfn.runner.events import Status, from_dict, to_dict


def test_last_lines_keeps_the_last_non_empty_lines_as_written() -> None:
    text = "one\r\n\ntwo\n   \nthree\rover\nfour\n"
    assert last_lines(text, 3) == ("two", "three\rover", "four")
    assert last_lines(text, 100) == ("one", "two", "three\rover", "four")
    assert last_lines(text, 0) == ()
    assert last_lines("", 5) == ()


def test_a_huge_line_is_cut() -> None:
    [line] = last_lines("x" * (MAX_LINE + 1000), 1)
    assert line == "x" * MAX_LINE + "... (1000 more characters)"


def test_collect_asks_for_the_latest_containers_only_and_describes_them() -> None:
    problems = [PodProblem(f"p{i}", "main", "Error (exit code 1)") for i in range(5)]
    problems.append(PodProblem("p5", "", "Evicted: node gone"))
    asked: list[tuple[str, str, int, bool]] = []

    def fetch(pod: str, container: str, lines: int, previous: bool) -> str | None:
        asked.append((pod, container, lines, previous))
        return None if pod == "p3" else f"{pod} says\nbye\n"

    found = collect(problems, fetch, 7)
    assert len(found) == MAX_CONTAINERS
    assert asked == [("p3", "main", 7, False), ("p4", "main", 7, False)]  # p5 has no container
    assert [log for _, log in found] == [None, ContainerLog("p4", "main", False, ("p4 says", "bye")), None]
    assert (
        describe(*found[1]) == "pod p4 container main: Error (exit code 1) | last 2 log lines: p4 says / bye"
    )
    assert describe(*found[0]) == "pod p3 container main: Error (exit code 1)"
    assert collect(problems, fetch, 0) and len(asked) == 2  # 0: no request at all


def test_the_status_event_carries_logs_only_when_there_are_some() -> None:
    plain = Status(0, "s", "Job.batch a/m", "failed", "x", 1.0)
    assert "logs" not in to_dict(plain)
    logs = [ContainerLog("p", "c", True, ("a", "b")).to_dict()]
    event = Status(0, "s", "Job.batch a/m", "failed", "x", 1.0, logs)
    data = to_dict(event)
    assert data["logs"] == [{"pod": "p", "container": "c", "previous": True, "lines": ["a", "b"]}]
    assert from_dict(data) == event


@pytest.mark.parametrize("value", ["-1", "ten", "1e3", "1001", "", "0x10"])
def test_a_bad_log_lines_value_is_a_usage_error(
    value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "m.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    with pytest.raises(SystemExit) as exit_info:
        main(["apply", "-f", str(manifest), "--applyset", "a", "--log-lines", value])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --log-lines" in err and "Traceback" not in err
