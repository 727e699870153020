"""Hash-suffixed Job names: ``<base>-<hash8>``, at most 63 characters, a valid DNS-1123 label."""

from __future__ import annotations

import re

from krmfn.jobhash import HASH_LENGTH, MAX_BASE, MAX_NAME, NAME_DERIVED_LABELS, spec_hash, truncate

__all__ = [
    "DNS_LABEL",
    "HASH_LENGTH",
    "MAX_BASE",
    "MAX_CRONJOB_NAME",
    "MAX_NAME",
    "NAME_DERIVED_LABELS",
    "derived_from",
    "hashed_name",
    "spec_hash",
    "truncate",
]

# The Job controller appends "-" and a 10-digit schedule time to a CronJob's name to name each Job.
MAX_CRONJOB_NAME = MAX_NAME - 11
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def hashed_name(base: str, digest: str) -> str:
    return f"{truncate(base)}-{digest}"


def derived_from(name: str, base: str) -> bool:
    """Whether ``name`` is ``base`` or ``base`` with a hash suffix (so ``base`` is still the base)."""
    if name == base:
        return True
    prefix = truncate(base) + "-"
    suffix = name[len(prefix) :]
    return name.startswith(prefix) and len(suffix) == HASH_LENGTH and set(suffix) <= set("0123456789abcdef")
