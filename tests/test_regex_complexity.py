"""Issue 29, finding 10: no regular expression in krmfn/ can take more than linear time on what it is
applied to, and the headers registries send are parsed by linear code.

Before, set-image read ``Link`` with ``<([^>]+)>\\s*;\\s*rel="?next"?`` (50,000 ``<``: 15-27 s per page,
each scan from a ``<`` running to the end) and ``WWW-Authenticate`` with ``(\\w+)="([^"]*)"`` (20,000
letters: 3 s). Both are gone (krmfn/net/headers.py). The class is closed in two parts:

- every pattern krmfn compiles (module constants, and each literal passed to ``re.*``, found by reading
  the source) is parsed with the standard library's own regex parser and checked for the shapes that
  backtrack more than linearly: an unbounded repeat inside another (unless each iteration starts with a
  delimiter the inner repeat cannot consume), two unbounded repeats that can consume the same character
  with only optional parts between them, an unbounded repeat over alternatives that can start alike,
  and, for a pattern used unanchored (``search``, ``findall``, ``sub``...), an unbounded repeat that can
  consume the pattern's first character and then fail (every start position rescans: quadratic). The two
  old patterns are flagged, so the check is not vacuous.
- the header parsers are counted, not timed: the characters they look at grow linearly with hostile
  inputs (``<`` x n, letters x n, open quotes, commas), and they parse what registries really send.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import math
import pkgutil
import re
import re._constants as sre
import re._parser as sre_parse
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

import krmfn
from krmfn.net.errors import Malformed
from krmfn.net.headers import challenges, links, next_link
from krmfn.patterns import Deferred

ROOT = Path(__file__).resolve().parent.parent
ALPHABET = [chr(i) for i in range(0x250)] + list("\u0130\u017f\u212a\u202e\u200b\u3000\U0001f600")
UNANCHORED = {"search", "findall", "finditer", "sub", "subn", "split"}
UNBOUNDED = sre.MAXREPEAT
REPEATS = {sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT}
_CATEGORIES = {
    sre.CATEGORY_DIGIT: re.compile(r"\d"), sre.CATEGORY_NOT_DIGIT: re.compile(r"\D"),
    sre.CATEGORY_WORD: re.compile(r"\w"), sre.CATEGORY_NOT_WORD: re.compile(r"\W"),
    sre.CATEGORY_SPACE: re.compile(r"\s"), sre.CATEGORY_NOT_SPACE: re.compile(r"\S"),
}  # fmt: skip
DYNAMIC = {
    # (module, the source of the call) -> (a pattern it builds, for the check; used unanchored)
    ("krmfn.functions.set_image.imageref", "re.compile(re.escape(name) + _TAG + _DIGEST)"): (
        lambda module: re.compile(re.escape("registry.example/acme/app") + module._TAG + module._DIGEST),
        False,  # imageref.matches: fullmatch
    ),
}
REVIEWED = {
    # Patterns the rules flag that were read and found linear, or are applied to no data from the network,
    # a cluster or a manifest: each with why.
    "krmfn.export.resourceset._TIMEOUT": "anchored; an iteration ends at its unit (ms, s, m, h) and the next "
    "starts with a digit, which no unit is, so a string splits into iterations one way only",
    "krmfn.functions.set_image.semver._HYPHEN": "the functionConfig's semver constraint (the operator's "
    "text, docs/security.md), never a registry's or a manifest's",
    "krmfn.kpt.layout._BLOCK_SCALAR": "searched in one line at a time: `.*` reaches the line's end, where "
    "`$` always matches, so no start position fails after scanning",
}


# --- the structure of a pattern --------------------------------------------------------------------------

Node = tuple[Any, Any]


def _atom_set(op: Any, av: Any, flags: int) -> frozenset[str]:
    ignore = bool(flags & re.IGNORECASE)

    def folded(chars: Iterable[str]) -> frozenset[str]:
        out = set(chars)
        if ignore:
            out |= {c.swapcase() for c in out} | {c.lower() for c in out} | {c.upper() for c in out}
        return frozenset(c for c in out if c in _ALPHA)

    if op == sre.LITERAL:
        return folded([chr(av)])
    if op == sre.NOT_LITERAL:
        return frozenset(_ALPHA) - folded([chr(av)])
    if op == sre.ANY:
        return frozenset(_ALPHA) if flags & re.DOTALL else frozenset(_ALPHA) - {"\n"}
    if op == sre.IN:
        chosen: set[str] = set()
        negate = False
        for item, value in av:
            if item == sre.NEGATE:
                negate = True
            elif item == sre.LITERAL:
                chosen |= folded([chr(value)])
            elif item == sre.RANGE:
                chosen |= folded(c for c in ALPHABET if value[0] <= ord(c) <= value[1])
            elif item == sre.CATEGORY:
                chosen |= {c for c in ALPHABET if _CATEGORIES[value].match(c)}
        return frozenset(_ALPHA) - chosen if negate else frozenset(chosen)
    raise AssertionError(f"not an atom: {op}")


_ALPHA = frozenset(ALPHABET)
_ATOMS = {sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN}


def _nullable(node: Node) -> bool:
    op, av = node
    if op in _ATOMS:
        return False
    if op in REPEATS:
        return av[0] == 0 or all(_nullable(n) for n in av[2])
    if op in (sre.SUBPATTERN, sre.ATOMIC_GROUP):
        return all(_nullable(n) for n in _body(node))
    if op == sre.BRANCH:
        return any(all(_nullable(n) for n in branch) for branch in av[1])
    return True  # anchors, lookarounds, group references: zero width (or unknown)


def _body(node: Node) -> list[Node]:
    op, av = node
    if op in REPEATS:
        return list(av[2])
    if op == sre.SUBPATTERN:
        return list(av[3])
    if op == sre.ATOMIC_GROUP:
        return list(av)
    return []


def _chars(seq: Iterable[Node], flags: int, *, first: bool) -> frozenset[str]:
    """The characters a match of ``seq`` can start with (``first``), or can consume anywhere."""
    out: set[str] = set()
    for node in seq:
        op, av = node
        if op in _ATOMS:
            out |= _atom_set(op, av, flags)
        elif op == sre.BRANCH:
            for branch in av[1]:
                out |= _chars(branch, flags, first=first)
        elif op in (sre.GROUPREF, sre.GROUPREF_EXISTS):
            return frozenset(_ALPHA)
        else:
            out |= _chars(_body(node), flags, first=first)
        if first and not _nullable(node):
            break
    return frozenset(out)


def _first(seq: Iterable[Node], flags: int) -> frozenset[str]:
    return _chars(seq, flags, first=True)


def _consumes(seq: Iterable[Node], flags: int) -> frozenset[str]:
    return _chars(seq, flags, first=False)


def _unbounded(node: Node) -> bool:
    return node[0] in REPEATS and node[1][1] == UNBOUNDED


def _walk(seq: Iterable[Node]) -> Iterator[Node]:
    for node in seq:
        yield node
        op, av = node
        if op == sre.BRANCH:
            for branch in av[1]:
                yield from _walk(branch)
        elif op in (sre.ASSERT, sre.ASSERT_NOT):
            yield from _walk(av[1])
        else:
            yield from _walk(_body(node))


def _sequences(seq: list[Node]) -> Iterator[list[Node]]:
    yield seq
    for node in seq:
        op, av = node
        if op == sre.BRANCH:
            for branch in av[1]:
                yield from _sequences(list(branch))
        elif op in (sre.ASSERT, sre.ASSERT_NOT):
            yield from _sequences(list(av[1]))
        elif _body(node):
            yield from _sequences(_body(node))


def _leading_unbounded(node: Node, flags: int) -> frozenset[str] | None:
    """What the unbounded repeat a match of ``node`` may start with consumes (None: it starts otherwise)."""
    if _unbounded(node):
        return _consumes(_body(node), flags)
    for inner in _body(node):
        found = _leading_unbounded(inner, flags)
        if found is not None:
            return found
        if not _nullable(inner):
            return None
    return None


def _width(seq: Iterable[Node]) -> tuple[float, float]:
    """The shortest and longest match of ``seq`` (``inf``: unbounded)."""
    low = high = 0.0
    for node in seq:
        op, av = node
        if op in _ATOMS:
            low, high = low + 1, high + 1
        elif op in REPEATS:
            inner = _width(av[2])
            low += av[0] * inner[0]
            high += math.inf if av[1] == UNBOUNDED and inner[1] else av[1] * inner[1]
        elif op == sre.BRANCH:
            widths = [_width(branch) for branch in av[1]]
            low += min(w[0] for w in widths)
            high += max(w[1] for w in widths)
        elif op in (sre.GROUPREF, sre.GROUPREF_EXISTS):
            high = math.inf
        else:
            inner = _width(_body(node))
            low, high = low + inner[0], high + inner[1]
    return low, high


def _split_leading_atom(seq: list[Node], flags: int) -> tuple[frozenset[str], list[Node]] | None:
    """(the set of the atom every match of ``seq`` starts with, what follows it), or None."""
    if not seq:
        return None
    head, rest = seq[0], seq[1:]
    if head[0] in _ATOMS:
        return _atom_set(*head, flags), rest
    if head[0] in (sre.SUBPATTERN, sre.ATOMIC_GROUP):
        inner = _split_leading_atom(_body(head), flags)
        if inner is not None:
            return inner[0], inner[1] + rest
    return None


def _delimited(body: list[Node], flags: int) -> bool:
    """Whether each iteration of ``body`` starts with a character no other part of it can consume, so a
    string splits into iterations one way only."""
    split = _split_leading_atom(body, flags)
    return split is not None and not split[0] & _consumes(split[1], flags)


RESCAN = "used unanchored, an unbounded repeat can consume the first character, then fail"


def problems(pattern: re.Pattern[str], unanchored: bool) -> list[str]:
    """Why ``pattern`` may backtrack more than linearly ([] when it cannot, by the rules above)."""
    flags = pattern.flags
    tree = list(sre_parse.parse(pattern.pattern, flags))
    found: set[str] = set()
    for node in _walk(tree):
        if not _unbounded(node):
            continue
        body = _body(node)
        low, high = _width(body)
        nested = any(_unbounded(n) for n in _walk(body))
        if (nested or low != high) and not _delimited(body, flags):
            found.add("an unbounded repeat over what can match in more than one way, without a delimiter")
    for seq in _sequences(tree):
        for i, node in enumerate(seq):
            if not _unbounded(node):
                continue
            mine = _consumes(_body(node), flags)
            for after in seq[i + 1 :]:
                if _leading_unbounded(after, flags) is not None and mine & _first([after], flags):
                    found.add("two unbounded repeats that can consume the same character, side by side")
                    break
                if not _nullable(after):
                    break
    starts = (
        tree[0][0] == sre.AT and tree[0][1] in (sre.AT_BEGINNING, sre.AT_BEGINNING_STRING) if tree else False
    )
    if unanchored and not starts:
        alternatives = tree[0][1][1] if len(tree) == 1 and tree[0][0] == sre.BRANCH else [tree]
        for alternative in map(list, alternatives):
            first = _first(alternative, flags)
            for seq in _sequences(alternative):
                for i, node in enumerate(seq):
                    can_fail_after = seq is not alternative or bool(seq[i + 1 :])
                    if _unbounded(node) and can_fail_after and first & _consumes(_body(node), flags):
                        found.add(
                            "used unanchored, an unbounded repeat can consume the first character, then fail"
                        )
    return sorted(found)


# --- every pattern in krmfn/ -----------------------------------------------------------------------------


def _calls(tree: ast.AST) -> Iterator[tuple[str, str, ast.Call]]:
    """(receiver, method, call) of every ``receiver.method(...)`` call."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            yield ast.unparse(node.func.value), node.func.attr, node


