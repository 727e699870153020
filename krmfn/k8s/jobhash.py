"""The hash in a hashed Job name (``<base>-<hash8>``): how hash-job-names computes it from the spec, and
how validate-jobs and the runner read it back to tell whether a name still says what its Job runs.

One place, because three readers must agree byte for byte: hash-job-names writes the name, validate-jobs
reports a name whose hash no longer matches the spec (something changed the Job after it was named), and
``krmfn apply`` says so when a live Job with that name differs.
"""

from __future__ import annotations

from typing import Any

from krmfn.k8s.jobspec import digest, run_identity
from krmfn.k8s.names import JOB_NAME_MAX, trim_for_suffix
from krmfn.yaml.io import plain

MAX_NAME = JOB_NAME_MAX
HASH_LENGTH = 8
MAX_BASE = MAX_NAME - HASH_LENGTH - 1
# Labels the Job controller derives from the name and the uid; they would make the hash depend on itself.
NAME_DERIVED_LABELS = frozenset(
    {"job-name", "batch.kubernetes.io/job-name", "controller-uid", "batch.kubernetes.io/controller-uid"}
)
HEX_DIGITS = frozenset("0123456789abcdef")


def truncate(base: str) -> str:
    """The base cut to fit the suffix, without a trailing '-' or '.' (a name part cannot end with one)."""
    return trim_for_suffix(base, MAX_BASE)


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


def spec_identity(spec: Any) -> Any:
    """What of a spec names its Job: a plain copy without the fields the API server lets change on a live
    Job (krmfn/k8s/jobspec.py) and without the labels the Job controller derives from the name."""
    canonical = plain(spec) if isinstance(spec, dict) else {"spec": plain(spec)}
    return run_identity(_without_name_labels(canonical))


def spec_hash(spec: Any) -> str:
    """First 8 hex characters of sha256 over the spec as sorted-key JSON of built-in types, without the
    fields the API server lets change on a live Job (krmfn/k8s/jobspec.py): changing only those (a TTL, a
    deadline, ``suspend``) keeps the name, and the runner applies them in place instead of a new run.
    A Job with ``krmfn.dev/hash-from`` triggers hashes those instead (krmfn/k8s/jobtriggers.py)."""
    return digest(spec_identity(spec), HASH_LENGTH)


def name_hash(name: str, base: str) -> str | None:
    """The hash ``name`` carries for ``base``: the 8 hex characters after ``<truncated base>-``, also
    when kustomize added a namePrefix or nameSuffix around it later; None when there is none."""
    prefix = truncate(base) + "-"
    start = name.find(prefix)
    while start >= 0:
        found = name[start + len(prefix) : start + len(prefix) + HASH_LENGTH]
        rest = name[start + len(prefix) + HASH_LENGTH :]
        if len(found) == HASH_LENGTH and set(found) <= HEX_DIGITS and (not rest or rest.startswith("-")):
            return found
        start = name.find(prefix, start + 1)
    return None


def unhashed(name: str, recorded: str) -> str | None:
    """``name`` without the hash hash-job-names gave it, or None when it does not carry one.

    ``recorded`` is the base the hash was computed for (``krmfn.dev/job-base-name``). Whatever was added
    around the hashed name since (a kustomize overlay's ``namePrefix: prod-`` and ``nameSuffix: -eu``
    turn ``migrate-0123abcd`` into ``prod-migrate-0123abcd-eu``) stays: the result is
    ``prod-migrate-eu``, the name the hash is computed for next, so a Job hashed in a base and again in
    an overlay gets the name it would get if it were hashed once, in the overlay or in a pipe.
    """
    if name == recorded:
        return name
    hashed = truncate(recorded) + "-"
    start = name.rfind(hashed)
    while start >= 0:
        digest = name[start + len(hashed) : start + len(hashed) + HASH_LENGTH]
        if len(digest) == HASH_LENGTH and set(digest) <= HEX_DIGITS:
            return name[:start] + recorded + name[start + len(hashed) + HASH_LENGTH :]
        start = name.rfind(hashed, 0, start)
    return None
