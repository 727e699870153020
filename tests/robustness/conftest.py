"""Hypothesis profiles for the robustness suite.

``ci`` (the default) is derandomized so a CI run is reproducible and fast; ``long`` is for on-demand deep
runs: ``KRMFN_HYPOTHESIS_PROFILE=long .venv/bin/pytest tests/robustness``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

from robustness.budget import PROFILE_ENV

settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    # Shrinking a generated package can take minutes; CI reports the failing example as generated.
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "long",
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get(PROFILE_ENV, "ci"))
