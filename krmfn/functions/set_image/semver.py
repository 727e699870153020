"""Semantic versions and constraints, with the syntax and meaning of Masterminds/semver v3 (used by Flux).

Versions are read loosely as Flux reads image tags: an optional ``v``, one to three numbers, an optional
pre-release and build (``v1.2``, ``1.2.3-rc.1+build.5``). Constraints: comparisons ``= != > >= < <=``,
``~`` (patch-level changes), ``^`` (changes that keep the left-most non-zero part), wildcards ``x X *``,
hyphen ranges ``1.2 - 1.4.5``, AND by spaces or commas, OR by ``||``. A pre-release version satisfies a
group only when one of the group's bounds has a pre-release, as in Masterminds.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import total_ordering

from krmfn.numbers import whole

_VERSION = re.compile(
    r"v?(\d+)(?:\.(\d+))?(?:\.(\d+))?"
    r"(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?",
    re.ASCII,  # digits are 0-9, as in Go: Python's \d also takes Arabic-Indic digits (krmfn.numbers)
)
_PART = r"(x|X|\*|\d+)"
_TERM = re.compile(
    rf"(=|!=|>=|=>|<=|=<|>|<|~>|~|\^)?\s*v?{_PART}(?:\.{_PART})?(?:\.{_PART})?"
    r"(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?",
    re.ASCII,
)
_MAX = 2**64 - 1  # Masterminds reads each number with strconv.ParseUint(text, 10, 64)
_HYPHEN = re.compile(r"(\S+)\s+-\s+(\S+)")
_OP_SPACE = re.compile(r"(=|!=|>=|=>|<=|=<|>|<|~>|~|\^)\s+")


class SemverError(ValueError):
    """A constraint that cannot be read; the message says where."""


@total_ordering
@dataclass(frozen=True)
class Version:
    major: int
    minor: int = 0
    patch: int = 0
    prerelease: tuple[str, ...] = ()

    def _key(self) -> tuple[int, int, int, int, tuple[tuple[int, int, str], ...]]:
        # No pre-release sorts above every pre-release; numeric identifiers sort below alphanumeric.
        # A numeric identifier beyond 64 bits compares as text, as Masterminds' ParseUint fails on it.
        numbers = [whole(p, _MAX) for p in self.prerelease]
        pre = tuple(
            (0, n, "") if n is not None else (1, 0, p) for p, n in zip(self.prerelease, numbers, strict=True)
        )
        return (self.major, self.minor, self.patch, 0 if self.prerelease else 1, pre)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self._key() < other._key()

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        return f"{text}-{'.'.join(self.prerelease)}" if self.prerelease else text


def parse_version(text: str) -> Version | None:
    """The version a tag names, or None for tags that are not semantic versions (``latest``, ``main``)."""
    found = _VERSION.fullmatch(text.strip())
    if not found:
        return None
    major, minor, patch, pre, _ = found.groups()
    numbers = [whole(part or "0", _MAX) for part in (major, minor, patch)]
    if numbers[0] is None or numbers[1] is None or numbers[2] is None:
        return None  # beyond 64 bits: not a version, as Masterminds' ParseUint says
    return Version(numbers[0], numbers[1], numbers[2], tuple(pre.split(".")) if pre else ())


Check = Callable[[Version], bool]


@dataclass(frozen=True)
class _Group:
    checks: tuple[Check, ...]
    allows_prerelease: bool

    def admits(self, version: Version) -> bool:
        if version.prerelease and not self.allows_prerelease:
            return False
        return all(check(version) for check in self.checks)


@dataclass(frozen=True)
class Constraint:
    text: str
    groups: tuple[_Group, ...]

    def admits(self, version: Version) -> bool:
        return any(group.admits(version) for group in self.groups)


def parse_constraint(text: str) -> Constraint:
    if not text.strip():
        raise SemverError("empty constraint")
    groups = []
    for alternative in text.split("||"):
        source = _OP_SPACE.sub(r"\1", _HYPHEN.sub(r">=\1 <=\2", alternative.strip()))
        terms = [t for t in re.split(r"[\s,]+", source) if t]
        if not terms:
            raise SemverError(f"empty alternative in {text!r}")
        checks: list[Check] = []
        prerelease = False
        for term in terms:
            check, has_pre = _term(term, text)
            checks.append(check)
            prerelease = prerelease or has_pre
        groups.append(_Group(tuple(checks), prerelease))
    return Constraint(text, tuple(groups))


def _term(term: str, constraint: str) -> tuple[Check, bool]:
    found = _TERM.fullmatch(term)
    if not found:
        raise SemverError(f"cannot read {term!r} in constraint {constraint!r}")
    op, *raw_parts, pre = found.groups()
    parts: list[int | None] = []
    for part in raw_parts:
        number = None if part is None or part in "xX*" else whole(part, _MAX)
        if number is None and part is not None and part not in "xX*":
            raise SemverError(f"a number beyond 64 bits in {term!r}")
        parts.append(number)
    known = next((i for i, p in enumerate(parts) if p is None), 3)
    if known < 3 and any(p is not None for p in parts[known:]):
        raise SemverError(f"a number after a wildcard in {term!r}")
    if pre and known < 3:
        raise SemverError(f"a pre-release needs a full version in {term!r}")
    numbers = [p or 0 for p in parts]
    low = Version(numbers[0], numbers[1], numbers[2], tuple(pre.split(".")) if pre else ())
    return _check(op or "=", low, known), bool(pre)


def _bump(low: Version, position: int) -> Version:
    if position == 0:
        return Version(low.major + 1)
    if position == 1:
        return Version(low.major, low.minor + 1)
    return Version(low.major, low.minor, low.patch + 1)


def _check(op: str, low: Version, known: int) -> Check:  # one branch per operator
    """``known`` counts the parts given before the first wildcard; ``1.2`` and ``1.2.x`` both give 2."""
    anything: Check = lambda _v: True  # noqa: E731
    high = _bump(low, known - 1) if known else None
    if op == "=":
        if known == 3:
            return lambda v: v == low
        return anything if high is None else (lambda v: low <= v < high)
    if op == "!=":
        if known == 3:
            return lambda v: v != low
        return (lambda _v: False) if high is None else (lambda v: not low <= v < high)
    if op == ">":
        if known == 3:
            return lambda v: v > low
        return (lambda _v: False) if high is None else (lambda v: v >= high)
    if op in (">=", "=>"):
        return lambda v: v >= low
    if op == "<":
        return lambda v: v < low
    if op in ("<=", "=<"):
        if known == 3:
            return lambda v: v <= low
        return anything if high is None else (lambda v: v < high)
    if op in ("~", "~>"):
        if known == 0:
            return anything
        top = _bump(low, 1 if known >= 2 else 0)
        return lambda v: low <= v < top
    # ^: changes that do not modify the left-most non-zero part
    if known == 0:
        return anything
    if low.major > 0 or known == 1:
        top = _bump(low, 0)
    elif low.minor > 0 or known == 2:
        top = _bump(low, 1)
    else:
        top = _bump(low, 2)
    return lambda v: low <= v < top


def highest(constraint: Constraint, tags: Iterable[str]) -> str | None:
    """The tag with the highest version that satisfies ``constraint``; other tags are ignored."""
    best: tuple[Version, str] | None = None
    for tag in tags:
        version = parse_version(tag)
        if version is None or not constraint.admits(version):
            continue
        if best is None or (version, tag) > best:
            best = (version, tag)
    return best[1] if best else None
