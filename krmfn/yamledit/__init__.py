"""The faithful YAML writer: read with libyaml, let functions edit plain objects, write back what changed.

``load`` parses a stream exactly as the fast path does (same objects, same refusals, same messages) and
keeps the text and a map of where every node sits. ``Writer.document`` turns a document's new value
into text: the original document, byte for byte, when nothing changed; otherwise the original with
each change spliced in (see ``krmfn.yamledit.splice``). A document the splicer cannot edit faithfully
(it never guesses) is written whole by the fast dumper. Every edited document is read back and
compared with the value it must hold before it is returned; a mismatch also falls back to the fast
dumper, so the writer can lose style but never meaning.
"""

from __future__ import annotations

from typing import Any

from krmfn import yamlfast
from krmfn.errors import DuplicateKeyError, LimitExceededError, YAMLSyntaxError
from krmfn.limits import Limits
from krmfn.yamledit import splice, tree
from krmfn.yamledit.scalars import Unwritable, needs_quotes
from krmfn.yamledit.tree import Document, Source, parse
from krmfn.yamlio import (
    _aliases_possible,
    _describe_yaml_error,
    _not_utf8,
    check_expanded,
    check_size,
    dump_fast,
)

__all__ = ["Document", "Source", "Writer", "load", "needs_quotes"]


def load(text: str, limits: Limits) -> Source:
    """Every document of ``text`` with its node map; refuses what ``yamlio.load_documents`` refuses."""
    check_size(text, limits)
    try:
        source = parse(text)
    except (DuplicateKeyError, LimitExceededError):
        raise
    except RecursionError:
        raise LimitExceededError(
            f"input nests deeper than {limits.max_depth} levels (KRMFN_MAX_DEPTH)"
        ) from None
    except Exception as err:  # libyaml and the constructor raise many types; all mean "not valid YAML"
        raise YAMLSyntaxError(_not_utf8(text) or _describe_yaml_error(err)) from None
    aliases = _aliases_possible(text)
    for doc in source.documents:
        check_expanded(doc.value, limits, aliases)
    return source


class Writer:
    """Writes the documents of one ``Source`` back with their new values."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.fallbacks = 0
        """Documents written whole by the fast dumper (for tests and benchmarks)."""

    def document(self, index: int, value: Any) -> str:
        """Document ``index``'s text (its ``---`` line and comments included) holding ``value``."""
        doc = self.source.documents[index]
        text = self.source.text
        if doc.root < 0:
            if value is None:
                return text[doc.region[0] : doc.region[1]]
            return self._fallback(doc, value)
        splicer = splice.Splicer(text, self.source.nodes, doc.region)
        splicer.root = doc.root
        try:
            splicer.node(doc.root, value, splice.ROOT)
            if not splicer.edits:
                return text[doc.region[0] : doc.region[1]]
            out = splicer.apply()
        except (splice.Unplaceable, Unwritable):
            return self._fallback(doc, value)
        if not _reads_as(out, value):
            return self._fallback(doc, value)
        return out

    def _fallback(self, doc: Document, value: Any) -> str:
        self.fallbacks += 1
        text = self.source.text
        start = self.source.nodes.start[doc.root] if doc.root >= 0 else doc.region[1]
        head = text[doc.region[0] : start]
        head = head[: head.rfind("\n") + 1] if "\n" in head else ""
        return head + dump_fast(value)


def _reads_as(text: str, value: Any) -> bool:
    try:
        docs = list(yamlfast.load_all(text))
    except Exception:  # any failure to read back means "write it another way"
        return False
    return len(docs) == 1 and splice.same(docs[0], value)


def dump_new(value: Any, wide: bool = False) -> str:
    """A document written from scratch in the style the splicer writes new nodes (``wide``: sequences
    indented under their key, kpt's ``seqindent: wide``)."""
    splicer = splice.Splicer("", tree.Nodes(), (0, 0))
    splicer._indents = (2, 2 if wide else 0)
    try:
        if isinstance(value, (dict, list)) and value:
            text = splicer.block(value, 0) + "\n"
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
