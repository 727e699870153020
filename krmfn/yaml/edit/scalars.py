"""How a scalar is written so that every reader reads it back as the same value.

``needs_quotes`` is the one rule for plain strings: a string any of YAML 1.1 (PyYAML, go-yaml v2, old
kubectl), YAML 1.2 core (go-yaml v3: kpt, kustomize) or krmfn's own reader would resolve to something
else is never written plain. The other helpers choose the cheapest safe style: plain, then single
quotes, then double quotes with escapes; multi-line strings become literal blocks where the text allows.
"""

from __future__ import annotations

import base64
import math
import re
from typing import Any

from krmfn.patterns import deferred
from krmfn.yaml import fast as yamlfast

# YAML 1.1's implicit types (yaml.org/type), including what PyYAML leaves out (y, n) and go-yaml v2 reads:
# these words, and the numbers and dates below (which all start with a sign, a dot or a digit).
_YAML11_WORDS = frozenset(
    [
        "y",
        "Y",
        "yes",
        "Yes",
        "YES",
        "n",
        "N",
        "no",
        "No",
        "NO",
        "true",
        "True",
        "TRUE",
        "false",
        "False",
        "FALSE",
        "on",
        "On",
        "ON",
        "off",
        "Off",
        "OFF",
        "~",
        "null",
        "Null",
        "NULL",
        "<<",
        "=",
    ]
)
_YAML11_FIRST = frozenset("-+.0123456789")
_YAML11_NUMBER = deferred(
    r"""^(?:
      [-+]?0b[0-1_]+
    | [-+]?0[0-7_]+
    | [-+]?(?:0|[1-9][0-9_]*)
    | [-+]?0x[0-9a-fA-F_]+
    | [-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+
    | [-+]?(?:[0-9][0-9_]*)?\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    | [-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
    | [-+]?\.(?:inf|Inf|INF) | \.(?:nan|NaN|NAN)
    | [0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?
      (?:(?:[Tt]|[\ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?
         (?:[\ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)?
    )$""",
    re.VERBOSE,
)
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")
# In flow context go-yaml's and libyaml's emitters write no plain scalar holding one of these (kpt
# then quotes what a function wrote plain), so neither do we.
_FLOW_INDICATORS = frozenset(",[]{}:?")


def needs_quotes(text: str) -> bool:
    """True when ``text`` written plain would not read back as this string in YAML 1.1 or 1.2."""
    if not text or (text[:-1] if text.endswith("\n") else text) in _YAML11_WORDS:  # "$" allows one "\n"
        return True
    if text[0] in _YAML11_FIRST and _YAML11_NUMBER.match(text):
        return True
    return not isinstance(yamlfast.resolve_plain(text), str)


def _printable(char: str) -> bool:
    code = ord(char)
    if 0x20 <= code <= 0x7E:
        return True
    if code in (0x2028, 0x2029, 0xFEFF):  # line breaks to YAML 1.1 readers; a byte-order mark
        return False
    return 0xA0 <= code <= 0xD7FF or 0xE000 <= code <= 0xFFFD or code >= 0x10000


def plain_ok(text: str, flow: bool) -> bool:
    """Whether ``text`` can be written without quotes (conservatively: simple text only)."""
    if not text or (
        text[0] in _INDICATORS and not (text[0] == "-" and len(text) > 1 and text[1] not in " \t-")
    ):
        return False
    if text[0] in " \t" or text[-1] in " \t:" or text.startswith(("---", "...")):
        return False
    if ": " in text or " #" in text or "\t" in text:
        return False
    if flow and any(c in _FLOW_INDICATORS for c in text):
        return False
    if not (text.isascii() and text.isprintable()) and not all(_printable(c) for c in text):
        return False
    return not needs_quotes(text)


def single_quoted(text: str) -> str | None:
    if "\n" in text or not all(_printable(c) for c in text):
        return None
    return "'" + text.replace("'", "''") + "'"


_ESCAPES = {
    "\0": "\\0",
    "\a": "\\a",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\v": "\\v",
    "\f": "\\f",
    "\r": "\\r",
    "\x1b": "\\e",
    '"': '\\"',
    "\\": "\\\\",
    "\x85": "\\N",
    "\u2028": "\\L",
    "\u2029": "\\P",
}


def double_quoted(text: str) -> str:
    out = ['"']
    for char in text:
        escaped = _ESCAPES.get(char)
        if escaped is not None:
            out.append(escaped)
        elif _printable(char):
            out.append(char)
        else:
            code = ord(char)
            out.append(
                f"\\x{code:02X}" if code < 0x100 else f"\\u{code:04X}" if code < 0x10000 else f"\\U{code:08X}"
            )
    out.append('"')
    return "".join(out)


def literal_ok(text: str) -> bool:
    """Whether a multi-line string survives as a literal block (``|``) exactly."""
    if "\n" not in text or "\r" in text or "\t" in text:
        return False
    lines = text.split("\n")
    content = [line for line in lines if line]
    if not content or content[0].startswith(" "):
        return False
    return all(not line.endswith(" ") and all(_printable(c) for c in line) for line in lines)


def literal(text: str, indent: str, newline: str) -> str:
    """A literal block: the header, then the lines indented by ``indent`` (no final line break)."""
    stripped = text.rstrip("\n")
    trailing = len(text) - len(stripped)
    chomp = "-" if trailing == 0 else "" if trailing == 1 else "+"
    body = text[:-1] if trailing else text
    lines = [indent + line if line else "" for line in body.split("\n")]
    return "|" + chomp + newline + newline.join(lines)


class Unwritable(Exception):
    """A value this writer does not know how to write (the caller falls back to the fast dumper)."""


def scalar(value: Any, flow: bool, style: str = "", indent: str = "", newline: str = "\n") -> str:
    """``value`` as a scalar. ``style`` is the original's (``'``, ``"``, ``|``...) to keep where safe;
    ``indent`` is where a literal block's lines go (none in flow context: such strings get quotes)."""
    if isinstance(value, str):
        text = str(value)
        if "\n" in text and not flow and indent and literal_ok(text):
            return literal(text, indent, newline)
        if style not in ("'", '"') and plain_ok(text, flow):
            return text
        if style != '"':
            quoted = single_quoted(text)
            if quoted is not None:
                return quoted
        return double_quoted(text)
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int) and type(value).__name__ not in ("ScalarBoolean",):
        return str(int(value))
    if isinstance(value, float):
        number = float(value)
        if math.isnan(number):
            return ".nan"
        if math.isinf(number):
            return ".inf" if number > 0 else "-.inf"
        text = repr(number)
        if "e" in text and "." not in text.split("e")[0]:
            mantissa, _, exponent = text.partition("e")
            text = f"{mantissa}.0e{exponent}"
        return text
    if isinstance(value, (bytes, bytearray)):
        return "!!binary " + double_quoted(base64.b64encode(bytes(value)).decode("ascii"))
    raise Unwritable(type(value).__name__)
