"""A generated corpus of YAML streams in every style a kpt package may hold, and random edits to them.

``stream(rnd)`` writes 1-3 documents with comments everywhere (head, trailing, between items, after a
document), anchors and aliases (and the odd merge key), block mappings and sequences (compact and wide),
flow collections, every scalar style (plain, single, double, literal and folded blocks with each
chomping), very long lines, CRLF line breaks and a byte-order mark. ``mutate(rnd, doc)`` makes the
edits functions make: change a scalar (often to a string only quotes keep a string), add or remove a
key, insert or remove a list item, replace a scalar by a collection.
"""

from __future__ import annotations

import random
from typing import Any

WORDS = ["app", "nginx", "ghcr.io/acme/app:1.2.3", "a b", "x:y", "50%", "café", "--flag", "http://h:1/p"]
TRICKY = [
    "yes",
    "no",
    "on",
    "off",
    "y",
    "n",
    "~",
    "null",
    "true",
    "0755",
    "1:20",
    "1e3",
    ".inf",
    "0x1F",
    "2024-01-01",
    "",
    " lead",
    "trail ",
    "a: b",
    "a #b",
    "#c",
    "- x",
    "[x]",
    "{x}",
    "*x",
    "&x",
    "!x",
    "|",
    ">",
    "'q'",
    '"dq"',
    "tab\there",
    "multi\nline\n",
    "multi\nno-end",
    "kept\n\n",
    "\u2028sep",
    "emoji \U0001f600",
    "=",
    "<<",
]
SCALARS: list[Any] = [1, 0, -7, 3.5, 1e20, True, False, None, *WORDS, *TRICKY]


class Writer:
    def __init__(self, rnd: random.Random) -> None:
        self.rnd = rnd
        self.anchors: list[str] = []
        self.count = 0
        self.wide = rnd.random() < 0.5

    def comment(self) -> str:
        return f"  # note {self.rnd.randrange(100)}" if self.rnd.random() < 0.25 else ""

    def head(self, pad: str) -> str:
        return f"{pad}# head {self.rnd.randrange(100)}\n" if self.rnd.random() < 0.15 else ""

    def scalar(self, pad: str, flow: bool = False) -> str:
        rnd = self.rnd
        pick = rnd.random()
        word = rnd.choice([*WORDS, "plain", "value", "7", "3.25", "true", "null"])
        if pick < 0.45:
            return word
        if pick < 0.6:
            return "'" + word.replace("'", "''") + "'"
        if pick < 0.72:
            return '"' + word + '\\t"'
        if pick < 0.78:
            return "x" * rnd.randrange(200, 3000)
        if flow:
            return '"' + word + '"'
        chomp = rnd.choice(["", "-", "+"])
        style = rnd.choice("|>")
        lines = [rnd.choice(WORDS) for _ in range(rnd.randrange(1, 4))]
        body = "".join(f"\n{pad}  {line}" for line in lines)
        return f"{style}{chomp}{body}\n" + ("\n" if chomp == "+" else "")

    def value(self, depth: int, pad: str) -> tuple[str, bool]:
        """(text, is a block collection that starts on the next line)."""
        rnd = self.rnd
        pick = rnd.random()
        if self.anchors and pick < 0.05:
            return "*" + rnd.choice(self.anchors), False
        if depth > 2 or pick < 0.5:
            text = self.scalar(pad)
            if not text.startswith(("|", ">")) and rnd.random() < 0.05:
                name = f"a{self.count}"
                self.count += 1
                self.anchors.append(name)
                text = f"&{name} {text}"
            return text, False
        if pick < 0.6:
            return self.flow(depth), False
        if pick < 0.8:
            return self.mapping(depth + 1, pad + "  "), True
        return self.sequence(depth + 1, pad + ("  " if self.wide else "")), True

    def flow(self, depth: int) -> str:
        rnd = self.rnd
        if rnd.random() < 0.5:
            items = [self.scalar("", True) for _ in range(rnd.randrange(0, 4))]
            return "[" + ", ".join(items) + "]"
        keys = rnd.sample(["a", "b", "c", "'q'", "d"], rnd.randrange(0, 4))
        return "{" + ", ".join(f"{k}: {self.scalar('', True)}" for k in keys) + "}"

    def mapping(self, depth: int, pad: str) -> str:
        rnd = self.rnd
        keys = rnd.sample(
            ["name", "image", "spec", "data", "items", "kind", "'quoted'", "list", "x", "y2", "z"],
            rnd.randrange(1, 6),
        )
        out = []
        for key in keys:
            text, block = self.value(depth, pad)
            out.append(self.head(pad))
            if block:
                out.append(f"{pad}{key}:{self.comment()}\n{text}")
            elif text.startswith(("|", ">")):
                out.append(f"{pad}{key}: {text}")
            else:
                out.append(f"{pad}{key}: {text}{self.comment()}\n")
        return "".join(out)

    def sequence(self, depth: int, pad: str) -> str:
        rnd = self.rnd
        out = []
        for _ in range(rnd.randrange(1, 5)):
            out.append(self.head(pad))
            if rnd.random() < 0.4 and depth < 3:
                inner = self.mapping(depth + 1, pad + "  ")
                out.append(
                    f"{pad}- {inner[len(pad) + 2 :]}"
                    if not inner.startswith((" " * (len(pad) + 2)) + "#")
                    else f"{pad}-\n{inner}"
                )
            else:
                text, _block = self.value(3, pad + "  ")
                if text.startswith(("|", ">")):
                    out.append(f"{pad}- {text}")
                else:
                    out.append(f"{pad}- {text}{self.comment()}\n")
        return "".join(out)