def patterns() -> Iterator[tuple[str, re.Pattern[str], bool]]:
    """(where, pattern, used unanchored) for every pattern krmfn/ builds."""
    for info in pkgutil.walk_packages(krmfn.__path__, "krmfn."):
        module = importlib.import_module(info.name)
        path = Path(module.__file__ or "")
        if path.suffix != ".py":
            continue
        tree = ast.parse(path.read_text())
        calls = list(_calls(tree))
        for name, found in vars(module).items():
            # a pattern compiled on first use (krmfn/patterns.py) is checked as what it compiles to
            value = found.compiled() if isinstance(found, Deferred) else found
            if isinstance(value, re.Pattern) and _defined_in(tree, name):
                used = {method for receiver, method, _ in calls if receiver.rsplit(".", 1)[-1] == name}
                yield f"{info.name}.{name}", value, bool(used & UNANCHORED)
        for receiver, method, call in calls:
            if receiver != "re" or method in ("escape", "error") or not call.args:
                continue
            if info.name == "krmfn.patterns":
                continue  # Deferred's one compile: its patterns are the module constants checked above
            source = ast.unparse(call)
            first = call.args[0]
            if _module_level(tree, call):
                continue  # NAME = re.compile(...): checked as the module's constant above
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                yield f"{info.name}: {source}", re.compile(first.value), method in UNANCHORED
            elif isinstance(first, ast.Name) and isinstance(getattr(module, first.id, None), re.Pattern):
                continue  # re.sub(PATTERN, ...) with a module constant: checked above
            else:
                dynamic = DYNAMIC.get((info.name, source))
                assert dynamic is not None, f"{info.name}: {source} builds a pattern this test cannot see"
                build, unanchored = dynamic
                yield f"{info.name}: {source}", build(module), unanchored


