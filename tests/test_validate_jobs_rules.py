"""validate-jobs beyond the fixtures: the cron reader against robfig/cron v3, no edits, rule coverage."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixture_harness import Case, discover, resource_list_text

from krmfn.functions.validate_jobs import FUNCTION, RULES
from krmfn.functions.validate_jobs.cron import ScheduleError, check_schedule
from krmfn.yaml.io import _load_fast

PACKAGE = Path(__file__).resolve().parent.parent / "krmfn" / "functions" / "validate_jobs"

ACCEPTED = [
    "5 * * * *",
    "*/15 * * * *",
    "0 9-17/2 * * MON-FRI",
    "0 0 1 jan,Jul ?",
    "5,35 */2 1-15 * sun",
    "0 0 ? * *",
    "1,5-7/2,3 * * * *",
    "5,,10 * * * *",  # empty list entries are dropped, as strings.FieldsFunc does
    "0 0 29-31 2 *",  # never fires, but parses
    "CRON_TZ=UTC  5 * * * *",  # parses; the API server then rejects TZ (rule schedule-time-zone-prefix)
    "TZ=Europe/Paris 0 3 * * *",
    "@yearly",
    "@annually",
    "@monthly",
    "@weekly",
    "@daily",
    "@midnight",
    "@hourly",
    "@every 5m",
    "@every 1h30m",
]

REJECTED = [
    ("", "empty spec string"),
    ("5 j * * *", "failed to parse int from j"),
    ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
    ("0 0 * * * *", "expected exactly 5 fields, found 6"),
    ("5--5 * * * *", "too many hyphens: 5--5"),
    ("* * * jan-x *", "failed to parse int from x"),
    ("*/-12 * * * *", "negative number (-12) not allowed: -12"),
    ("*//2 * * * *", "too many slashes: *//2"),
    ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
    ("60 * * * *", "end of range (60) above maximum (59): 60"),
    ("* 24 * * *", "end of range (24) above maximum (23): 24"),
    ("* * * 13 *", "end of range (13) above maximum (12): 13"),
    ("* * * * 7", "end of range (7) above maximum (6): 7"),
    ("5-3 * * * *", "beginning of range (5) beyond end of range (3): 5-3"),
    ("*/0 * * * *", "step of range should be a positive number: */0"),
    ("@Daily", "unrecognized descriptor: @Daily"),
    ("@every Xm", 'failed to parse duration @every Xm: time: invalid duration "Xm"'),
    ("@unrecognized", "unrecognized descriptor: @unrecognized"),
    ("TZ=Nowhere/Town 0 3 * * *", "provided bad location Nowhere/Town: unknown time zone Nowhere/Town"),
]


@pytest.mark.parametrize("schedule", ACCEPTED)
def test_schedules_parse_standard_accepts(schedule: str) -> None:
    check_schedule(schedule)


@pytest.mark.parametrize(("schedule", "message"), REJECTED)
def test_schedules_parse_standard_rejects(schedule: str, message: str) -> None:
    with pytest.raises(ScheduleError) as caught:
        check_schedule(schedule)
    assert message in str(caught.value)


CASES = [c for c in discover() if c.function == "validate-jobs"]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_validator_never_changes_items(case: Case) -> None:
    text = resource_list_text(case)
    before = _load_fast(text)["items"]
    for mode in ("fast", "fidelity"):
        assert _load_fast(FUNCTION.outcome(text, mode).text)["items"] == before


def test_every_rule_has_a_fixture_that_fires_it() -> None:
    fired: set[str] = set()
    for case in CASES:
        for result in FUNCTION.outcome(resource_list_text(case), "fast").results:
            fired.update(v for k, v in result.tags.items() if k == "rule")
    assert fired == set(RULES)


def test_readme_documents_every_rule() -> None:
    readme = (PACKAGE / "README.md").read_text()
    missing = [rule for rule in RULES if f"`{rule}`" not in readme]
    assert not missing, f"README.md does not document: {missing}"
