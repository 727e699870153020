"""The semver constraint language (Masterminds/semver v3 as Flux uses it) and image reference helpers."""

from __future__ import annotations

import pytest

from krmfn.functions.set_image import imageref
from krmfn.functions.set_image.semver import SemverError, Version, highest, parse_constraint, parse_version

TAGS = [
    "0.0.3", "0.0.4", "0.2.3", "0.2.9", "0.3.0", "1.0.0", "1.2.0", "1.2.5", "1.3.0-rc.1", "1.3.0",
    "1.10.0", "2.0.0", "v2.1.0", "latest", "main-1a2b3c", "2024-01-01",
]  # fmt: skip


@pytest.mark.parametrize(
    ("constraint", "chosen"),
    [
        (">=1.2.0 <2.0.0", "1.10.0"),
        (">=1.2.0, <1.3.0", "1.2.5"),
        ("^1.2", "1.10.0"),
        ("^0.2.3", "0.2.9"),
        ("^0.0.3", "0.0.3"),
        ("^0", "0.3.0"),
        ("~1.2.3", "1.2.5"),
        ("~1", "1.10.0"),
        ("~> 1.2", "1.2.5"),
        ("1.x", "1.10.0"),
        ("1.2.x", "1.2.5"),
        ("1.2.*", "1.2.5"),
        ("*", "v2.1.0"),
        ("x", "v2.1.0"),
        ("=1.2", "1.2.5"),
        ("1.2.0", "1.2.0"),
        ("!=2.1.0", "2.0.0"),
        ("> 1.x", "v2.1.0"),
        ("<= 1.x", "1.10.0"),
        ("< 1.x", "0.3.0"),
        ("<1", "0.3.0"),
        ("1.2 - 1.3", "1.3.0"),
        ("1.2.0 - 1.2.4", "1.2.0"),
        (">=1.3.0-rc.0 <1.3.0", "1.3.0-rc.1"),
        ("0.0.x || 1.2.x", "1.2.5"),
        (">=3", None),
    ],
)
def test_highest_tag_for_constraint(constraint: str, chosen: str | None) -> None:
    assert highest(parse_constraint(constraint), TAGS) == chosen


def test_prereleases_only_with_a_prerelease_bound() -> None:
    assert highest(parse_constraint(">=1.0.0"), ["1.0.0", "1.1.0-rc.1"]) == "1.0.0"
    assert highest(parse_constraint(">=1.1.0-rc.0"), ["1.0.0", "1.1.0-rc.1"]) == "1.1.0-rc.1"


def test_version_order_follows_semver() -> None:
    ordered = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0"]
    versions = [parse_version(t) for t in ordered]
    assert versions == sorted(versions, key=lambda v: v or Version(0))
    assert parse_version("v1.2") == Version(1, 2, 0)
    assert parse_version("1.2.3+build.7") == Version(1, 2, 3)
    assert parse_version("latest") is None
    assert parse_version("1.2.3.4") is None


@pytest.mark.parametrize("bad", ["", "  ", ">=", "1.x.2", "=>>1", "foo", "1.2 ||", "1.x-rc.1"])
def test_unreadable_constraints(bad: str) -> None:
    with pytest.raises(SemverError):
        parse_constraint(bad)


@pytest.mark.parametrize(
    ("image", "parts"),
    [
        ("nginx", ("nginx", "", "")),
        ("nginx:1.2", ("nginx", "1.2", "")),
        ("nginx@sha256:ab", ("nginx", "", "sha256:ab")),
        ("nginx:1.2@sha256:ab", ("nginx", "1.2", "sha256:ab")),
        ("localhost:5000/a/b", ("localhost:5000/a/b", "", "")),
        ("localhost:5000/a/b:v1", ("localhost:5000/a/b", "v1", "")),
        ("localhost:5000", ("localhost", "5000", "")),
    ],
)
def test_split_like_kustomize(image: str, parts: tuple[str, str, str]) -> None:
    assert imageref.split(image) == parts


def test_matching_like_kustomize() -> None:
    assert imageref.matches("nginx", "nginx")
    assert imageref.matches("nginx:{STABLE}", "nginx")
    assert imageref.matches("nginx:1@sha512:ab", "nginx")
    assert imageref.matches("nginx@multihash+base58:ab", "nginx")
    assert not imageref.matches("docker.io/nginx", "nginx")
    assert not imageref.matches("nginx-extra:1", "nginx")
    assert not imageref.matches("nginxy", "ngin.y")  # literal, unlike kustomize (see README)
