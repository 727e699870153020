"""One pass over libyaml's events: the documents as plain objects (exactly as ``krmfn.yaml.fast`` builds
them) plus a flat map of where every node sits in the text, so a writer can later splice edits into
the original text instead of re-emitting it.

The map is a handful of parallel arrays indexed by node number in document order (pre-order), which
costs about 30 bytes a node instead of an object each: ``start``/``end`` are text offsets (a block
collection ends where its last child ends, not where libyaml closes it after trailing comments),
``after`` is the number of the first node past the subtree (so the children of ``n`` are ``n + 1``,
``after[n + 1]``, ... up to ``after[n]``), ``kind`` is a style code and ``value`` is the scalar as read
(its original value, which a function editing the objects in place cannot touch), the built container
for a collection (identity lets a list diff follow moved items), or the target node of an alias.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from typing import Any

from yaml.cyaml import CParser  # type: ignore[attr-defined]
from yaml.events import (
    AliasEvent,
    DocumentEndEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)

from krmfn.records import Record
from krmfn.yaml import fast as yamlfast

# kind codes (one byte each)
PLAIN, SINGLE, DOUBLE, LITERAL, FOLDED = b"p'\"|>"
BLOCK_MAP, FLOW_MAP, BLOCK_SEQ, FLOW_SEQ, ALIAS = b"MmSsA"
SCALARS = frozenset((PLAIN, SINGLE, DOUBLE, LITERAL, FOLDED))
MAPS = frozenset((BLOCK_MAP, FLOW_MAP))
SEQS = frozenset((BLOCK_SEQ, FLOW_SEQ))
_STYLE = {None: PLAIN, "": PLAIN, "'": SINGLE, '"': DOUBLE, "|": LITERAL, ">": FOLDED}


class Nodes(Record):
    """Where every node of a stream sits, as parallel arrays."""

    __slots__ = _fields = ("start", "end", "after", "kind", "value", "anchor", "tagged", "merged")

    def __init__(self) -> None:
        self.start: array[int] = array("q")
        self.end: array[int] = array("q")
        self.after: array[int] = array("q")
        self.kind = bytearray()
        self.value: list[Any] = []
        self.anchor: dict[int, str] = {}
        """Nodes carrying ``&name``."""
        self.tagged: set[int] = set()
        """Nodes carrying an explicit tag (``!!str 3``): their text starts with it."""
        self.merged: set[int] = set()
        """Mappings holding ``<<`` merge keys."""


class Document(Record):
    """One document of a stream: its value, root node and text region."""

    __slots__ = _fields = ("value", "root", "region")

    def __init__(self, value: Any, root: int, region: tuple[int, int]) -> None:
        self.value = value
        self.root = root
        """Node number of the root, -1 for an empty document."""
        self.region = region
        """The document's text, from its ``---`` (or the start of the stream) to the next document's."""


class Source(Record):
    """A stream's text, node map and documents."""

    __slots__ = _fields = ("text", "nodes", "documents")

    def __init__(self, text: str, nodes: Nodes, documents: list[Document]) -> None:
        self.text = text
        self.nodes = nodes
        self.documents = documents


def parse(text: str, max_depth: int = yamlfast.DEFAULT_MAX_DEPTH) -> Source:
    """Every document of ``text``; raises what ``yamlfast`` raises, for the same input (its nesting
    bounded as it is built, ``yamlfast.DepthBound``)."""
    parser = CParser(text)
    try:
        nodes = Nodes()
        documents = list(_documents(parser, nodes, text, max_depth))
    finally:
        parser.dispose()
    for number, doc in enumerate(documents):
        if number == 0:
            doc.region = (0, doc.region[1])
        if number + 1 < len(documents):
            doc.region = (doc.region[0], documents[number + 1].region[0])
        else:
            doc.region = (doc.region[0], len(text))
    return Source(text, nodes, documents)


