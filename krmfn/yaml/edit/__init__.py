"""The faithful YAML writer: read with libyaml, let functions edit plain objects, write back what changed.

``load`` parses a stream exactly as the fast path does (same objects, same refusals, same messages) and
keeps the text and a map of where every node sits. ``Writer.document`` turns a document's new value
into text: the original document, byte for byte, when nothing changed; otherwise the original with
each change spliced in (see ``krmfn.yaml.edit.splice``). A document the splicer cannot edit faithfully
(it never guesses) is written whole by the fast dumper. Every edited document is read back and
compared with the value it must hold before it is returned; a mismatch also falls back to the fast
dumper, so the writer can lose style but never meaning.
"""

from __future__ import annotations

import bisect
from typing import Any

from krmfn.limits import Limits
from krmfn.records import FrozenRecord
from krmfn.yaml import fast as yamlfast
from krmfn.yaml.edit import splice, tree
from krmfn.yaml.edit.layout import Layout
from krmfn.yaml.edit.scalars import Unwritable, needs_quotes
from krmfn.yaml.edit.tree import Document, Source, parse
from krmfn.yaml.io import (
    aliases_possible,
    check_expanded,
    check_size,
    dump_fast,
    parse_errors,
)

__all__ = ["Document", "Fallback", "Source", "Writer", "load", "needs_quotes"]


def load(text: str, limits: Limits) -> Source:
    """Every document of ``text`` with its node map; refuses what ``yamlio.load_documents`` refuses."""
    check_size(text, limits)
    with parse_errors(text, limits):
        source = parse(text, limits.max_depth)
    if aliases_possible(text):  # depth was bounded as the documents were built: count shared values
        for doc in source.documents:
            check_expanded(doc.value, limits)
    return source


class Fallback(FrozenRecord):
    """A document, or one item of a ResourceList's ``items``, written whole by the fast dumper: its
    comments and styles are lost (never its meaning). Callers report each one as a warning."""

    __slots__ = _fields = ("document", "value", "reason", "item")

    def __init__(self, document: int, value: Any, reason: str, item: bool = False) -> None:
        self.document = document
        """The document's number in the stream."""
        self.value = value
        """What was written: the item's value, or the document's."""
        self.reason = reason
        self.item = item
        """Only this item of the document's ``items`` was written anew; the rest kept its text."""

    @property
    def message(self) -> str:
        return f"written anew, its comments and styles lost: {self.reason}"


