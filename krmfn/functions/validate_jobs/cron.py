"""CronJob schedules as the API server reads them: robfig/cron v3 ``ParseStandard``.

Five fields (minute, hour, day of month, month, day of week) made of lists, ranges, steps, ``*``/``?``
and month/day names, or a descriptor (``@yearly`` ... ``@hourly``, ``@every <Go duration>``). The error
texts are robfig's, which is what ``kubectl apply`` prints after ``spec.schedule: Invalid value``.
"""

from __future__ import annotations

import re

from krmfn.duration import parse_duration
from krmfn.functions.validate_jobs.timezones import zone_problem
from krmfn.numbers import whole
from krmfn.records import FrozenRecord

DESCRIPTORS = frozenset({"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"})
_EVERY = "@every "
_INT = re.compile(r"[+-]?[0-9]+")
_INT_RANGE = (-(2**63), 2**63 - 1)  # Go's int on 64-bit platforms


class Bounds(FrozenRecord):
    """The range and names of one cron field."""

    __slots__ = _fields = ("low", "high", "names")

    def __init__(self, low: int, high: int, names: dict[str, int]) -> None:
        self.low = low
        self.high = high
        self.names = names


MONTHS = {
    m: i + 1
    for i, m in enumerate(
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    )
}
DAYS = {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
FIELDS = (
    Bounds(0, 59, {}),  # minute
    Bounds(0, 23, {}),  # hour
    Bounds(1, 31, {}),  # day of month
    Bounds(1, 12, MONTHS),
    Bounds(0, 6, DAYS),
)


class ScheduleError(ValueError):
    pass


def check_schedule(spec: str) -> None:
    """Raise ScheduleError with robfig's message when ``ParseStandard`` would reject ``spec``."""
    if not spec:
        raise ScheduleError("empty spec string")
    if spec.startswith(("TZ=", "CRON_TZ=")):
        spec = _strip_time_zone(spec)
    if spec.startswith("@"):
        _check_descriptor(spec)
        return
    fields = spec.split()
    if len(fields) != len(FIELDS):
        raise ScheduleError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    for text, bounds in zip(fields, FIELDS, strict=True):
        for expr in filter(None, text.split(",")):
            _check_range(expr, bounds)


def _strip_time_zone(spec: str) -> str:
    space, equals = spec.find(" "), spec.find("=")
    name = spec[equals + 1 : space] if space >= 0 else spec[equals + 1 :]
    problem = zone_problem(name)
    if space < 0 or problem:
        raise ScheduleError(f"provided bad location {name}: {problem or 'no schedule after it'}")
    return spec[space:].strip()


def _check_descriptor(spec: str) -> None:
    if spec in DESCRIPTORS:
        return
    if spec.startswith(_EVERY):
        try:
            parse_duration(spec[len(_EVERY) :])
        except ValueError as err:
            raise ScheduleError(f"failed to parse duration {spec}: {err}") from None
        return
    raise ScheduleError(f"unrecognized descriptor: {spec}")


def _check_range(expr: str, bounds: Bounds) -> None:
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    if low_and_high[0] in ("*", "?"):
        start, end = bounds.low, bounds.high
    else:
        start = _int_or_name(low_and_high[0], bounds.names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _int_or_name(low_and_high[1], bounds.names)
        else:
            raise ScheduleError(f"too many hyphens: {expr}")
    step = 1
    if len(range_and_step) == 2:
        step = _int(range_and_step[1])
        if len(low_and_high) == 1:
            end = bounds.high  # "N/step" means "N-max/step"
    elif len(range_and_step) > 2:
        raise ScheduleError(f"too many slashes: {expr}")
    if start < bounds.low:
        raise ScheduleError(f"beginning of range ({start}) below minimum ({bounds.low}): {expr}")
    if end > bounds.high:
        raise ScheduleError(f"end of range ({end}) above maximum ({bounds.high}): {expr}")
    if start > end:
        raise ScheduleError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise ScheduleError(f"step of range should be a positive number: {expr}")


def _int_or_name(text: str, names: dict[str, int]) -> int:
    if text.lower() in names:
        return names[text.lower()]
    return _int(text)


def _int(text: str) -> int:
    if not _INT.fullmatch(text):
        raise ScheduleError(
            f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": invalid syntax'
        )
    value = whole(text, _INT_RANGE[1], low=_INT_RANGE[0], sign=True)
    if value is None:
        raise ScheduleError(
            f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": value out of range'
        )
    if value < 0:
        raise ScheduleError(f"negative number ({value}) not allowed: {text}")
    return value