def _defined_in(tree: ast.Module, name: str) -> bool:
    return any(
        isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
        for node in tree.body
    )


def _module_level(tree: ast.Module, call: ast.Call) -> bool:
    return any(isinstance(node, ast.Assign) and node.value is call for node in tree.body)


ALL = list(patterns())


def test_the_inventory_finds_the_patterns_applied_to_network_and_cluster_data() -> None:
    names = {where.split(":")[0] for where, _, _ in ALL}
    expected = ["krmfn.functions.set_image.registry._TAG", "krmfn.functions.set_image.registry._TOKEN",
                "krmfn.runner.engine.jobs.IMMUTABLE_MESSAGES", "krmfn.terminal._COMMAND_MARKS",
                "krmfn.functions.validate_jobs.cron._INT",
                "krmfn.runner.engine.diff._UNSAFE_IN_FILE", "krmfn.net.urls._HOST_CHARS"]  # fmt: skip
    for where in expected:
        assert where in names, where
    assert len(ALL) > 40


@pytest.mark.parametrize(("where", "pattern", "unanchored"), ALL, ids=[where for where, _, _ in ALL])
def test_no_pattern_backtracks_more_than_linearly(
    where: str, pattern: re.Pattern[str], unanchored: bool
) -> None:
    if where in REVIEWED:
        assert problems(pattern, unanchored), f"{where} is linear by the rules now: drop it from REVIEWED"
        return
    assert problems(pattern, unanchored) == [], f"{where}: {pattern.pattern!r}"


