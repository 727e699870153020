"""IANA time zone names, checked like the API server's ``validateTimeZone`` (then Go's LoadLocation)."""

from __future__ import annotations

import re
from functools import cache

# The API server's own pre-check of each '/'-separated part, before it loads the zone.
_PART = re.compile(r"^[A-Za-z.\-_0-9+]{1,14}$")


@cache
def database_available() -> bool:
    """False in a minimal image without tzdata: then no zone can be checked, and none is reported."""
    import zoneinfo  # here: only a CronJob with a timeZone needs it (~2 ms of every start otherwise)

    return bool(zoneinfo.available_timezones())


def zone_problem(name: str) -> str:
    """Why ``name`` is not a usable zone ('' when it is), in the API server's words."""
    if not name:
        return "timeZone must be nil or non-empty string"
    for part in name.split("/"):
        if part in (".", "..") or part.startswith("-") or not _PART.match(part):
            return f"unknown time zone {name}"
    if name.lower() == "local":
        return "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
    if name == "UTC" or not database_available():
        return ""
    import zoneinfo

    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return f"unknown time zone {name}"
    return ""