def stream(rnd: random.Random) -> str:
    docs = []
    for number in range(rnd.randrange(1, 4)):
        writer = Writer(rnd)
        body = writer.mapping(0, "")
        if rnd.random() < 0.05:
            body = "base: &base {p: 1, q: two}\nmerged:\n  <<: *base\n  q: three\n" + body
        marker = "---\n" if number or rnd.random() < 0.3 else ""
        docs.append(
            ("# doc comment\n" if rnd.random() < 0.3 else "")
            + marker
            + body
            + ("# foot\n" if rnd.random() < 0.2 else "")
        )
    text = "".join(docs)
    if rnd.random() < 0.15:
        text = text.replace("\n", "\r\n")
    if rnd.random() < 0.1:
        text = "\ufeff" + text
    return text


def kpt_list(rnd: random.Random) -> str:
    """A ResourceList as ``kpt fn render`` sends it: each item a document of the corpus, its head
    comment after the item's dash (``- # the app``, the object on the next line), sometimes with more
    comment lines or a blank line between the dash and the object."""
    items = []
    for number in range(rnd.randrange(1, 5)):
        spec = Writer(rnd).mapping(1, "  ")
        body = f"apiVersion: v1\nkind: Item\nmetadata:\n  name: i{number}\nspec:\n{spec}"
        lines = ["  " + line if line else "" for line in body.split("\n")]
        pick = rnd.random()
        if pick < 0.4:
            head = f"- # item {number}\n"
        elif pick < 0.55:
            head = f"- # item {number}\n  # more\n\n"
        elif pick < 0.7:
            head = "-\n"
        else:
            items.append("- " + "\n".join(lines)[2:])
            continue
        items.append(head + "\n".join(lines))
    return "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n" + "".join(items)


def nodes(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(nodes(item, (*path, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(nodes(item, (*path, index)))
    return found


def mutate(rnd: random.Random, doc: Any, count: int = 1) -> None:
    """``count`` random edits of the kind functions make, in place."""
    for _ in range(count):
        paths = [p for p in nodes(doc) if p]
        if not paths:
            return
        path = rnd.choice(paths)
        parent = doc
        for step in path[:-1]:
            parent = parent[step]
        last = path[-1]
        pick = rnd.random()
        if pick < 0.45:
            parent[last] = rnd.choice(SCALARS)
        elif pick < 0.6 and isinstance(parent, dict):
            parent[rnd.choice(["new", "annotations", "yes", "0755", "k w"])] = rnd.choice(
                [rnd.choice(SCALARS), {"a": rnd.choice(SCALARS)}, [rnd.choice(SCALARS), {"b": 1}], {}, []]
            )
        elif pick < 0.72:
            del parent[last]
        elif pick < 0.85 and isinstance(parent, list):
            parent.insert(
                rnd.randrange(len(parent) + 1), rnd.choice([rnd.choice(SCALARS), {"n": "v", "m": [1]}])
            )
        else:
            parent[last] = rnd.choice([{"deep": {"er": rnd.choice(SCALARS)}}, [1, "two"], {}])