@pytest.mark.parametrize(
    ("pattern", "unanchored"),
    [
        (r'<([^>]+)>\s*;\s*rel="?next"?', True),  # set-image's Link parser before
        (r'(\w+)="([^"]*)"', True),  # its WWW-Authenticate parser before
        (r"(a+)+$", False), (r"(\w+\s?)*$", False), (r"(a|aa)*c", False), (r"\d+\.?\d+x", False),
        (r"(a[ab]*b)*x", False), (r"(a|b|ab)*c", False), (r"\w+@", True),
        (r"<<(\s[^\n]*?\s)>>", True),  # render-inputs' scanner before issue 15
    ],
)  # fmt: skip
def test_the_check_flags_the_patterns_that_were_slow(pattern: str, unanchored: bool) -> None:
    assert problems(re.compile(pattern), unanchored)


@pytest.mark.parametrize(
    ("pattern", "unanchored"),
    [
        (r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$", True),
        (r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}", True), (r"[^a-z0-9]+", True), (r"::|##", True),
        (r"<([^<>]*)>", True), (r"[^\s][ \t]{2,}#|\t", True), (r"(a|ab)*c", False),
        (r"[a-z]+(\.[a-z]+)*$", False),
    ],
)  # fmt: skip
def test_the_check_passes_linear_patterns(pattern: str, unanchored: bool) -> None:
    assert problems(re.compile(pattern), unanchored) == []


@pytest.mark.parametrize("pattern", [r"(a|ab)*c", r"[a-z]+(\.[a-z]+)*$"])
def test_the_same_patterns_used_unanchored_are_quadratic_and_flagged(pattern: str) -> None:
    """``aaaa...`` fails after a scan to its end from each of its n starts."""
    assert problems(re.compile(pattern), True)


# --- the header parsers ----------------------------------------------------------------------------------


class Counted(str):
    """A string that counts how many times a parser indexes or slices it."""

    looks = 0

    def __getitem__(self, key: Any) -> str:
        Counted.looks += 1
        return super().__getitem__(key)


def looks(parse: Any, text: str) -> int:
    Counted.looks = 0
    with contextlib.suppress(Malformed):
        parse(Counted(text))
    return Counted.looks


HOSTILE = {
    "<": lambda n: "<" * n,
    "< then >": lambda n: "<" * n + ">",
    "letters": lambda n: "a" * n,
    "letters =": lambda n: "a" * n + "=",
    "open quote": lambda n: 'Bearer realm="' + "x" * n,
    "commas": lambda n: "," * n,
    "params": lambda n: "Bearer " + ",".join(f'a{i}="v"' for i in range(n // 8)),
    "semicolons": lambda n: "<x>" + ";" * n,
    "escapes": lambda n: 'Bearer realm="' + "\\" * n + '"',
    "links": lambda n: ", ".join(f"<{i}>; rel=prev" for i in range(n // 16)),
}


@pytest.mark.parametrize("parser", [links, next_link, challenges], ids=["links", "next_link", "challenges"])
@pytest.mark.parametrize("shape", list(HOSTILE))
def test_the_header_parsers_look_at_each_character_a_bounded_number_of_times(parser: Any, shape: str) -> None:
    small, large = (looks(parser, HOSTILE[shape](n)) for n in (20_000, 80_000))
    assert large <= 4.5 * small + 100, (small, large)  # linear: four times the input, four times the looks
    assert large <= 12 * 80_000 + 100


def test_the_header_parsers_read_what_registries_send() -> None:
    assert next_link('</v2/a/tags/list?n=2&last=b>; rel="next"') == "/v2/a/tags/list?n=2&last=b"
    assert next_link('<https://r/v2/a/tags/list?last=x>; type="a"; rel="prev next", <y>; rel=last') == (
        "https://r/v2/a/tags/list?last=x"
    )
    assert next_link('<a>; rel="prev"') is None and next_link("") is None and next_link("<" * 50_000) is None
    assert links('<a>;rel=next,<b>; REL="last"') == [("a", {"rel": "next"}), ("b", {"rel": "last"})]
    hub = 'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:a:pull"'
    params = {"realm": "https://auth.docker.io/token", "service": "registry.docker.io"}
    params["scope"] = "repository:a:pull"
    assert challenges(hub) == [("Bearer", params)]
    assert challenges('Basic realm="x", Bearer realm="y", error="invalid_token"') == [
        ("Basic", {"realm": "x"}),
        ("Bearer", {"realm": "y", "error": "invalid_token"}),
    ]
    assert challenges('Bearer realm="a\\"b"') == [("Bearer", {"realm": 'a"b'})]
    assert challenges("Negotiate abc==") == [("Negotiate", {"": "abc=="})]
    with pytest.raises(Malformed):
        challenges('Bearer realm="unterminated')
    assert challenges("a" * 20_000) == [("a" * 20_000, {})]
