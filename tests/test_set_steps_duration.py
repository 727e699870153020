"""krmfn.duration against Go's time.ParseDuration and Duration.String() (cases from Go's time tests)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from krmfn.duration import HOUR, MICROSECOND, MILLISECOND, MINUTE, SECOND, format_duration, parse_duration

PARSED = [
    ("0", 0),
    ("5s", 5 * SECOND),
    ("30s", 30 * SECOND),
    ("1478s", 1478 * SECOND),
    ("-5s", -5 * SECOND),
    ("+5s", 5 * SECOND),
    ("-0", 0),
    ("+0", 0),
    ("5.0s", 5 * SECOND),
    ("5.6s", 5 * SECOND + 600 * MILLISECOND),
    ("5.s", 5 * SECOND),
    (".5s", 500 * MILLISECOND),
    ("1.0s", SECOND),
    ("1.00s", SECOND),
    ("1.004s", SECOND + 4 * MILLISECOND),
    ("100.00100s", 100 * SECOND + 1 * MILLISECOND),
    ("10ns", 10),
    ("11us", 11 * MICROSECOND),
    ("12\u00b5s", 12 * MICROSECOND),
    ("12\u03bcs", 12 * MICROSECOND),
    ("13ms", 13 * MILLISECOND),
    ("14s", 14 * SECOND),
    ("15m", 15 * MINUTE),
    ("16h", 16 * HOUR),
    ("3h30m", 3 * HOUR + 30 * MINUTE),
    ("10.5s4m", 4 * MINUTE + 10 * SECOND + 500 * MILLISECOND),
    ("-2m3.4s", -(2 * MINUTE + 3 * SECOND + 400 * MILLISECOND)),
    ("1h2m3s4ms5us6ns", HOUR + 2 * MINUTE + 3 * SECOND + 4 * MILLISECOND + 5 * MICROSECOND + 6),
    ("39h9m14.425s", 39 * HOUR + 9 * MINUTE + 14 * SECOND + 425 * MILLISECOND),
    ("52763797000ns", 52763797000),
    ("0.3333333333333333333h", 20 * MINUTE),
    ("9007199254740993ns", (1 << 53) + 1),
    ("9223372036854775807ns", (1 << 63) - 1),
    ("9223372036854775.807us", (1 << 63) - 1),
    ("-9223372036854775808ns", -(1 << 63)),
    ("0.100000000000000000000h", 6 * MINUTE),
    ("0.830103483285477580700h", 49 * MINUTE + 48 * SECOND + 372539827),
]

INVALID = [
    ("", 'time: invalid duration ""'),
    ("3", 'time: missing unit in duration "3"'),
    ("-", 'time: invalid duration "-"'),
    ("s", 'time: invalid duration "s"'),
    (".", 'time: invalid duration "."'),
    ("-.", 'time: invalid duration "-."'),
    (".s", 'time: invalid duration ".s"'),
    ("+.s", 'time: invalid duration "+.s"'),
    ("1d", 'time: unknown unit "d" in duration "1d"'),
    ("1h 30m", 'time: unknown unit "h " in duration "1h 30m"'),
    ("9223372036854775808ns", 'time: invalid duration "9223372036854775808ns"'),
    ("9223372036854775.808us", 'time: invalid duration "9223372036854775.808us"'),
    ("3000000h", 'time: invalid duration "3000000h"'),
]

FORMATTED = [
    (0, "0s"),
    (1, "1ns"),
    (1100, "1.1\u00b5s"),
    (2200 * MICROSECOND, "2.2ms"),
    (3300 * MILLISECOND, "3.3s"),
    (4 * MINUTE + 5 * SECOND, "4m5s"),
    (4 * MINUTE + 5001 * MILLISECOND, "4m5.001s"),
    (5 * HOUR + 6 * MINUTE + 7001 * MILLISECOND, "5h6m7.001s"),
    (8 * MINUTE + 1, "8m0.000000001s"),
    (5 * MINUTE, "5m0s"),
    (90 * SECOND, "1m30s"),
    (2 * HOUR, "2h0m0s"),
    ((1 << 63) - 1, "2562047h47m16.854775807s"),
    (-(1 << 63), "-2562047h47m16.854775808s"),
]


@pytest.mark.parametrize(("text", "nanos"), PARSED)
def test_parse_matches_go(text: str, nanos: int) -> None:
    assert parse_duration(text) == nanos


@pytest.mark.parametrize(("text", "message"), INVALID)
def test_invalid_durations_fail_with_go_wording(text: str, message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace(".", r"\.").replace("+", r"\+") + "$"):
        parse_duration(text)


@pytest.mark.parametrize(("nanos", "text"), FORMATTED)
def test_format_matches_go(nanos: int, text: str) -> None:
    assert format_duration(nanos) == text


@given(st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1))
def test_format_parses_back(nanos: int) -> None:
    assert parse_duration(format_duration(nanos)) == nanos
