"""Which names the API server accepts for a Job or a CronJob: the one rule that hash-job-names,
validate-jobs and the runner share, so that no two of them disagree about a name such as ``db.migration``.

The rules, as the API server applies them (pkg/apis/batch/validation):

- both kinds: ``metadata.name`` is a DNS-1123 subdomain (at most 253 characters; lowercase
  alphanumerics, ``-`` and ``.``; each dot-separated part starts and ends with an alphanumeric);
- a Job: the name also becomes the value of the pod label ``batch.kubernetes.io/job-name``, so at most
  63 characters; an Indexed Job with ``completions`` > 0 names its pods' hostnames ``<name>-<index>``,
  which must be a DNS-1123 label (no dots, at most 63 characters);
- a CronJob: at most 52 characters, because the CronJob controller appends 11 (``-<minutes>``) to name
  each Job it starts.
"""

from __future__ import annotations

import re
from typing import Any

SUBDOMAIN_MAX = 253
LABEL_MAX = 63
JOB_NAME_MAX = 63
CRONJOB_NAME_MAX = 52
_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_RE = re.compile(rf"^{_LABEL}(\.{_LABEL})*\Z")  # \Z: "$" would accept a final newline
_LABEL_RE = re.compile(rf"^{_LABEL}\Z")

SUBDOMAIN_RULE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
LABEL_RULE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)


def is_subdomain(name: str) -> bool:
    return len(name) <= SUBDOMAIN_MAX and bool(_SUBDOMAIN_RE.match(name))


def is_label(name: str) -> bool:
    return len(name) <= LABEL_MAX and bool(_LABEL_RE.match(name))


def name_findings(kind: str, name: str, indexed_completions: int | None = None) -> list[tuple[bool, str]]:
    """(too long, message) for each thing the API server says about ``name`` as the name of a Job or
    CronJob; empty when it accepts it. ``indexed_completions``: ``spec.completions`` of an Indexed Job."""
    found: list[tuple[bool, str]] = []
    if len(name) > SUBDOMAIN_MAX:
        found.append((True, f"must be no more than {SUBDOMAIN_MAX} characters"))
    if not _SUBDOMAIN_RE.match(name):
        found.append((False, SUBDOMAIN_RULE))
    limit = JOB_NAME_MAX if kind == "Job" else CRONJOB_NAME_MAX
    if SUBDOMAIN_MAX >= len(name) > limit:
        why = (
            "the Job name becomes the value of the pod label batch.kubernetes.io/job-name"
            if kind == "Job"
            else "the CronJob controller appends an 11-character suffix to name each Job"
        )
        found.append((True, f"must be no more than {limit} characters ({len(name)}; {why})"))
    if kind == "Job" and indexed_completions is not None and indexed_completions > 0 and not found:
        hostname = f"{name}-{indexed_completions - 1}"
        if not is_label(hostname):
            found.append(
                (
                    False,
                    f"will not be able to create pods with the invalid DNS label {hostname!r} as hostname "
                    f"(an Indexed Job's pods are named <name>-<index>; {LABEL_RULE}, at most {LABEL_MAX})",
                )
            )
    return found


def name_problems(kind: str, name: str, indexed_completions: int | None = None) -> list[str]:
    """What the API server says about ``name`` for a Job or CronJob (empty: accepted), in its wording."""
    return [message for _, message in name_findings(kind, name, indexed_completions)]


def trim_for_suffix(base: str, room: int) -> str:
    """``base`` cut to ``room`` characters so that ``-<suffix>`` can follow: without a trailing ``-`` or
    ``.``, since a subdomain's parts end with an alphanumeric."""
    return base[:room].rstrip("-.")


def indexed_completions(job_spec: Any) -> int | None:
    """``spec.completions`` of an Indexed Job (its pods' hostnames end with the index), else None."""
    if not isinstance(job_spec, dict) or job_spec.get("completionMode") != "Indexed":
        return None
    completions = job_spec.get("completions")
    return completions if isinstance(completions, int) and not isinstance(completions, bool) else None
