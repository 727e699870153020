"""validate-jobs against the API server itself: generated Jobs and CronJobs, valid and invalid field by
field, are checked by validate-jobs and created with a server-side dry run (``dryRun=All``) on the test
control plane; the two verdicts must agree on every object, and validate-jobs must name every field the
API server names. Also: hash-job-names and validate-jobs accept exactly the names the API server does.

The quick profile runs every single-field case plus KRMFN_API_DIFF_CASES (default 150) random
combinations of two to four of them; raise it for a longer campaign.
"""

from __future__ import annotations

import copy
import json
import os
import random
import string
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from krmfn.functions.hash_job_names.naming import hashed_name, name_problems_of, spec_hash
from krmfn.functions.validate_jobs import RULES
from krmfn.functions.validate_jobs.rules import check
from krmfn.k8s.names import is_subdomain
from krmfn.net.errors import NetError
from krmfn.runner.cluster.kube import HttpApi, load_config

Doc = dict[str, Any]
Mutation = tuple[str, Callable[[Doc], None]]
COMBINATIONS = int(os.environ.get("KRMFN_API_DIFF_CASES", "150"))
# The rules whose errors mean "the API server refuses this": the others are advice.
API_RULES = {rule for rule, spec in RULES.items() if spec.severity == "error"}


def base_job(name: str = "diff") -> Doc:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "backoffLimit": 1,
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "app:1"}]}
            },
        },
    }


def base_cronjob(name: str = "diff") -> Doc:
    job = base_job()["spec"]
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name},
        "spec": {"schedule": "*/5 * * * *", "concurrencyPolicy": "Forbid", "jobTemplate": {"spec": job}},
    }


def job_spec(obj: Doc) -> Doc:
    spec: Doc = obj["spec"] if obj["kind"] == "Job" else obj["spec"]["jobTemplate"]["spec"]
    return spec


def setter(**fields: Any) -> Callable[[Doc], None]:
    def apply(obj: Doc) -> None:
        job_spec(obj).update(copy.deepcopy(fields))

    return apply


def pod(**fields: Any) -> Callable[[Doc], None]:
    def apply(obj: Doc) -> None:
        job_spec(obj)["template"]["spec"].update(copy.deepcopy(fields))

    return apply


def both(*changes: Callable[[Doc], None]) -> Callable[[Doc], None]:
    def apply(obj: Doc) -> None:
        for change in changes:
            change(obj)

    return apply


def labels(**values: str) -> Callable[[Doc], None]:
    def apply(obj: Doc) -> None:
        job_spec(obj)["template"].setdefault("metadata", {})["labels"] = dict(values)

    return apply


def cron(**fields: Any) -> Callable[[Doc], None]:
    def apply(obj: Doc) -> None:
        if obj["kind"] == "CronJob":
            obj["spec"].update(copy.deepcopy(fields))

    return apply


INDEXED: Doc = {"completionMode": "Indexed", "completions": 3, "parallelism": 3}
RULE_OF = {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}


