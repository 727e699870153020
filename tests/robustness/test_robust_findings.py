"""Findings of the robustness work that are fixed stay fixed (their reproducing inputs: known_findings)."""

from __future__ import annotations

import pytest

from robustness.known_findings import KNOWN, Known

# None left: the last two (ruamel reading a recursive alias as null and keeping custom tags) went with
# the ruamel path; the faithful writer reads as the fast path reads (docs/fidelity.md).
STILL_OPEN: set[str] = set()
FIXED = [k for k in KNOWN if k.title not in STILL_OPEN]


@pytest.mark.parametrize("finding", FIXED, ids=[k.title for k in FIXED])
def test_fixed_finding_is_gone(finding: Known) -> None:
    assert not finding.present(), f"{finding.title} is back: {finding.reproduce}"


def test_every_open_finding_is_still_listed() -> None:
    assert {k.title for k in KNOWN} >= STILL_OPEN