def _documents(parser: Any, nodes: Nodes, text: str, max_depth: int) -> Iterator[Document]:  # noqa: PLR0915
    # the loop of yamlfast._documents plus the node map; kept as one loop because this is the hot path.
    add = yamlfast.add_value
    starts, ends, afters, kinds, values = nodes.start, nodes.end, nodes.after, nodes.kind, nodes.value
    anchors: dict[str, tuple[Any, int]] = {}
    stack: list[Any] = []  # _Frame or list, as yamlfast's
    numbers: list[int] = []  # node number of each open collection
    lasts: list[int] = []  # its last child so far
    root: list[Any] = []
    doc_start = doc_root = 0
    bom = 1 if text.startswith("\ufeff") else 0  # libyaml's offsets do not count it
    bound = yamlfast.DepthBound(max_depth)
    limit, building = bound.limit, bound.open
    start_add, end_add, after_add, kind_add, value_add = (
        starts.append,
        ends.append,
        afters.append,
        kinds.append,
        values.append,
    )
    resolve, scalar = yamlfast.resolve_plain, yamlfast.scalar_value
    while parser.check_event():
        event = parser.get_event()
        kind = type(event)
        number = len(values)
        if kind is ScalarEvent:
            if lasts:
                lasts[-1] = number
            tag = event.tag
            if tag is None:  # as yamlfast.scalar_value, inlined: most scalars are untagged
                try:
                    value = resolve(event.value) if event.implicit[0] else event.value
                except yamlfast.IntRangeError:
                    raise yamlfast.event_problem(yamlfast.INT_RANGE_PROBLEM, event) from None
            else:
                value = scalar(event)
                if tag != "!":
                    nodes.tagged.add(number)
            start_add(event.start_mark.index + bom)
            after_add(number + 1)
            value_add(value)
            style = event.style
            if style is None:
                kind_add(PLAIN)
                end_add(event.end_mark.index + bom)
            else:
                code = _STYLE[style]
                kind_add(code)
                end = event.end_mark.index + bom
                end_add(_block_end(text, end) if code in (LITERAL, FOLDED) else end)
            if event.anchor is not None:
                anchors[event.anchor] = (value, number)
                nodes.anchor[number] = event.anchor
        elif kind is MappingStartEvent or kind is SequenceStartEvent:
            if lasts:
                lasts[-1] = number
            is_map = kind is MappingStartEvent
            value = {} if is_map else []
            starts.append(event.start_mark.index + bom)
            ends.append(0)
            afters.append(0)
            if is_map:
                kinds.append(FLOW_MAP if event.flow_style else BLOCK_MAP)
            else:
                kinds.append(FLOW_SEQ if event.flow_style else BLOCK_SEQ)
            values.append(value)
            if event.tag is not None and event.tag != "!":
                nodes.tagged.add(number)
            if event.anchor is not None:
                anchors[event.anchor] = (value, number)
                nodes.anchor[number] = event.anchor
                building.add(id(value))
            add(stack, root, value, event)
            stack.append(yamlfast.MappingFrame(value) if isinstance(value, dict) else value)
            if len(stack) > limit:
                raise yamlfast.too_deep(max_depth)
            numbers.append(number)
            lasts.append(-1)
            continue
        elif kind is MappingEndEvent or kind is SequenceEndEvent:
            frame = stack.pop()
            if kind is MappingEndEvent:
                if frame.merges:
                    nodes.merged.add(numbers[-1])
                frame.finish()
            if building:
                building.discard(id(frame.target if kind is MappingEndEvent else frame))
            node = numbers.pop()
            last = lasts.pop()
            afters[node] = number
            if kinds[node] == FLOW_MAP or kinds[node] == FLOW_SEQ or last < 0:
                ends[node] = event.end_mark.index + bom
            else:
                ends[node] = ends[last]
            continue
        elif kind is AliasEvent:
            if lasts:
                lasts[-1] = number
            found = anchors.get(event.anchor)
            if found is None:
                raise yamlfast.event_problem(f"found undefined alias {event.anchor!r}", event)
            value, target = found
            bound.alias(value, len(stack))
            starts.append(event.start_mark.index + bom)
            ends.append(event.end_mark.index + bom)
            afters.append(number + 1)
            kinds.append(ALIAS)
            values.append(target)
        elif kind is DocumentStartEvent:
            anchors.clear()
            root.clear()
            bound.reset()
            doc_start = event.start_mark.index + bom
            doc_root = number
            continue
        elif kind is DocumentEndEvent:
            yield Document(root[0] if root else None, doc_root if root else -1, (doc_start, 0))
            continue
        else:  # StreamStart/StreamEnd
            continue
        add(stack, root, value, event)


def _block_end(text: str, end: int) -> int:
    """libyaml ends a block scalar at the start of the next token's line; end it before the line break
    instead, so the line holding a node's end is always the node's last line."""
    if end > 0 and text[end - 1] == "\n":
        end -= 1
        if end > 0 and text[end - 1] == "\r":
            end -= 1
    return end
