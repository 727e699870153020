"""Image reference matching and rewriting with the semantics of kustomize's ``images`` transformer.

Read from kustomize api/internal/image (IsImageMatched, Split) and api/filters/imagetag (the updater).
Two deliberate differences, both documented in the README:
- ``name`` is matched literally. kustomize pastes it into a regular expression unescaped, so its ``.``
  matches any character (``my.app`` also rewrites ``myxapp``) and an invalid pattern matches nothing.
- ``tagSuffix`` is appended once, and not again to a tag that already ends with it. kustomize runs two
  passes over ``containers`` of pod templates and appends it twice (``nginx:1.2.3-alpine-alpine``);
  appending once per run would also make a re-render append it again.
"""

from __future__ import annotations

import re
from functools import cache

from krmfn.records import FrozenRecord

# The tag and digest grammar of kustomize's matcher: tags may hold {} (Bazel rules_k8s), digests use any
# OCI algorithm (algorithm components joined by + . _ -).
_TAG = r"(:[a-zA-Z0-9_.{}-]*)?"
_DIGEST = r"(@[a-zA-Z0-9]+([.+_-][a-zA-Z0-9]+)*:[a-zA-Z0-9_.{}-]*)?"


class Change(FrozenRecord):
    """What one rule does to a matching reference: kustomize's Image without the name."""

    __slots__ = _fields = ("new_name", "new_tag", "digest", "tag_suffix")

    def __init__(self, new_name: str = "", new_tag: str = "", digest: str = "", tag_suffix: str = "") -> None:
        self.new_name = new_name
        self.new_tag = new_tag
        self.digest = digest
        self.tag_suffix = tag_suffix


@cache
def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(re.escape(name) + _TAG + _DIGEST)


def matches(image: str, name: str) -> bool:
    """Whether ``image`` is ``name``, optionally followed by a tag and/or a digest."""
    return _pattern(name).fullmatch(image) is not None


def split(image: str) -> tuple[str, str, str]:
    """(name, tag, digest); ``:`` before the first ``/`` is a registry port, not a tag."""
    slash = image.find("/")
    offset = slash if slash > 0 else 0
    rest = image[offset:]
    at, colon = rest.find("@"), rest.find(":")
    if at < 0 and colon < 0:
        return image, "", ""
    if at >= 0 and (colon < 0 or at < colon):
        return image[: offset + at], "", image[offset + at + 1 :]
    if at >= 0:
        return image[: offset + colon], image[offset + colon + 1 : offset + at], image[offset + at + 1 :]
    return image[: offset + colon], image[offset + colon + 1 :], ""


def rewrite(image: str, change: Change) -> str:
    """The reference after ``change``; a new tag or digest replaces both the old tag and digest."""
    name, tag, digest = split(image)
    if change.new_name:
        name = change.new_name
    if change.new_tag and change.digest:
        tag, digest = change.new_tag, change.digest
    elif change.new_tag:
        tag, digest = change.new_tag, ""
    elif change.digest:
        tag, digest = "", change.digest
    elif change.tag_suffix:
        if not tag.endswith(change.tag_suffix):
            tag += change.tag_suffix
        digest = ""
    if tag:
        name += ":" + tag
    if digest:
        name += "@" + digest
    return name
