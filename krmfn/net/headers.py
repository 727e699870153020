"""Linear parsers for the structured headers registries send: ``Link`` (RFC 8288) and
``WWW-Authenticate`` (RFC 7235). No regular expression: each character is looked at a bounded number
of times, so 50,000 ``<`` or 20,000 letters cost microseconds, not the seconds a backtracking pattern
took; callers cap a value's length first (ceilings.MAX_REGISTRY_HEADER) all the same.
"""

from __future__ import annotations

from krmfn.net.errors import Malformed

_SPACE = " \t"
_TOKEN_END = frozenset(' \t,;="')


def _skip(text: str, pos: int, chars: str = _SPACE) -> int:
    while pos < len(text) and text[pos] in chars:
        pos += 1
    return pos


def _token(text: str, pos: int) -> tuple[str, int]:
    start = pos
    while pos < len(text) and text[pos] not in _TOKEN_END:
        pos += 1
    return text[start:pos], pos


def _quoted(text: str, pos: int) -> tuple[str, int]:
    """The quoted-string starting at ``text[pos] == '"'``, unescaped; the position after it."""
    out: list[str] = []
    pos += 1
    while pos < len(text):
        char = text[pos]
        if char == '"':
            return "".join(out), pos + 1
        if char == "\\" and pos + 1 < len(text):
            pos += 1
            char = text[pos]
        out.append(char)
        pos += 1
    raise Malformed("a quoted string is not closed")


def _value(text: str, pos: int) -> tuple[str, int]:
    if pos < len(text) and text[pos] == '"':
        return _quoted(text, pos)
    return _token(text, pos)


def links(value: str) -> list[tuple[str, dict[str, str]]]:
    """Each ``<target>; name=value ...`` of a ``Link`` value: (target, parameters, names in lower case).
    A value that does not follow the grammar ends the list where it stops following it."""
    found: list[tuple[str, dict[str, str]]] = []
    pos = 0
    while True:
        pos = _skip(value, pos, _SPACE + ",")
        if pos >= len(value) or value[pos] != "<":
            return found
        end = value.find(">", pos + 1)
        if end < 0:
            return found
        params: dict[str, str] = {}
        found.append((value[pos + 1 : end], params))
        pos = _skip(value, end + 1)
        while pos < len(value) and value[pos] == ";":
            name, pos = _token(value, _skip(value, pos + 1))
            pos = _skip(value, pos)
            text = ""
            if pos < len(value) and value[pos] == "=":
                text, pos = _value(value, _skip(value, pos + 1))
                pos = _skip(value, pos)
            if name:
                params.setdefault(name.lower(), text)
        if pos < len(value) and value[pos] != ",":
            return found  # not the grammar: stop here rather than guess


def next_link(value: str) -> str | None:
    """The target of the ``rel="next"`` link (``rel`` may list several relations), or None."""
    for target, params in links(value):
        if "next" in params.get("rel", "").lower().split():
            return target
    return None


def challenges(value: str) -> list[tuple[str, dict[str, str]]]:
    """Each ``scheme name=value, ...`` challenge of a ``WWW-Authenticate`` value: (scheme, parameters,
    names in lower case). A token68 (``Basic abc==``) is kept under the name ``""``."""
    found: list[tuple[str, dict[str, str]]] = []
    pos = 0
    while True:
        pos = _skip(value, pos, _SPACE + ",")
        if pos >= len(value):
            return found
        scheme, after = _token(value, pos)
        if not scheme:
            raise Malformed("a challenge does not start with a scheme")
        params: dict[str, str] = {}
        found.append((scheme, params))
        pos = _skip(value, after)
        while pos < len(value):
            start = pos
            name, pos = _token(value, pos)
            pos = _skip(value, pos)
            padding = pos < len(value) and value[pos] == "=" and value[pos + 1 : pos + 2] in ("", "=", ",")
            if pos < len(value) and value[pos] == "=" and name and not (padding and not params):
                text, pos = _value(value, _skip(value, pos + 1))
                params.setdefault(name.lower(), text)
            elif name and not params:
                while pos < len(value) and value[pos] == "=":  # a token68 ends in padding
                    pos += 1
                params[""] = name + "=" * value.count("=", start + len(name), pos)
            else:
                pos = start  # the next challenge's scheme
                break
            pos = _skip(value, pos)
            if pos < len(value) and value[pos] != ",":
                raise Malformed("parameters of a challenge are not separated by commas")
            pos = _skip(value, pos, _SPACE + ",")
            if pos == start:
                raise Malformed("a challenge does not follow the grammar")
