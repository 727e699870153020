"""Whether a document's text already has the layout ``kpt fn render`` writes (go-yaml v3's), and, when not,
the document passed through the round-trip emitter configured as kpt writes (krmfn.yaml.rt)."""

from __future__ import annotations

import re

_BLOCK_SCALAR = re.compile(r"[|>][-+0-9]*\s*(#.*)?$")


_WIDE_COMMENT = re.compile(r"[^\s][ \t]{2,}#|\t")


_WIDE_DASH = re.compile(r"^\s*-[ \t]{2,}\S")


def laid_out_as_kpt_writes(text: str) -> bool:
    """Whether a document already has kpt's layout, so the slow round-trip emitter (~25 documents a
    second) can skip it: one space before a line comment, ``- x``, no tab, indentation that grows by 2
    at most outside block scalars, and no flow collection written over several lines (go-yaml writes
    one on a single line). A document this passes but kpt would still change (a head
    comment's column, say) keeps its own layout; the corpus in tests/test_kpt_packages.py holds none."""
    previous, block = 0, -1
    for line in text.splitlines():
        stripped = line.lstrip(" ")
        if not stripped or stripped.startswith("#") or line.startswith("---"):
            continue
        depth = len(line) - len(stripped)
        if block >= 0:
            if depth > block:
                continue
            block = -1
        if _WIDE_COMMENT.search(line) or _WIDE_DASH.match(line) or depth > previous + 2:
            return False
        if ("[" in line or "{" in line) and _flow_left_open(line):
            return False  # go-yaml writes a flow collection on one line
        previous = depth + (2 if stripped.startswith("- ") else 0)
        scalar = _BLOCK_SCALAR.search(line.split(": ", 1)[-1] if ": " in line else stripped)
        if scalar:
            if scalar.group().startswith(">"):
                return False  # go-yaml writes a folded scalar as a quoted string
            block = depth
    return True


def _flow_left_open(line: str) -> bool:
    """Whether ``line`` opens more flow brackets than it closes, outside quoted scalars and comments
    (one pass: the line is a manifest's, so no pattern that could rescan it)."""
    depth, quote, at = 0, "", 0
    while at < len(line):
        char = line[at]
        if quote == "'":
            if char == "'":
                if line[at + 1 : at + 2] == "'":
                    at += 1  # '' is a quote inside single quotes
                else:
                    quote = ""
        elif quote == '"':
            if char == "\\":
                at += 1
            elif char == '"':
                quote = ""
        elif char in "'\"" and (at == 0 or line[at - 1] in " \t[{,:"):  # a quoted scalar starts
            quote = char
        elif char == "#" and (at == 0 or line[at - 1] in " \t"):
            break
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        at += 1
    return depth > 0


def as_kpt_writes(text: str, indent: str) -> str:
    from krmfn.yaml import rt as yamlrt  # the round-trip emitter: only --in-place needs it

    try:
        return yamlrt.dump_document(yamlrt.load(text), indent)
    except Exception:  # ruamel refuses some valid YAML (a tab before a comment): the
        return text  # faithful text, already checked to hold the object, is right if not kpt's layout
