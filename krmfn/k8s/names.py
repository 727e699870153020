"""Kubernetes' rules for object names, namespaces and API versions, as pure checks: one module for every
name rule, so that hash-job-names, validate-jobs and the runner never disagree about a name such as
``db.migration``.

Every name the runner sends becomes a segment of a REST path (``.../namespaces/<ns>/jobs/<name>``), so
a name that the API server would refuse must be refused before any request: an HTTP client collapses
``..``, and ``team/../prod`` would address another namespace. The rules are apimachinery's:

- a namespace is a DNS-1123 label (``NameIsDNSLabel``);
- every name of every kind is a valid path segment: not ``.`` or ``..``, no ``/`` or ``%``
  (``path.IsValidPathSegmentName``, what the API server's storage demands of any name);
- built-in kinds add their own rule: most are DNS-1123 subdomains, a Service a DNS-1035 label, a
  Namespace a DNS-1123 label, a Job or CronJob the rule below, while RBAC objects, APIServices,
  CertificateSigningRequests and Events only need the path-segment rule. Kinds krmfn does not know
  (custom resources, aggregated APIs) get the path-segment rule here and their own from their server.

A Job's or a CronJob's name, as the API server checks it (pkg/apis/batch/validation):

- both kinds: ``metadata.name`` is a DNS-1123 subdomain (at most 253 characters; lowercase
  alphanumerics, ``-`` and ``.``; each dot-separated part starts and ends with an alphanumeric);
- a Job: the name also becomes the value of the pod label ``batch.kubernetes.io/job-name``, so at most
  63 characters; an Indexed Job with ``completions`` > 0 names its pods' hostnames ``<name>-<index>``,
  which must be a DNS-1123 label (no dots, at most 63 characters);
- a CronJob: at most 52 characters, because the CronJob controller appends 11 (``-<minutes>``) to name
  each Job it starts.

Each ``*_problem`` check returns None for a valid value, else the reason in Kubernetes' words.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from krmfn.patterns import deferred

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


# Deferred: a function's start imports this module for the Job rule and never checks a Service's name.
_DNS1035 = deferred(r"[a-z]([-a-z0-9]*[a-z0-9])?")


def dns_label_problem(value: str) -> str | None:
    if len(value) > LABEL_MAX:
        return f"must be no more than {LABEL_MAX} characters"
    return None if is_label(value) else LABEL_RULE


def dns_subdomain_problem(value: str) -> str | None:
    if len(value) > SUBDOMAIN_MAX:
        return f"must be no more than {SUBDOMAIN_MAX} characters"
    return None if is_subdomain(value) else SUBDOMAIN_RULE


def dns1035_label_problem(value: str) -> str | None:
    if len(value) > LABEL_MAX:
        return f"must be no more than {LABEL_MAX} characters"
    if not _DNS1035.fullmatch(value):
        return (
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
            "alphabetic character, and end with an alphanumeric character"
        )
    return None


def path_segment_problem(value: str) -> str | None:
    if value in (".", ".."):
        return f"may not be '{value}'"
    for bad in ("/", "%"):
        if bad in value:
            return f"may not contain '{bad}'"
    if not value:
        return "may not be empty"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "must be UTF-8 text (it holds a lone surrogate)"
    return None


# Built-in API groups whose kinds are DNS-1123 subdomains unless _KIND_RULES says otherwise.
_BUILTIN_GROUPS = frozenset({
    "", "apps", "batch", "autoscaling", "policy", "networking.k8s.io", "storage.k8s.io",
    "scheduling.k8s.io", "node.k8s.io", "admissionregistration.k8s.io", "apiextensions.k8s.io",
    "discovery.k8s.io", "coordination.k8s.io", "flowcontrol.apiserver.k8s.io",
})  # fmt: skip
_RBAC = "rbac.authorization.k8s.io"


def _job_problem(kind: str) -> Callable[[str], str | None]:
    def problem(name: str) -> str | None:
        found = name_problems(kind, name)
        return found[0] if found else None

    return problem


_KIND_RULES: dict[tuple[str, str], Callable[[str], str | None]] = {
    ("batch", "Job"): _job_problem("Job"),
    ("batch", "CronJob"): _job_problem("CronJob"),
    ("", "Namespace"): dns_label_problem,
    ("", "Service"): dns1035_label_problem,
    ("", "Event"): path_segment_problem,
    ("events.k8s.io", "Event"): path_segment_problem,
    (_RBAC, "Role"): path_segment_problem,
    (_RBAC, "ClusterRole"): path_segment_problem,
    (_RBAC, "RoleBinding"): path_segment_problem,
    (_RBAC, "ClusterRoleBinding"): path_segment_problem,
    ("apiregistration.k8s.io", "APIService"): path_segment_problem,
    ("certificates.k8s.io", "CertificateSigningRequest"): path_segment_problem,
}


def name_problem(group: str, kind: str, name: str) -> str | None:
    """What is wrong with ``name`` as the ``metadata.name`` of a ``kind`` in ``group``."""
    problem = path_segment_problem(name)
    if problem is not None:
        return problem
    rule = _KIND_RULES.get((group, kind))
    if rule is None and group in _BUILTIN_GROUPS:
        rule = dns_subdomain_problem
    return rule(name) if rule is not None else None


def namespace_problem(namespace: str) -> str | None:
    return dns_label_problem(namespace)


def api_version_problem(api_version: str) -> str | None:
    """``group/version`` (``version`` for the core group): the group a DNS-1123 subdomain, the version a
    DNS-1123 label, since both become segments of the discovery path."""
    group, slash, version = api_version.rpartition("/")
    if slash and dns_subdomain_problem(group) is not None:
        return f"the group {group!r} is not a DNS-1123 subdomain"
    if dns_label_problem(version) is not None:
        return f"the version {version!r} is not a DNS-1123 label (v1, v1beta1)"
    return None


def kind_problem(kind: str) -> str | None:
    """The rule of a CustomResourceDefinition's ``names.kind`` (its lowercase form a DNS-1035 label),
    which every built-in kind meets too. A kind is written into the parent's comma-separated list of
    group-kinds, so it may hold no separator."""
    if dns1035_label_problem(kind.lower()) is not None:
        return f"the kind {kind!r} is not a CamelCase word (Deployment, CronJob)"
    return None