def job_mutations() -> Iterator[Mutation]:
    """Field-by-field changes of a JobSpec: boundaries, wrong types, wrong enum cases, missing companions."""
    for name in (
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
    ):
        for value in (-1, 0, 2, "2"):
            yield f"{name}={value!r}", setter(**{name: value})
    for mode in ("Indexed", "NonIndexed", "indexed", ""):
        yield f"completionMode={mode!r}", setter(completionMode=mode)
    yield "indexed", setter(**INDEXED)
    yield "indexed parallelism 100001", setter(**{**INDEXED, "parallelism": 100_001})
    yield "per-index limits", setter(**INDEXED, backoffLimitPerIndex=1, maxFailedIndexes=2)
    yield "maxFailedIndexes over completions", setter(**INDEXED, backoffLimitPerIndex=1, maxFailedIndexes=4)
    yield "maxFailedIndexes alone", setter(**INDEXED, maxFailedIndexes=1)
    yield "negative per-index limit", setter(**INDEXED, backoffLimitPerIndex=-1)
    yield "per-index limit without Indexed", setter(backoffLimitPerIndex=1)
    yield (
        "high completions without maxFailedIndexes",
        setter(completionMode="Indexed", completions=100_001, parallelism=10, backoffLimitPerIndex=1),
    )
    policies: list[tuple[str, Doc]] = [
        ("ok", {"rules": [RULE_OF]}),
        (
            "Ignore on conditions",
            {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]},
        ),
        (
            "status given",
            {
                "rules": [
                    {"action": "Count", "onPodConditions": [{"type": "DisruptionTarget", "status": "False"}]}
                ]
            },
        ),
        (
            "status lowercase",
            {
                "rules": [
                    {"action": "Count", "onPodConditions": [{"type": "DisruptionTarget", "status": "true"}]}
                ]
            },
        ),
        ("bad condition type", {"rules": [{"action": "Count", "onPodConditions": [{"type": "-bad-"}]}]}),
        ("action lowercase", {"rules": [{**RULE_OF, "action": "failJob"}]}),
        ("no action", {"rules": [{"onExitCodes": {"operator": "In", "values": [1]}}]}),
        ("FailIndex without per-index", {"rules": [{**RULE_OF, "action": "FailIndex"}]}),
        (
            "operator lowercase",
            {"rules": [{"action": "Count", "onExitCodes": {"operator": "in", "values": [1]}}]},
        ),
        ("In 0", {"rules": [{"action": "Count", "onExitCodes": {"operator": "In", "values": [0, 1]}}]}),
        ("NotIn 0", {"rules": [{"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [0, 1]}}]}),
        ("unordered", {"rules": [{"action": "Count", "onExitCodes": {"operator": "In", "values": [3, 1]}}]}),
        ("duplicate", {"rules": [{"action": "Count", "onExitCodes": {"operator": "In", "values": [1, 1]}}]}),
        ("no values", {"rules": [{"action": "Count", "onExitCodes": {"operator": "In", "values": []}}]}),
        (
            "unknown container",
            {
                "rules": [
                    {
                        "action": "Count",
                        "onExitCodes": {"containerName": "x", "operator": "In", "values": [1]},
                    }
                ]
            },
        ),
        ("both", {"rules": [{**RULE_OF, "onPodConditions": [{"type": "DisruptionTarget"}]}]}),
        ("neither", {"rules": [{"action": "Count"}]}),
        ("21 rules", {"rules": [RULE_OF] * 21}),
    ]
    for what, policy in policies:
        yield f"podFailurePolicy {what}", setter(podFailurePolicy=policy)
    yield (
        "podFailurePolicy with OnFailure",
        both(setter(podFailurePolicy=policies[0][1]), pod(restartPolicy="OnFailure")),
    )
    yield (
        "FailIndex with per-index",
        setter(
            **INDEXED,
            backoffLimitPerIndex=1,
            podFailurePolicy={"rules": [{**RULE_OF, "action": "FailIndex"}]},
        ),
    )
    successes: list[tuple[str, Doc]] = [
        ("count", {"rules": [{"succeededCount": 2}]}),
        ("indexes", {"rules": [{"succeededIndexes": "0,2"}]}),
        ("range", {"rules": [{"succeededIndexes": "0-1", "succeededCount": 2}]}),
        ("count over indexes", {"rules": [{"succeededIndexes": "0-1", "succeededCount": 3}]}),
        ("count over completions", {"rules": [{"succeededCount": 4}]}),
        ("index too large", {"rules": [{"succeededIndexes": "3"}]}),
        ("unordered indexes", {"rules": [{"succeededIndexes": "2,0"}]}),
        ("bad index", {"rules": [{"succeededIndexes": "a"}]}),
        ("empty rule", {"rules": [{}]}),
        ("no rules", {"rules": []}),
    ]
    for what, policy in successes:
        yield f"successPolicy {what}", setter(**INDEXED, successPolicy=policy)
    yield "successPolicy without Indexed", setter(successPolicy=successes[0][1])
    for replacement in ("Failed", "TerminatingOrFailed", "failed"):
        yield f"podReplacementPolicy={replacement}", setter(podReplacementPolicy=replacement)
        yield (
            f"podReplacementPolicy={replacement} with podFailurePolicy",
            setter(podReplacementPolicy=replacement, podFailurePolicy=policies[0][1]),
        )
    for managed in (
        "kueue.x-k8s.io/multikueue",
        "kueue",
        "example.com/",
        "Example.com/x",
        "e.io/" + "x" * 60,
    ):
        yield f"managedBy={managed!r}", setter(managedBy=managed)
    yield "suspend", setter(suspend=True)
    yield "suspend as a string", setter(suspend="yes")
    for restart in ("Always", "OnFailure", "Never", "", "never"):
        yield f"restartPolicy={restart!r}", pod(restartPolicy=restart)
    yield "no containers", pod(containers=[])
    yield "container without a name", pod(containers=[{"image": "app:1"}])
    yield "container named Main", pod(containers=[{"name": "Main", "image": "app:1"}])
    yield (
        "duplicate containers",
        pod(containers=[{"name": "a", "image": "app:1"}, {"name": "a", "image": "app:1"}]),
    )
    yield "init container named as a container", pod(initContainers=[{"name": "main", "image": "app:1"}])
    yield "selector without manualSelector", setter(selector={"matchLabels": {"app": "x"}})
    yield "manualSelector without selector", setter(manualSelector=True)
    yield (
        "manualSelector matching",
        both(setter(manualSelector=True, selector={"matchLabels": {"app": "x"}}), labels(app="x")),
    )
    yield (
        "manualSelector not matching",
        both(setter(manualSelector=True, selector={"matchLabels": {"app": "x"}}), labels(app="y")),
    )


def cron_mutations() -> Iterator[Mutation]:
    for policy in ("Allow", "Forbid", "Replace", "forbid", ""):
        yield f"concurrencyPolicy={policy!r}", cron(concurrencyPolicy=policy)
    for name in ("startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        for value in (-5, -1, 0, 3):
            yield f"{name}={value}", cron(**{name: value})
    for schedule in ("@daily", "61 * * * *", "TZ=UTC 0 * * * *", "* * * * 7", "@every 5m"):
        yield f"schedule={schedule!r}", cron(schedule=schedule)
    for zone in ("Europe/Paris", "Local", "Nowhere/Town", "", "UTC"):
        yield f"timeZone={zone!r}", cron(timeZone=zone)
    yield "suspend", cron(suspend=True)


def names() -> Iterator[tuple[str, str]]:
    """(kind, name): edge cases and seeded random strings around the rules' boundaries."""
    fixed = ["db.migration", "a" * 52, "a" * 53, "a" * 63, "a" * 64, "-a", "a-", "a..b", "a.b-", "A",
             "a_b", "a.-b", "0", "a." * 20 + "b"]  # fmt: skip
    rnd = random.Random(25)
    alphabet = string.ascii_lowercase[:4] + "0-.-." + "_A"
    generated = ["".join(rnd.choice(alphabet) for _ in range(rnd.choice([1, 3, 10, 52, 53, 63, 64])))
                 for _ in range(40)]  # fmt: skip
    for name in fixed + generated:
        yield "Job", name
        yield "CronJob", name


def same_cause(ours: set[str]) -> set[str]:
    """Fields the API server names for a cause validate-jobs reports once: an invalid Job name is also an
    invalid value of the pod label batch.kubernetes.io/job-name that carries it."""
    return {"spec.template.labels"} if "metadata.name" in ours else set()


def validate_jobs_fields(obj: Doc) -> set[str]:
    """The fields validate-jobs reports as errors the API server would give (empty: accepted)."""
    return {f.field for f in check(obj) if f.rule in API_RULES}


class DryRun:
    """Creates objects with ``dryRun=All``: the API server validates and stores nothing."""

    def __init__(self, kubeconfig: Path, namespace: str) -> None:
        self.api = HttpApi(load_config(str(kubeconfig), None))
        self.namespace = namespace

    def fields(self, obj: Doc) -> set[str] | None:
        """None when the API server accepts ``obj``; else the fields it names (``{"?"}`` when none)."""
        plural = "jobs" if obj["kind"] == "Job" else "cronjobs"
        path = f"/apis/batch/v1/namespaces/{self.namespace}/{plural}"
        # The raw wire: the error's details.causes name the fields, which ApiStatusError leaves out. A
        # dropped connection is retried, as HttpApi retries its own requests.
        target = f"{path}?dryRun=All&fieldManager=krmfn-tests"
        for attempt in range(3):
            try:
                reply = self.api._wire.send(
                    "POST", target, json.dumps(obj).encode(), {"Content-Type": "application/json"}
                )
                break
            except NetError:
                if attempt == 2:
                    raise
        if reply.status < 300:
            return None
        assert reply.status in (400, 422), f"{reply.status}: {bytes(reply.body)!r}"
        causes = (reply.json().get("details") or {}).get("causes") or []
        return {str(c.get("field")) for c in causes if c.get("field")} or {"?"}


@pytest.fixture
def dry_run(kubeconfig: Path, namespace: str) -> Iterator[DryRun]:
    runner = DryRun(kubeconfig, namespace)
    yield runner
    runner.api.close()


def objects() -> Iterator[tuple[str, Doc]]:
    singles = [("Job", what, change) for what, change in job_mutations()]
    singles += [("CronJob", what, change) for what, change in job_mutations()]
    singles += [("CronJob", what, change) for what, change in cron_mutations()]
    for i, (kind, what, mutate) in enumerate(singles):
        obj = base_job(f"diff-{i}") if kind == "Job" else base_cronjob(f"diff-{i}")
        mutate(obj)
        yield f"{kind} {what}", obj
    rnd = random.Random(2025)
    for i in range(COMBINATIONS):
        kind = rnd.choice(["Job", "CronJob"])
        pool = [(what, change) for k, what, change in singles if k == kind]
        chosen = rnd.sample(pool, rnd.randint(2, 4))
        obj = base_job(f"combo-{i}") if kind == "Job" else base_cronjob(f"combo-{i}")
        for _, mutate in chosen:
            mutate(obj)
        yield f"{kind} " + " + ".join(what for what, _ in chosen), obj
    for i, (kind, name) in enumerate(names()):
        obj = base_job(name) if kind == "Job" else base_cronjob(name)
        yield f"{kind} named {name!r} ({i})", obj
        if kind == "Job":
            indexed = base_job(name)
            indexed["spec"].update(INDEXED)
            yield f"Indexed Job named {name!r} ({i})", indexed


def test_validate_jobs_agrees_with_the_api_server(dry_run: DryRun) -> None:
    disagreements, checked, refused = [], 0, 0
    for what, obj in objects():
        ours, theirs = validate_jobs_fields(obj), dry_run.fields(obj)
        checked += 1
        refused += theirs is not None
        if theirs is None and ours:
            disagreements.append(f"{what}: the API server accepts it; validate-jobs reports {sorted(ours)}")
        elif theirs is not None and not ours:
            disagreements.append(f"{what}: the API server refuses {sorted(theirs)}; validate-jobs accepts it")
        elif theirs is not None and theirs - {"?"} - ours - same_cause(ours):
            disagreements.append(
                f"{what}: the API server names {sorted(theirs)}, validate-jobs {sorted(ours)}"
            )
    assert not disagreements, f"{len(disagreements)} of {checked}:\n" + "\n".join(disagreements)
    assert refused > checked // 3  # the generator must reach the refusals, not only valid objects


def test_hash_job_names_accepts_exactly_the_names_the_api_server_accepts(dry_run: DryRun) -> None:
    disagreements = []
    for kind, base in names():
        if kind != "Job":
            continue
        for spec_extra in ({}, INDEXED):
            obj = base_job(base)
            obj["spec"].update(spec_extra)
            name = hashed_name(base, spec_hash(obj["spec"]))
            ours = name_problems_of(base, name, obj["spec"].get("completions") if spec_extra else None)
            obj["metadata"]["name"] = name
            theirs = dry_run.fields(obj)
            # hash-job-names also wants the base itself to be a subdomain, so that cutting a long base to
            # fit the suffix never hides a character the API server would refuse.
            if bool(ours) != (theirs is not None or not is_subdomain(base)):
                disagreements.append(f"{base!r} -> {name!r} {spec_extra or ''}: hash-job-names {ours}, "
                                     f"API server {theirs}")  # fmt: skip
    assert not disagreements, "\n".join(disagreements)
