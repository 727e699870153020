"""Hash-suffixed Job names: ``<base>-<hash8>``, at most 63 characters, a name the API server accepts for
a Job (krmfn/k8snames.py: a DNS-1123 subdomain, so ``db.migration`` is a valid base, as for the API)."""

from __future__ import annotations

from typing import Any

from krmfn.jobspec import digest, run_identity
from krmfn.k8snames import CRONJOB_NAME_MAX, JOB_NAME_MAX, is_subdomain, name_problems, trim_for_suffix
from krmfn.yamlio import plain

MAX_NAME = JOB_NAME_MAX
HASH_LENGTH = 8
MAX_BASE = MAX_NAME - HASH_LENGTH - 1
MAX_CRONJOB_NAME = CRONJOB_NAME_MAX
# Labels the Job controller derives from the name and the uid; they would make the hash depend on itself.
NAME_DERIVED_LABELS = frozenset(
    {"job-name", "batch.kubernetes.io/job-name", "controller-uid", "batch.kubernetes.io/controller-uid"}
)


def truncate(base: str) -> str:
    """The base cut to fit the suffix, without a trailing '-' or '.' (a name part cannot end with one)."""
    return trim_for_suffix(base, MAX_BASE)


def name_problems_of(base: str, name: str, indexed_completions: int | None = None) -> list[str]:
    """Why ``base`` cannot name the hashed Job ``name``: the base must be a DNS-1123 subdomain, and the
    hashed name one the API server accepts for this Job (the shared rule in krmfn/k8snames.py)."""
    if not is_subdomain(base) or not truncate(base):
        return name_problems("Job", base) or ["nothing is left of it once cut to fit the hash suffix"]
    return name_problems("Job", name, indexed_completions)


def _drop_keys(parent: Any, key: str, keys: frozenset[str]) -> None:
    """Remove ``keys`` from ``parent[key]``, and ``parent[key]`` itself when that leaves it empty."""
    mapping = parent.get(key) if isinstance(parent, dict) else None
    if not isinstance(mapping, dict) or not keys & mapping.keys():
        return
    for name in keys & mapping.keys():
        del mapping[name]
    if not mapping:
        del parent[key]


def _without_name_labels(spec: dict[str, Any]) -> dict[str, Any]:
    template = spec.get("template")
    if isinstance(template, dict):
        _drop_keys(template.get("metadata"), "labels", NAME_DERIVED_LABELS)
        if template.get("metadata") == {}:
            del template["metadata"]
    _drop_keys(spec.get("selector"), "matchLabels", NAME_DERIVED_LABELS)
    return spec


def spec_hash(spec: Any) -> str:
    """First 8 hex characters of sha256 over the spec as sorted-key JSON of built-in types, without the
    fields the API server lets change on a live Job (krmfn/jobspec.py): changing only those (a TTL, a
    deadline, ``suspend``) keeps the name, and the runner applies them in place instead of a new run."""
    canonical = plain(spec) if isinstance(spec, dict) else {"spec": plain(spec)}
    return digest(run_identity(_without_name_labels(canonical)), HASH_LENGTH)


def hashed_name(base: str, digest: str) -> str:
    return f"{truncate(base)}-{digest}"


def derived_from(name: str, base: str) -> bool:
    """Whether ``name`` is ``base`` or ``base`` with a hash suffix (so ``base`` is still the base)."""
    if name == base:
        return True
    prefix = truncate(base) + "-"
    suffix = name[len(prefix) :]
    return name.startswith(prefix) and len(suffix) == HASH_LENGTH and set(suffix) <= set("0123456789abcdef")
