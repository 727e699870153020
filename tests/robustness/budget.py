"""How many examples a property runs: small in CI, many times more under the ``long`` profile."""

from __future__ import annotations

import os

PROFILE_ENV = "KRMFN_HYPOTHESIS_PROFILE"
LONG_FACTOR = 40


def examples(count: int) -> int:
    return count * LONG_FACTOR if os.environ.get(PROFILE_ENV) == "long" else count
