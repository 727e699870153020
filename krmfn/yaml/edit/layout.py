"""Where things are in one document's text, and new nodes written to fit it: line starts, columns, a
sequence item's dash, the document's block indentation, each node's entries and items in the node map,
and the text of a new entry, item or block collection at a column (the splice's geometry, no edits).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from krmfn.yaml.edit import scalars
from krmfn.yaml.edit.tree import BLOCK_MAP, BLOCK_SEQ, LITERAL, Nodes

# where a node sits
ROOT, VALUE, ITEM, FLOW = range(4)


class Unplaceable(Exception):
    """An edit the splicer cannot place; the caller re-emits the whole document instead."""


class Layout:
    def __init__(
        self, text: str, nodes: Nodes, region: tuple[int, int], indents: tuple[int, int] | None = None
    ) -> None:
        self.text = text
        self.n = nodes
        self.region = region
        chunk = text[region[0] : region[1]]
        self.nl = "\r\n" if "\r\n" in chunk else "\n"
        self._indents = indents
        """(mapping indent, sequence offset); None: measured from the text when first asked."""
        self.root = -1
        self.bom = 1 if text.startswith("\ufeff") else 0

    def line_start(self, pos: int) -> int:
        return max(self.text.rfind("\n", 0, pos) + 1, self.bom if pos >= self.bom else 0)

    def column(self, pos: int) -> int:
        return pos - self.line_start(pos)

    def first_on_line(self, pos: int) -> bool:
        return not self.text[self.line_start(pos) : pos].strip(" ")

    def after_line(self, pos: int) -> int:
        """Just past the line break ending the line that holds ``pos`` (or the end of the text)."""
        found = self.text.find("\n", pos)
        return len(self.text) if found < 0 else found + 1

    def indents(self) -> tuple[int, int]:
        """(mapping indent, sequence offset): how this document nests block collections under a key."""
        if self._indents is None:
            n = self.n
            mapping, offset = 0, -1
            for m in range(self.root, len(n.kind) if self.root >= 0 else 0):
                if n.start[m] >= self.region[1] or (mapping and offset >= 0):
                    break
                if n.kind[m] != BLOCK_MAP:
                    continue
                for key, value in self.entries(m):
                    kind = n.kind[value]
                    if kind not in (BLOCK_MAP, BLOCK_SEQ):
                        continue
                    if self.line_start(n.start[value]) == self.line_start(n.start[key]):
                        continue
                    step = self.column(n.start[value]) - self.column(n.start[key])
                    if kind == BLOCK_MAP and not mapping and step > 0:
                        mapping = step
                    elif kind == BLOCK_SEQ and offset < 0 and step >= 0:
                        offset = step
            self._indents = (mapping or 2, max(offset, 0))
        return self._indents

    def entries(self, i: int) -> Iterator[tuple[int, int]]:
        after = self.n.after
        child, end = i + 1, after[i]
        while child < end:
            value = after[child]
            yield child, value
            child = after[value]

    def items(self, i: int) -> Iterator[int]:
        after = self.n.after
        child, end = i + 1, after[i]
        while child < end:
            yield child
            child = after[child]

    def dash(self, item: int) -> int:
        """Where the ``-`` of a block sequence item is. It may be lines above the item: kpt writes an
        object's head comment after the dash (``- # the app``, then ``apiVersion: ...`` on the next
        line), and blank or comment lines may sit between the two."""
        text = self.text
        pos = self.n.start[item] - 1
        while pos >= 0 and text[pos] == " ":
            pos -= 1
        while pos >= 0 and text[pos] == "\n":  # the item starts its line: look at the lines above
            start = self.line_start(pos)
            line = text[start:pos].rstrip("\r")
            stripped = line.lstrip(" ")
            if lone_dash(stripped):
                return start + len(line) - len(stripped)
            if stripped and not stripped.startswith("#"):
                break
            pos = start - 1  # a blank or comment line between the dash and the item
        if pos < 0 or text[pos] != "-" or not self.first_on_line(pos):
            raise Unplaceable("a sequence item whose dash is not first on its line")
        return pos

    def dash_or(self, i: int) -> int:
        try:
            return self.dash(i)
        except Unplaceable:
            return self.n.start[i] - 2

    def after_colon(self, key: int) -> int:
        pos = self.n.end[key]
        while pos < len(self.text) and self.text[pos] == " ":
            pos += 1
        if pos >= len(self.text) or self.text[pos] != ":":
            raise Unplaceable("a key not followed by a colon")
        return pos + 1

    def content_indent(self, i: int, where: int, key: int) -> int:
        """Where the lines of a literal block at node ``i`` go."""
        n = self.n
        if n.kind[i] == LITERAL or n.kind[i] == b">"[0]:
            for line in self.text[n.start[i] : n.end[i]].split("\n")[1:]:
                if line.strip():
                    return len(line) - len(line.lstrip(" "))
        if where == VALUE and key >= 0:
            return self.column(n.start[key]) + self.indents()[0]
        if where == ITEM:
            return (
                self.column(n.start[i])
                if self.first_on_line(n.start[i])
                else self.column(self.dash_or(i)) + 2
            )
        return 2

    def entry(self, name: Any, value: Any, col: int) -> str:
        key = self.key(name)
        if isinstance(value, (dict, list)) and value:
            mapping_indent, offset = self.indents()
            inner = col + (mapping_indent if isinstance(value, dict) else offset)
            return key + ":" + self.nl + " " * inner + self.block(value, inner)
        if isinstance(value, (dict, list)):
            return key + ": " + flow(value)
        return key + ": " + scalars.scalar(value, False, "", " " * (col + self.indents()[0]), self.nl)

    def key(self, name: Any) -> str:
        text = scalars.scalar(name, False)
        if "\n" in text or len(text) > 1000:
            raise Unplaceable("a key that needs an explicit-key entry")
        return text

    def item_text(self, value: Any, col: int) -> str:
        if isinstance(value, (dict, list)) and value:
            return self.block(value, col)
        if isinstance(value, (dict, list)):
            return flow(value)
        return scalars.scalar(value, False, "", " " * col, self.nl)

    def block(self, value: dict[Any, Any] | list[Any], col: int) -> str:
        """A non-empty collection in block style; its first line starts at column ``col`` (unindented
        here), the others are indented to their depth."""
        pad = self.nl + " " * col
        if isinstance(value, dict):
            return pad.join(self.entry(name, item, col) for name, item in value.items())
        return pad.join("- " + self.item_text(item, col + 2) for item in value)

    def value_scalar(self, v: Any, key: int) -> str:
        indent = self.column(self.n.start[key]) + self.indents()[0]
        if isinstance(v, (dict, list)):
            return flow(v)
        return scalars.scalar(v, False, "", " " * indent, self.nl)


def flow(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(flow_key(k) + ": " + flow(v) for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(flow(v) for v in value) + "]"
    return scalars.scalar(value, True)


def flow_key(name: Any) -> str:
    text = scalars.scalar(name, True)
    if len(text) > 1000:
        raise Unplaceable("a key that needs an explicit-key entry")
    return text


def lone_dash(line: str) -> bool:
    """A line (its indentation stripped) holding only a sequence dash, maybe with a comment after it."""
    return line == "-" or (line[:2] in ("- ", "-\t") and line[2:].lstrip(" \t")[:1] in ("", "#"))
