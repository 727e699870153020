"""Go ``time.Duration`` text: the syntax of Flux timeouts and of ``krmfn.dev/step-timeout``.

``parse_duration`` follows Go's ``time.ParseDuration`` (same accepted forms, same error wording) and
``format_duration`` Go's ``Duration.String()``, so a value written by krmfn reads back identically in
Go tools and in the runner. Durations are whole nanoseconds, as in Go.
"""

from __future__ import annotations

from krmfn.numbers import whole as whole_number

NANOSECOND = 1
MICROSECOND = 1000 * NANOSECOND
MILLISECOND = 1000 * MICROSECOND
SECOND = 1000 * MILLISECOND
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE

_UNITS = {
    "ns": NANOSECOND,
    "us": MICROSECOND,
    "\u00b5s": MICROSECOND,  # micro sign
    "\u03bcs": MICROSECOND,  # Greek small letter mu
    "ms": MILLISECOND,
    "s": SECOND,
    "m": MINUTE,
    "h": HOUR,
}
_MAX = 1 << 63  # Go's int64 bound; the magnitude of the most negative duration
_DIGITS = "0123456789"


def parse_duration(text: str) -> int:
    """Nanoseconds in ``text`` (e.g. ``5m``, ``1h30m``, ``1.5s``, ``-2ms``); ValueError like Go's."""
    invalid = ValueError(f"time: invalid duration {_quote(text)}")
    rest, negative = text, False
    if rest[:1] in ("-", "+"):
        negative, rest = rest[0] == "-", rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise invalid
    total = 0
    while rest:
        if rest[0] != "." and rest[0] not in _DIGITS:
            raise invalid
        whole, rest = _leading_digits(rest)
        value = whole_number(whole, _MAX) if whole else 0
        if value is None:  # over Go's int64 (also thousands of digits, which int() refuses)
            raise invalid
        fraction, scale = 0, 1.0
        has_fraction = False
        if rest.startswith("."):
            digits, rest = _leading_digits(rest[1:])
            has_fraction = bool(digits)
            for digit in digits:
                if fraction > (_MAX - 1) // 10:
                    break  # Go stops accumulating precision here rather than failing
                fraction, scale = fraction * 10 + int(digit), scale * 10
        if not whole and not has_fraction:
            raise invalid
        end = next((i for i, c in enumerate(rest) if c == "." or c in _DIGITS), len(rest))
        if end == 0:
            raise ValueError(f"time: missing unit in duration {_quote(text)}")
        unit_name, rest = rest[:end], rest[end:]
        unit = _UNITS.get(unit_name)
        if unit is None:
            raise ValueError(f"time: unknown unit {_quote(unit_name)} in duration {_quote(text)}")
        if value > _MAX // unit:
            raise invalid
        value *= unit
        if fraction:
            # float64 like Go, so fractions of hours round exactly as they do there
            value += int(float(fraction) * (float(unit) / scale))
            if value > _MAX:
                raise invalid
        total += value
        if total > _MAX:
            raise invalid
    if negative:
        return -total
    if total > _MAX - 1:
        raise invalid
    return total


def format_duration(nanos: int) -> str:
    """Go's ``Duration.String()``: ``5m0s``, ``1h30m0s``, ``1.5s``, ``500ms``, ``0s``."""
    if nanos == 0:
        return "0s"
    sign, magnitude = ("-", -nanos) if nanos < 0 else ("", nanos)
    if magnitude < SECOND:
        for unit, name in ((MILLISECOND, "ms"), (MICROSECOND, "\u00b5s"), (NANOSECOND, "ns")):
            if magnitude >= unit:
                return f"{sign}{_with_fraction(magnitude, unit)}{name}"
    hours, remainder = divmod(magnitude, HOUR)
    minutes, remainder = divmod(remainder, MINUTE)
    text = f"{_with_fraction(remainder, SECOND)}s"
    if hours or minutes:
        text = f"{minutes}m{text}"
    if hours:
        text = f"{hours}h{text}"
    return sign + text


def _with_fraction(amount: int, unit: int) -> str:
    whole, part = divmod(amount, unit)
    if not part:
        return str(whole)
    width = len(str(unit)) - 1
    return f"{whole}.{str(part).rjust(width, '0').rstrip('0')}"


def _leading_digits(text: str) -> tuple[str, str]:
    end = next((i for i, c in enumerate(text) if c not in _DIGITS), len(text))
    return text[:end], text[end:]


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