class Writer:
    """Writes the documents of one ``Source`` back with their new values."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.fallen: list[Fallback] = []
        """What was written whole by the fast dumper, and why."""

    @property
    def fallbacks(self) -> int:
        return len(self.fallen)

    def document(self, index: int, value: Any) -> str:
        """Document ``index``'s text (its ``---`` line and comments included) holding ``value``.

        In a ResourceList an item the splicer cannot place, or whose edit does not read back, is
        written anew on its own (in block style at its place) and the other items keep their text;
        only a failure outside the items costs the whole document."""
        doc = self.source.documents[index]
        text = self.source.text
        if doc.root < 0:
            if value is None:
                return text[doc.region[0] : doc.region[1]]
            return self._fallback(index, value, "an empty document that now holds a value")
        anew: dict[int, str] = {}  # items to write anew -> why
        for _ in range(2):  # a second pass writes anew the items whose edit did not read back
            splicer = splice.Splicer(text, self.source.nodes, doc.region)
            splicer.layout.root = doc.root
            items = _items_sequence(splicer, doc)
            splicer.unit_seq = items[1] if items else -1
            splicer.anew = dict(anew)
            try:
                splicer.node(doc.root, value, splice.ROOT)
                if not splicer.edits:
                    return text[doc.region[0] : doc.region[1]]
                out = splicer.apply()
                if not splicer.complex:
                    return out  # only scalars replaced in place: nothing to read back
                if not items:
                    return out if _reads_as(out, value) else self._fallback(index, value, _UNREAD)
                failed = _failed_units(splicer, items, value)
            except (splice.Unplaceable, Unwritable) as err:
                return self._fallback(index, value, str(err))
            if failed is None or any(unit in splicer.anew for unit in failed):
                return self._fallback(index, value, _UNREAD)
            if not failed:
                for unit, reason in splicer.anew.items():
                    self.fallen.append(Fallback(index, splicer.unit_values[unit], reason, item=True))
                return out
            anew = {**splicer.anew, **failed}
        return self._fallback(index, value, _UNREAD)

    def _fallback(self, index: int, value: Any, reason: str) -> str:
        doc = self.source.documents[index]
        self.fallen.append(Fallback(index, value, reason))
        text = self.source.text
        start = self.source.nodes.start[doc.root] if doc.root >= 0 else doc.region[1]
        head = text[doc.region[0] : start]
        head = head[: head.rfind("\n") + 1] if "\n" in head else ""
        return head + dump_fast(value)


_UNREAD = "the edited text would not read back as the new value"


def _items_sequence(splicer: splice.Splicer, doc: Document) -> tuple[int, int] | None:
    """(key, sequence) of a root mapping's block ``items``, checked item by item; None when the
    document has anchors (an item may then depend on text outside it) or no such sequence."""
    nodes = splicer.n
    root = doc.root
    if nodes.kind[root] != tree.BLOCK_MAP:
        return None
    for key, value in splicer.layout.entries(root):
        if nodes.value[key] == "items" and nodes.kind[key] in tree.SCALARS:
            if nodes.kind[value] == tree.BLOCK_SEQ and _self_contained(splicer, root, value):
                return key, value
            return None
    return None


def _self_contained(splicer: splice.Splicer, root: int, sequence: int) -> bool:
    """Whether every alias in the document refers to an anchor in its own item of ``sequence``, or
    both lie outside it, so each item reads the same on its own as in the document."""
    nodes = splicer.n
    items = list(splicer.layout.items(sequence))

    def item_of(number: int) -> int:
        at = bisect.bisect_right(items, number) - 1
        return items[at] if at >= 0 and number < nodes.after[items[at]] else -1

    alias = nodes.kind.find(tree.ALIAS, root, nodes.after[root])
    while alias >= 0:
        if item_of(alias) != item_of(nodes.value[alias]):
            return False
        alias = nodes.kind.find(tree.ALIAS, alias + 1, nodes.after[root])
    return True


def _failed_units(splicer: splice.Splicer, items: tuple[int, int], value: Any) -> dict[int, str] | None:
    """Read back each edited item on its own, then the rest of the document without its items: a
    ResourceList costs a parse of what changed instead of a parse of all of it. The items that do not
    read back (-> why), or None when the document as a whole does not."""
    key, sequence = items
    nodes = splicer.n
    units: dict[int, list[tuple[int, int, str, int]]] = {}
    for edit in splicer.edits:
        units.setdefault(edit[3], []).append(edit)
    outer = units.pop(-1, [])
    seq_start = splicer.layout.line_start(nodes.start[sequence])
    seq_end = splicer.layout.after_line(nodes.end[sequence])
    if any((a < seq_end and b > seq_start) or seq_start <= a <= seq_end for a, b, _, _ in outer):
        return {} if _reads_as(splicer.apply(), value) else None  # items added or removed: read it all
    head = splicer.apply(outer, (splicer.region[0], splicer.layout.after_colon(key)))
    tail = splicer.apply(outer, (nodes.end[sequence], splicer.region[1]))
    if -1 in splicer.complex and (
        not isinstance(value, dict) or not _reads_as(head + " []" + tail, {**value, "items": []})
    ):
        return None
    failed: dict[int, str] = {}
    for item, edits in units.items():
        if item not in splicer.complex:
            continue
        try:
            dash = splicer.layout.dash(item)
        except splice.Unplaceable:  # the item cannot be cut out to be read alone: read it all
            return {} if _reads_as(splicer.apply(), value) else None
        line = splicer.layout.line_start(dash)
        snippet = splicer.apply(edits, (line, splicer.layout.after_line(nodes.end[item])))
        at = dash - line
        if not _reads_as(snippet[:at] + " " + snippet[at + 1 :], splicer.unit_values[item]):
            failed[item] = _UNREAD
    return failed


def _reads_as(text: str, value: Any) -> bool:
    try:
        docs = list(yamlfast.load_all(text))
    except Exception:  # any failure to read back means "write it another way"
        return False
    return len(docs) == 1 and splice.same(docs[0], value)


def dump_new(value: Any, wide: bool = False) -> str:
    """A document written from scratch in the style the splicer writes new nodes (``wide``: sequences
    indented under their key, kpt's ``seqindent: wide``)."""
    layout = Layout("", tree.Nodes(), (0, 0), indents=(2, 2 if wide else 0))
    try:
        if isinstance(value, (dict, list)) and value:
            text = layout.block(value, 0) + "\n"
        else:
            text = splice.flow(value) + "\n"
    except (splice.Unplaceable, Unwritable):
        return dump_fast(value)
    return text if _reads_as(text, value) else dump_fast(value)


def join(texts: list[str]) -> str:
    """Documents (each maybe starting with its own ``---``) as one stream."""
    out: list[str] = []
    for text in texts:
        if out:
            if not out[-1].endswith("\n"):
                out.append("\n")
            if not _starts_with_marker(text):
                out.append("---\n")
        out.append(text)
    return "".join(out)


def _starts_with_marker(text: str) -> bool:
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        return line.startswith("---") and (len(line) == 3 or line[3] in " \t\r")
    return False
