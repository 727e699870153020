"""The one reader of whole numbers that someone else wrote: an annotation, an HTTP header, a field of the
cluster's JSON kept as text (a resourceVersion, a lease's pid), a count in a record, a cron field.

Python's ``int()`` is the wrong judge of such text. It takes signs, spaces, underscores and the digits of
every script (``int(' +1_0 ')`` is 10, ``int('١٢')`` is 12), so a value another reader (the API server,
Go's ``strconv.Atoi``) refuses would be read as a number; ``str.isdigit()`` is true for ``'²'``, which
``int()`` then refuses; and past 4,300 digits ``int()`` raises. Each of these was a traceback or a silently
different number somewhere in krmfn. ``whole`` takes ASCII digits only (an optional sign only where the
caller asks), converts at most ``MAX_DIGITS`` significant digits, checks an explicit range, and answers
None for anything else, so that every caller chooses its error or its fallback, and says which.
"""

from __future__ import annotations

MAX_DIGITS = 20
"""Significant digits ``whole`` converts: 2**64 has 20. Leading zeros do not count (Go reads them)."""
_DIGITS = frozenset("0123456789")


def whole(text: object, high: int, *, low: int = 0, sign: bool = False) -> int | None:
    """``text`` as a whole number in ``low..high``, or None when it is not one: not a ``str``, empty, any
    character but ASCII digits (and, with ``sign``, one leading ``+`` or ``-``), more than ``MAX_DIGITS``
    significant digits, or outside the range."""
    if not isinstance(text, str) or not text:
        return None
    negative = False
    if sign and text[0] in "+-":
        negative, text = text[0] == "-", text[1:]
    if not text or not _DIGITS.issuperset(text):
        return None
    significant = text.lstrip("0")
    if len(significant) > MAX_DIGITS:
        return None
    value = -int(significant or "0") if negative else int(significant or "0")
    return value if low <= value <= high else None
