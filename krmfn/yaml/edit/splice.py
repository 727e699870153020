"""Edits to one document's text that turn what was read into what a function left.

The diff walks the new value beside the node map of the original (``krmfn.yaml.edit.tree``): an unchanged
scalar costs one comparison and no edit; a changed scalar replaces exactly its own text (anchor kept,
quote style kept where the new value allows it); an added key or list item is inserted on lines of its
own at its siblings' indentation; a removed one takes its lines with it. Whatever cannot be placed
faithfully (a structural change inside a flow collection, a mapping with merge keys that changed, an
alias whose anchor went away) is re-emitted whole, in the style of its place: flow inside flow, block
at its siblings' indentation in block context.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from krmfn.yaml.edit import scalars
from krmfn.yaml.edit.layout import FLOW, ITEM, ROOT, VALUE, Layout, Unplaceable, flow, flow_key
from krmfn.yaml.edit.matching import align, runs, same
from krmfn.yaml.edit.scalars import Unwritable
from krmfn.yaml.edit.tree import (
    ALIAS,
    BLOCK_MAP,
    BLOCK_SEQ,
    FLOW_MAP,
    FLOW_SEQ,
    FOLDED,
    LITERAL,
    MAPS,
    PLAIN,
    SCALARS,
    SEQS,
    Nodes,
)
from krmfn.yaml.io import dump_fast

_MISSING: Any = object()
_STYLE_OF = {b"'"[0]: "'", b'"'[0]: '"', LITERAL: "|", b">"[0]: "|"}


class Splicer:
    def __init__(self, text: str, nodes: Nodes, region: tuple[int, int]) -> None:
        self.text = text
        self.n = nodes
        self.region = region
        self.edits: list[tuple[int, int, str, int]] = []
        """(start, end, new text, unit): the unit is the item of ``unit_seq`` the edit lies in, or -1."""
        self.unit_seq = -1
        """A block sequence whose items are checked one by one (a ResourceList's ``items``)."""
        self.unit = -1
        self.unit_values: dict[int, Any] = {}
        self.anew: dict[int, str] = {}
        """Items of ``unit_seq`` written anew instead of edited (-> why)."""
        self.complex: set[int] = set()
        """Units (-1: outside any) holding an edit that is not a simple scalar replacement."""
        self.final: dict[int, Any] = {}
        """The value each anchored node holds in the new text."""
        self.lost: set[int] = set()
        """Anchored nodes whose anchor is no longer in the new text."""
        self.layout = Layout(text, nodes, region)
        """Positions in the text and new nodes' text (layout.py); its ``root`` is the document's."""
        self.nl = self.layout.nl

    # --- the diff ----------------------------------------------------------------------------------

    def node(self, i: int, v: Any, where: int, key: int = -1) -> None:
        n = self.n
        kind = n.kind[i]
        if kind == ALIAS:
            self.alias(i, v, where, key)
            return
        if kind in SCALARS:
            old = n.value[i]
            if old is v or (type(old) is type(v) and old == v and old == old):  # noqa: PLR0124  # NaN
                pass
            elif isinstance(v, (dict, list)):
                self.replace(i, v, where, key)
            elif not same(old, v):
                self.replace_scalar(i, v, where, key)
        elif i in n.merged:
            try:
                kept = same(v, self.rebuild(i))
            except Unplaceable:
                kept = False
            if not kept:
                self.replace(i, v, where, key)
        elif kind in MAPS:
            if isinstance(v, dict):
                self.mapping(i, v, where, key)
            else:
                self.replace(i, v, where, key)
        elif isinstance(v, list):
            self.sequence(i, v, where, key)
        else:
            self.replace(i, v, where, key)
        if i in n.anchor:
            self.final[i] = v

    def alias(self, i: int, v: Any, where: int, key: int) -> None:
        target = self.n.value[i]
        if target in self.lost or target not in self.final:
            self.replace(i, v, where, key)
            return
        current = self.final[target]
        if v is current or (not isinstance(v, (dict, list)) and same(v, current)):
            return
        self.replace(i, v, where, key)

    def mapping(self, i: int, v: dict[Any, Any], where: int, key: int) -> None:
        n = self.n
        flow = n.kind[i] == FLOW_MAP
        inner = FLOW if flow else VALUE
        entries = list(self.layout.entries(i))
        found = 0
        removed: list[int] = []
        for number, (k, value) in enumerate(entries):
            if n.kind[k] not in SCALARS:
                raise Unplaceable("a mapping key that is a collection or an alias")
            new = v.get(n.value[k], _MISSING)
            if new is _MISSING:
                removed.append(number)
                continue
            found += 1
            self.node(value, new, inner, k)
        if found == len(v) and not removed:
            return
        if flow and not removed and self.append_flow(i, entries[-1][1] if entries else -1, v, found):
            return
        if flow or found == 0:  # nothing left of the original entries: write it anew
            self.undo_inside(i)
            self.replace(i, v, where, key)
            return
        self.remove_entries(entries, removed)
        if found < len(v):
            self.add_entries(entries, v)

    def remove_entries(self, entries: list[tuple[int, int]], removed: list[int]) -> None:
        n = self.n
        for first, last in runs(removed):
            k = entries[first][0]
            self.lose(k, n.after[entries[last][1]])
            if self.layout.first_on_line(n.start[k]):
                start = self.layout.line_start(n.start[k])
                self.edit(start, self.layout.after_line(n.end[entries[last][1]]), "")
            elif last + 1 < len(entries):
                self.edit(n.start[k], n.start[entries[last + 1][0]], "")
            else:
                raise Unplaceable("removing the last entries after a key that shares its line")

    def add_entries(self, entries: list[tuple[int, int]], v: dict[Any, Any]) -> None:
        n = self.n
        positions = {n.value[k]: value for k, value in entries}
        first_key = entries[0][0]
        col = self.layout.column(n.start[first_key])
        previous = -1
        pending: dict[int, list[str]] = {}
        for name, item in v.items():
            if name in positions:
                previous = positions[name]
                continue
            pending.setdefault(previous, []).append(self.layout.entry(name, item, col))
        pad = " " * col
        for previous, texts in pending.items():
            if previous >= 0:
                self.insert_lines(self.layout.after_line(n.end[previous]), pad, texts)
            elif self.layout.first_on_line(n.start[first_key]):
                self.insert_lines(self.layout.line_start(n.start[first_key]), pad, texts)
            else:
                self.edit(n.start[first_key], n.start[first_key], (self.nl + pad).join(texts) + self.nl + pad)

    def insert_lines(self, pos: int, pad: str, texts: list[str]) -> None:
        body = "".join(pad + t + self.nl for t in texts)
        if pos == len(self.text) and not self.text.endswith("\n"):
            body = self.nl + body[: -len(self.nl)]
        self.edit(pos, pos, body)

    def sequence(self, i: int, v: list[Any], where: int, key: int) -> None:
        n = self.n
        flow = n.kind[i] == FLOW_SEQ
        inner = FLOW if flow else ITEM
        items = list(self.layout.items(i))
        if len(items) == len(v) and all(
            same(n.value[item], new)
            if n.kind[item] in SCALARS
            else n.value[item] is new or n.kind[item] == ALIAS
            for item, new in zip(items, v, strict=True)
        ):
            self.items_of(i, zip(items, v, strict=True), inner)
            return
        if (
            flow
            and len(v) > len(items)
            and all(
                (n.kind[item] not in SCALARS and n.value[item] is new)
                or (n.kind[item] in SCALARS and same(n.value[item], new))
                for item, new in zip(items, v, strict=False)
            )
        ):
            for item, new in zip(items, v, strict=False):
                self.node(item, new, inner)
            if self.append_flow(i, items[-1] if items else -1, v[len(items) :], 0):
                return
        pairs, removed, added = align(self.n, items, v)
        if (flow and (removed or added)) or not v:
            self.undo_inside(i)
            self.replace(i, v, where, key)
            return
        self.items_of(i, pairs, inner)
        dash_col = self.layout.column(n.start[i])
        for first, last in runs(removed):
            dash = self.layout.dash(items[first])
            self.lose(items[first], n.after[items[last]])
            self.edit(self.layout.line_start(dash), self.layout.after_line(n.end[items[last]]), "")
        pad = " " * dash_col
        for before, values in added.items():
            texts = ["- " + self.layout.item_text(value, dash_col + 2) for value in values]
            if before >= 0:
                self.insert_lines(self.layout.after_line(n.end[items[before]]), pad, texts)
            else:
                self.insert_lines(self.layout.line_start(self.layout.dash(items[0])), pad, texts)

    def items_of(self, i: int, pairs: Iterable[tuple[int, Any]], inner: int) -> None:
        if i != self.unit_seq:
            for item, new in pairs:
                self.node(item, new, inner)
            return
        for item, new in pairs:
            self.unit = item
            self.unit_values[item] = new
            if item in self.anew:
                self.item_anew(item, new)
                continue
            try:
                self.node(item, new, inner)
            except (Unplaceable, Unwritable) as err:
                # one item the splice cannot place costs that item's style, not every item's
                self.edits = [e for e in self.edits if e[3] != item]
                self.anew[item] = str(err)
                self.item_anew(item, new)
        self.unit = -1

    def item_anew(self, item: int, v: Any) -> None:
        """Write a block sequence item whole with the fast dumper, indented to its place."""
        n = self.n
        self.lose(item, n.after[item])
        pad = self.nl + " " * self.layout.column(n.start[item])
        self.edit(n.start[item], n.end[item], pad.join(dump_fast(v).rstrip("\n").split("\n")))

    def append_flow(self, i: int, last: int, v: Any, found: int) -> bool:
        """Add new entries (or items) at the end of a flow collection, before its closing bracket."""
        n = self.n
        if isinstance(v, dict):
            names = list(v)
            known = set(names[:found])
            if len(known) != found or any(n.value[k] not in known for k, _ in self.layout.entries(i)):
                return False  # new keys are not all after the old ones
            texts = [flow_key(name) + ": " + flow(v[name]) for name in names[found:]]
        else:
            texts = [flow(item) for item in v]
        pos = n.end[last] if last >= 0 else n.end[i] - 1
        if "\n" in self.text[pos : n.end[i]] or "#" in self.text[n.start[i] : n.end[i]]:
            return False  # a collection written over several lines, or with comments: write it anew
        self.edit(pos, pos, (", " if last >= 0 else "") + ", ".join(texts))
        return True

    # --- replacing --------------------------------------------------------------------------------

    def replace_scalar(self, i: int, v: Any, where: int, key: int) -> None:
        n = self.n
        prefix = "&" + n.anchor[i] + " " if i in n.anchor else ""
        style = _STYLE_OF.get(n.kind[i], "")
        start, end = n.start[i], n.end[i]
        if where == FLOW:
            self.edit(start, end, prefix + scalars.scalar(v, True, style), simple=True)
            return
        indent = self.layout.content_indent(i, where, key)
        text = scalars.scalar(v, False, style, " " * indent, self.nl)
        if start == end:  # an empty scalar: ``key:`` or ``-`` with nothing after it
            self.edit(start, end, " " + prefix + text)
            return
        if text.startswith("|"):
            line_end = self.layout.after_line(end)
            rest = self.text[end:line_end].rstrip("\r\n")
            if n.kind[i] != LITERAL and rest.strip():
                header, _, body = text.partition(self.nl)
                self.edit(start, end + len(rest), prefix + header + rest + self.nl + body)
                return
        self.edit(start, end, prefix + text, simple="\n" not in text and n.kind[i] not in (LITERAL, FOLDED))

    def replace(self, i: int, v: Any, where: int, key: int) -> None:
        """Write node ``i`` anew as ``v``, in the style of its place."""
        n = self.n
        self.lose(i + 1, n.after[i])
        anchor = "&" + n.anchor[i] if i in n.anchor else ""
        start, end = n.start[i], n.end[i]
        if where == FLOW or (n.kind[i] in (FLOW_MAP, FLOW_SEQ) and isinstance(v, (dict, list))):
            self.edit(start, end, (anchor + " " if anchor else "") + flow(v))
            return
        if not isinstance(v, (dict, list)) or not v:
            if n.kind[i] in (BLOCK_MAP, BLOCK_SEQ) and where == VALUE and key >= 0:
                start = self.layout.after_colon(key)
                text = " " + (anchor + " " if anchor else "") + self.layout.value_scalar(v, key)
                self.edit(start, end, text)
                return
            self.replace_scalar_node(i, v, where, key, anchor)
            return
        mapping_indent, offset = self.layout.indents()
        if where == VALUE and key >= 0:
            col = self.layout.column(n.start[key]) + (mapping_indent if isinstance(v, dict) else offset)
            start = self.layout.after_colon(key)
            self.edit(
                start, end, (" " + anchor if anchor else "") + self.nl + " " * col + self.layout.block(v, col)
            )
            return
        if where == ITEM:
            col = self.layout.column(start)
            if anchor:
                self.edit(start, end, anchor + self.nl + " " * col + self.layout.block(v, col))
            else:
                self.edit(start, end, self.layout.block(v, col))
            return
        if n.kind[i] in SCALARS and start == end:
            raise Unplaceable("an empty root")
        col = self.layout.column(start)
        self.edit(start, end, (anchor + self.nl + " " * col if anchor else "") + self.layout.block(v, col))

    def replace_scalar_node(self, i: int, v: Any, where: int, key: int, anchor: str) -> None:
        n = self.n
        start, end = n.start[i], n.end[i]
        indent = (
            self.layout.content_indent(i, where, key)
            if n.kind[i] in SCALARS
            else self.layout.column(start) + 2
        )
        text = (
            scalars.scalar(v, False, "", " " * indent, self.nl)
            if not isinstance(v, (dict, list))
            else flow(v)
        )
        prefix = anchor + " " if anchor else ""
        if start == end:
            self.edit(start, end, " " + prefix + text)
        elif text.startswith("|") and self.text[end : self.layout.after_line(end)].strip():
            rest = self.text[end : self.layout.after_line(end)].rstrip("\r\n")
            header, _, body = text.partition(self.nl)
            self.edit(start, end + len(rest), prefix + header + rest + self.nl + body)
        else:
            self.edit(start, end, prefix + text)

    def rebuild(self, i: int) -> Any:
        """The value the original text of node ``i`` reads as, once aliases read their anchors' new values."""
        n = self.n
        kind = n.kind[i]
        if kind in SCALARS:
            return n.value[i]
        if kind == ALIAS:
            target = n.value[i]
            return self.final[target] if target in self.final else self.rebuild(target)
        if kind in SEQS:
            return [self.rebuild(x) for x in self.layout.items(i)]
        out: dict[Any, Any] = {}
        merges: list[Any] = []
        for k, value in self.layout.entries(i):
            if n.kind[k] == PLAIN and n.value[k] == "<<" and k not in n.tagged:
                merges.append(self.rebuild(value))
            else:
                out[n.value[k]] = self.rebuild(value)
        merged: dict[Any, Any] = {}
        for source in merges:
            for one in source if isinstance(source, list) else [source]:
                if not isinstance(one, dict):
                    raise Unplaceable("a merge key whose anchor no longer holds a mapping")
                for name, item in one.items():
                    merged.setdefault(name, item)
        merged.update(out)
        return merged

    # --- bookkeeping -------------------------------------------------------------------------------

    def lose(self, first: int, stop: int) -> None:
        """The anchors of nodes ``first..stop`` leave the text."""
        for number in self.n.anchor:
            if first <= number < stop:
                self.lost.add(number)

    def undo_inside(self, i: int) -> None:
        start, end = self.n.start[i], self.n.end[i]
        self.edits = [e for e in self.edits if not (start <= e[0] and e[1] <= end)]

    def edit(self, start: int, end: int, text: str, simple: bool = False) -> None:
        """Replace ``start..end`` with ``text``. ``simple``: a scalar's text replaced by a one-line
        scalar, which ``scalars.scalar`` guarantees reads back as its value; other edits are checked
        by reading the result back (see ``krmfn.yaml.edit.Writer``)."""
        if not simple:
            self.complex.add(self.unit)
        if "\n" in text and end > start:
            rest = self.text[end : self.layout.after_line(end)].rstrip("\r\n")
            if rest.strip():  # a comment after a node that now ends on another line: it goes with it
                end += len(rest)
        self.edits.append((start, end, text, self.unit))

    # --- output ------------------------------------------------------------------------------------

    def apply(
        self, edits: list[tuple[int, int, str, int]] | None = None, span: tuple[int, int] | None = None
    ) -> str:
        """The text of ``span`` (the document by default) with ``edits`` (all by default) made."""
        start, end = span or self.region
        out: list[str] = []
        pos = start
        for a, b, text, _ in sorted(self.edits if edits is None else edits, key=lambda e: (e[0], e[1])):
            if b < start or a > end:
                continue  # outside the span
            if a < pos or b > end:
                raise Unplaceable("overlapping edits")
            out.append(self.text[pos:a])
            out.append(text)
            pos = b
        out.append(self.text[pos:end])
        return "".join(out)


__all__ = ["ROOT", "Splicer", "Unplaceable", "Unwritable", "flow", "same"]
