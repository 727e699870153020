"""Hash-suffixed Job names: ``<base>-<hash8>``, at most 63 characters, a name the API server accepts for
a Job (krmfn/k8s/names.py: a DNS-1123 subdomain, so ``db.migration`` is a valid base, as for the API)."""

from __future__ import annotations

from krmfn.k8s.jobhash import (
    HASH_LENGTH,
    HEX_DIGITS,
    MAX_BASE,
    MAX_NAME,
    NAME_DERIVED_LABELS,
    spec_hash,
    truncate,
    unhashed,
)
from krmfn.k8s.names import CRONJOB_NAME_MAX, is_subdomain, name_problems

__all__ = [
    "HASH_LENGTH",
    "MAX_BASE",
    "MAX_CRONJOB_NAME",
    "MAX_NAME",
    "NAME_DERIVED_LABELS",
    "derived_from",
    "hashed_name",
    "name_problems_of",
    "spec_hash",
    "truncate",
    "unhashed",
]

MAX_CRONJOB_NAME = CRONJOB_NAME_MAX


def name_problems_of(base: str, name: str, indexed_completions: int | None = None) -> list[str]:
    """Why ``base`` cannot name the hashed Job ``name``: the base must be a DNS-1123 subdomain, and the
    hashed name one the API server accepts for this Job (the shared rule in krmfn/k8s/names.py)."""
    if not is_subdomain(base) or not truncate(base):
        return name_problems("Job", base) or ["nothing is left of it once cut to fit the hash suffix"]
    return name_problems("Job", name, indexed_completions)


def hashed_name(base: str, digest: str) -> str:
    return f"{truncate(base)}-{digest}"


def derived_from(name: str, base: str) -> bool:
    """Whether ``name`` is ``base`` or ``base`` with a hash suffix (so ``base`` is still the base)."""
    if name == base:
        return True
    prefix = truncate(base) + "-"
    suffix = name[len(prefix) :]
    return name.startswith(prefix) and len(suffix) == HASH_LENGTH and set(suffix) <= HEX_DIGITS
