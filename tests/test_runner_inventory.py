"""The ApplySet inventory against an in-memory API server: the parent's record (applyset.py), how
inventory.py reads and writes it, and what the runner applies, prunes and remembers of Jobs through it
(engine.py). tests/cluster/test_apply_inventory.py covers the same against the real control plane."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fake_kube import FakeApi, FakeClock, Harness

from krmfn.k8s.jobhash import spec_hash
from krmfn.runner.cluster.api import ApiStatusError
from krmfn.runner.engine import jobs
from krmfn.runner.engine.engine import Options, Result, Runner
from krmfn.runner.errors import InventoryError, ObjectError, RunTimeout
from krmfn.runner.events import Apply, Event, Prune, StepDone
from krmfn.runner.inventory.applyset import (
    GROUP_KINDS,
    ID_LABEL,
    NAMESPACES,
    PART_OF,
    TOOLING,
    JobRecord,
    Parent,
    applyset_id,
)
from krmfn.runner.inventory.inventory import CONFLICT_RETRIES
from krmfn.runner.plan import Key, build_plan
from krmfn.runner.reserved import JOB_RECORDS, LEGACY_COMPLETED_JOBS, LOCK
from krmfn.sdk.selector import JOB_BASE_NAME

SET_ID = applyset_id("krmfn", "apps")
Doc = dict[str, Any]


@pytest.fixture
def h() -> Iterator[Harness]:
    harness = Harness()
    yield harness
    harness.close()


def widen_nothing(parent: Parent) -> None:
    pass


# --- the record ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "parent",
    [
        pytest.param(Parent("krmfn", "apps", "0.1.0"), id="empty"),
        pytest.param(
            Parent("krmfn", "apps", "0.1.0", group_kinds={"ConfigMap", "Deployment.apps"}), id="kinds"
        ),
        pytest.param(
            Parent("krmfn", "apps", "0.1.0", group_kinds={"ConfigMap"}, namespaces={"other", "more"}),
            id="kinds and other namespaces",
        ),
        pytest.param(
            Parent(
                "krmfn",
                "apps",
                "0.1.0",
                group_kinds={"Job.batch"},
                jobs={
                    "apps/migrate": JobRecord("0f1e2d", "completed"),
                    "other/seed": JobRecord("a1b2c3", "failed"),
                    "apps/warm": JobRecord("9a8b7c", "started"),
                },
            ),
            id="Job records",
        ),
    ],
)
def test_record_round_trips_through_the_parent_secret(parent: Parent) -> None:
    read = Parent.from_live("krmfn", "apps", "0.1.0", parent.render())
    assert read.exists
    assert (read.group_kinds, read.namespaces, read.jobs) == (
        parent.group_kinds,
        parent.namespaces,
        parent.jobs,
    )


def test_record_follows_kep_3659() -> None:
    parent = Parent(
        "krmfn", "apps", "0.1.0", group_kinds={"Job.batch", "ConfigMap"}, namespaces={"apps", "other", ""},
        jobs={"apps/b": JobRecord("2", "failed"), "apps/a": JobRecord("1", "completed")},
    )  # fmt: skip
    assert parent.render()["metadata"] == {
        "name": "krmfn",
        "namespace": "apps",
        "labels": {ID_LABEL: SET_ID},
        "annotations": {
            TOOLING: "krmfn/v0.1.0",
            GROUP_KINDS: "ConfigMap,Job.batch",
            NAMESPACES: "other",  # the parent's own namespace is implied
            JOB_RECORDS: "apps/a=1:completed,apps/b=2:failed",
        },
    }
    # The id is the KEP's: base64url(sha256("<name>.<namespace>.Secret.")), unpadded.
    assert SET_ID == "applyset-BMbuopASQWRzSmPvJ5m1uSMChgkAmpEwIZjur2p0CfQ-v1"


def test_parent_that_does_not_exist_reads_as_empty_and_is_not_written(h: Harness) -> None:
    parent = h.inventory().read()
    assert (parent.exists, parent.group_kinds, parent.jobs) == (False, set(), {})
    assert h.parent() is None
    assert h.parent_writes() == []


@pytest.mark.parametrize(
    ("labels", "annotations", "expected"),
    [
        pytest.param(
            {},
            {},
            f"Secret apps/krmfn exists but is not the ApplySet parent {SET_ID}; choose another name with "
            "--applyset",
            id="a Secret that is not an ApplySet parent",
        ),
        pytest.param(
            {ID_LABEL: applyset_id("krmfn", "other")},
            {},
            f"Secret apps/krmfn exists but is not the ApplySet parent {SET_ID}; choose another name with "
            "--applyset",
            id="the parent of another set",
        ),
        pytest.param(
            {ID_LABEL: SET_ID},
            {TOOLING: "kubectl/v1.31.0"},
            "ApplySet apps/krmfn is managed by kubectl/v1.31.0, not krmfn; refusing to change it",
            id="a parent of another tool",
        ),
    ],
)
def test_secret_that_is_not_krmfns_parent_is_refused_untouched(
    h: Harness, labels: dict[str, str], annotations: dict[str, str], expected: str
) -> None:
    h.api.seed({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "krmfn", "namespace": "apps",
                "labels": labels, "annotations": annotations}, "data": {"k": "dg=="}})  # fmt: skip
    before = h.parent()
    with pytest.raises(InventoryError) as caught:
        h.inventory().acquire(0, widen_nothing)
    assert str(caught.value) == expected
    assert h.parent() == before
    assert h.parent_writes() == []


# --- reading and writing it ---------------------------------------------------------------------------------


def test_an_inventory_in_a_namespace_that_does_not_exist_says_so(h: Harness) -> None:
    def no_namespace(verb: str, key: Key) -> None:
        if verb == "create":
            raise ApiStatusError(404, "NotFound", 'namespaces "apps" not found')

    h.api.before.append(no_namespace)
    with pytest.raises(InventoryError) as caught:
        h.inventory().acquire(0, widen_nothing)
    assert str(caught.value) == (
        "the inventory Secret krmfn lives in namespace apps, which does not exist: create it first, or "
        "pass -n"
    )


def test_taking_the_lock_records_the_union_of_the_listed_and_the_planned_kinds(h: Harness) -> None:
    h.api.seed(Parent("krmfn", "apps", "0.1.0", group_kinds={"Deployment.apps"}, namespaces={"old"}).render())

    def widen(parent: Parent) -> None:
        parent.group_kinds |= {"ConfigMap"}
        parent.namespaces |= {"apps", "other"}

    parent = h.inventory().acquire(0, widen)
    assert (parent.group_kinds, parent.namespaces) == (
        {"ConfigMap", "Deployment.apps"},
        {"apps", "old", "other"},
    )
    notes = h.annotations()
    assert (notes[GROUP_KINDS], notes[NAMESPACES]) == ("ConfigMap,Deployment.apps", "old,other")
    assert LOCK in notes
    assert h.parent_writes() == ["replace"]  # one write: the record and the lock together


def test_writes_keep_what_other_tools_put_on_the_secret(h: Harness) -> None:
    obj = Parent("krmfn", "apps", "0.1.0", group_kinds={"ConfigMap"}, namespaces={"old"}).render()
    obj["metadata"]["labels"]["team"] = "payments"
    obj["metadata"]["annotations"]["example.com/owner"] = "alice"
    obj["data"] = {"note": "aGk="}
    seeded = h.api.seed(obj)
    inventory = h.inventory()
    parent = inventory.acquire(0, widen_nothing)
    parent.group_kinds, parent.namespaces = {"Job.batch"}, set()
    inventory.close(parent)
    live = h.parent()
    assert live is not None
    assert live["data"] == {"note": "aGk="}
    assert live["metadata"]["labels"] == {ID_LABEL: SET_ID, "team": "payments"}
    assert live["metadata"]["uid"] == seeded["metadata"]["uid"]
    # krmfn's own annotations are replaced as a whole: the dropped namespace list and the lock are gone.
    assert live["metadata"]["annotations"] == {
        TOOLING: "krmfn/v0.1.0",
        GROUP_KINDS: "Job.batch",
        "example.com/owner": "alice",
    }


def test_background_writes_store_changes_and_skip_repeats(h: Harness) -> None:
    inventory = h.inventory()
    parent = inventory.acquire(0, widen_nothing)
    inventory.write(parent)  # what the lock's write stored already
    parent.jobs["apps/migrate"] = JobRecord("abc", "started")
    inventory.write(parent)
    inventory.flush()
    assert h.annotations()[JOB_RECORDS] == "apps/migrate=abc:started"
    inventory.write(parent)
    inventory.flush()
    assert h.parent_writes() == ["create", "replace"]
    assert LOCK in h.annotations()


def test_another_tool_touching_the_secret_mid_run_is_merged_again(h: Harness) -> None:
    inventory = h.inventory()
    parent = inventory.acquire(0, widen_nothing)
    h.api.annotate("v1", "Secret", "apps", "krmfn", {"example.com/seen": "yes"})
    parent.group_kinds = {"ConfigMap"}
    inventory.write(parent)
    inventory.flush()
    # The PUT of the version read before gets 409; the lock is still this run's, so it is merged again.
    assert h.parent_writes() == ["create", "replace", "replace"]
    notes = h.annotations()
    assert (notes[GROUP_KINDS], notes["example.com/seen"]) == ("ConfigMap", "yes")
    inventory.check()
    inventory.close(parent)
    assert LOCK not in h.annotations()


def busy_tool(h: Harness) -> list[str]:
    """Another tool annotates the parent just before each of this run's writes; returns its touches."""
    touched: list[str] = []

    def touch(verb: str, key: Key) -> None:
        if verb == "replace":
            touched.append(str(len(touched) + 1))
            h.api.annotate("v1", "Secret", "apps", "krmfn", {"example.com/touched": touched[-1]})

    h.api.before.append(touch)
    return touched


def test_secret_that_keeps_changing_fails_the_write(h: Harness) -> None:
    inventory = h.inventory()
    parent = inventory.acquire(0, widen_nothing)
    busy_tool(h)
    parent.group_kinds = {"ConfigMap"}
    inventory.write(parent)
    with pytest.raises(InventoryError) as caught:
        inventory.flush()
    assert str(caught.value) == "ApplySet apps/krmfn keeps changing under this run"
    assert h.parent_writes() == ["create"] + ["replace"] * CONFLICT_RETRIES


def test_taking_the_lock_of_a_secret_that_keeps_changing_gives_up(h: Harness) -> None:
    h.api.seed(Parent("krmfn", "apps", "0.1.0", group_kinds={"ConfigMap"}).render())
    touched = busy_tool(h)
    with pytest.raises(InventoryError) as caught:
        h.inventory().acquire(0, widen_nothing)
    assert str(caught.value) == "ApplySet apps/krmfn keeps changing under this run"
    assert len(touched) == CONFLICT_RETRIES


def test_parent_deleted_mid_run_fails_the_write_naming_it(h: Harness) -> None:
    inventory = h.inventory()
    parent = inventory.acquire(0, widen_nothing)
    h.api.remove("v1", "Secret", "apps", "krmfn")
    parent.group_kinds = {"ConfigMap"}
    inventory.write(parent)
    with pytest.raises(ObjectError) as caught:
        inventory.flush()
    assert str(caught.value) == 'Secret apps/krmfn: not found: secrets "krmfn" not found'
    assert h.parent() is None


def test_job_records_round_trip_through_the_cluster(h: Harness) -> None:
    inventory = h.inventory()
    parent = inventory.acquire(0, widen_nothing)
    parent.jobs = {
        "apps/migrate": JobRecord("0f1e2d", "completed"),
        "other/seed": JobRecord("a1b2c3", "failed"),
    }
    inventory.close(parent)
    assert h.annotations()[JOB_RECORDS] == "apps/migrate=0f1e2d:completed,other/seed=a1b2c3:failed"
    assert h.inventory().read().jobs == parent.jobs


def test_records_of_krmfn_0_1_are_read_and_replaced_by_the_next_write() -> None:
    live = Parent("krmfn", "apps", "0.1.0").render()
    live["metadata"]["annotations"][LEGACY_COMPLETED_JOBS] = "apps/migrate=0f1e2d,junk"
    live["metadata"]["annotations"][JOB_RECORDS] = "apps/seed=a1:failed,apps/x=no-outcome,=a:completed"
    parent = Parent.from_live("krmfn", "apps", "0.1.0", live)
    assert parent.jobs == {
        "apps/migrate": JobRecord("0f1e2d", "completed", legacy=True),
        "apps/seed": JobRecord("a1", "failed"),
    }
    assert LEGACY_COMPLETED_JOBS not in parent.render()["metadata"]["annotations"]


# --- what a run records, prunes and remembers ---------------------------------------------------------------


def configmap(
    name: str, step: int = 0, namespace: str = "", annotations: dict[str, str] | None = None
) -> Doc:
    meta: Doc = {"name": name, "annotations": {"krmfn.dev/step-index": str(step), **(annotations or {})}}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}}


def secret(name: str, namespace: str = "") -> Doc:
    doc = configmap(name, namespace=namespace)
    doc["kind"] = "Secret"
    return doc


def job(name: str, image: str = "app:1") -> Doc:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "annotations": {"krmfn.dev/step-index": "0"}},
        "spec": {
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "m", "image": image}]}}
        },
    }


def complete_jobs(obj: Doc) -> None:
    """A Job controller that is quick: every Job applied completes at once."""
    if obj["kind"] == "Job":
        obj["status"] = {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}


class Cluster:
    """Runs of ``krmfn apply -n apps`` against one fake cluster."""

    def __init__(self) -> None:
        self.api = FakeApi("apps")
        self.api.controllers.append(complete_jobs)
        self.events: list[Event] = []

    def apply(self, docs: list[Doc], wait: bool | None = None, **options: Any) -> Result:
        self.events = []
        plan = build_plan(docs, namespace="apps", default_timeout=30, wait=wait)
        result = Runner(self.api, Options(namespace="apps", **options), self.events.append).run(plan)
        assert result.error is None, result.error
        return result

    def names(self, kind: str, namespace: str = "apps") -> list[str]:
        api_version = "batch/v1" if kind == "Job" else "v1"
        res = self.api.resource(api_version, kind)
        return [
            o["metadata"]["name"]
            for o in self.api.list(res, namespace, "")
            if o["metadata"]["name"] != "krmfn"
        ]

    def parent(self) -> dict[str, str]:
        parent = self.api.object("v1", "Secret", "apps", "krmfn")
        assert parent is not None
        return dict(parent["metadata"]["annotations"])

    def pruned(self) -> list[tuple[str, str, str]]:
        return [(e.object, e.action, e.detail) for e in self.events if isinstance(e, Prune)]

    def applied(self) -> list[tuple[str, str]]:
        return [(e.object, e.action) for e in self.events if isinstance(e, Apply)]


@pytest.fixture
def cluster() -> Cluster:
    return Cluster()


def test_run_labels_members_and_records_their_kinds_and_namespaces(cluster: Cluster) -> None:
    cluster.apply([configmap("a"), configmap("b", namespace="other"), secret("s")])
    member = cluster.api.object("v1", "ConfigMap", "other", "b")
    assert member is not None
    assert member["metadata"]["labels"] == {PART_OF: SET_ID}
    notes = cluster.parent()
    assert (notes[GROUP_KINDS], notes[NAMESPACES]) == ("ConfigMap,Secret", "other")
    assert LOCK not in notes  # released at the end of the run


def test_prune_deletes_what_is_no_longer_rendered_but_keeps_opted_out_objects(cluster: Cluster) -> None:
    cluster.apply(
        [configmap("stay"), configmap("drop"), configmap("keep", annotations={"krmfn.dev/prune": "disabled"})]
    )
    result = cluster.apply([configmap("stay")])
    assert cluster.pruned() == [
        ("ConfigMap apps/drop", "deleted", ""),
        ("ConfigMap apps/keep", "kept", "krmfn.dev/prune: disabled"),
    ]
    assert result.pruned == ["ConfigMap apps/drop"]
    assert cluster.names("ConfigMap") == ["keep", "stay"]


def test_prune_deletes_later_steps_first(cluster: Cluster) -> None:
    cluster.apply([configmap("first", 0), configmap("third", 2), secret("s"), configmap("kept", 0)])
    cluster.apply([configmap("kept", 0)])
    # Later steps first; within a step, the reverse of the apply order (Secrets after ConfigMaps).
    assert [obj for obj, action, _ in cluster.pruned() if action == "deleted"] == [
        "ConfigMap apps/third",
        "Secret apps/s",
        "ConfigMap apps/first",
    ]


def test_prune_finds_members_of_kinds_and_namespaces_no_longer_rendered(cluster: Cluster) -> None:
    cluster.apply([configmap("a"), secret("s", namespace="other"), configmap("b", namespace="more")])
    assert cluster.parent()[NAMESPACES] == "more,other"
    cluster.apply([configmap("a")])
    assert sorted(obj for obj, _, _ in cluster.pruned()) == ["ConfigMap more/b", "Secret other/s"]
    assert cluster.names("Secret", "other") == []
    # The record narrows to what is rendered now; the parent Secret is not a member of its own set.
    notes = cluster.parent()
    assert notes[GROUP_KINDS] == "ConfigMap"
    assert NAMESPACES not in notes
    assert cluster.api.object("v1", "Secret", "apps", "krmfn") is not None


def test_prune_leaves_objects_of_other_sets_and_unlabelled_ones_alone(cluster: Cluster) -> None:
    cluster.apply([configmap("a"), configmap("kept")])
    theirs = {"name": "theirs", "namespace": "apps", "labels": {PART_OF: applyset_id("other", "apps")}}
    cluster.api.seed({"apiVersion": "v1", "kind": "ConfigMap", "metadata": theirs})
    cluster.api.seed(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "hand-made", "namespace": "apps"}}
    )
    cluster.apply([configmap("b"), configmap("kept")])
    assert cluster.pruned() == [("ConfigMap apps/a", "deleted", "")]
    assert cluster.names("ConfigMap") == ["b", "hand-made", "kept", "theirs"]


# --- whose inventory it is ------------------------------------------------------------------------------


def namespace(name: str) -> Doc:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def test_an_inventory_holding_none_of_this_renders_objects_is_not_adopted(cluster: Cluster) -> None:
    first = [namespace("apps"), configmap("a"), secret("s")]
    cluster.apply(first)
    # Another app under the same inventory name: it shares only the Namespace with the first one.
    plan = build_plan([namespace("apps"), configmap("other")], namespace="apps", default_timeout=30)
    events: list[Event] = []
    result = Runner(cluster.api, Options(namespace="apps"), events.append).run(plan)
    assert isinstance(result.error, InventoryError)
    assert str(result.error) == (
        "the inventory apps/krmfn (--applyset) holds 2 object(s) this render does not have (ConfigMap "
        "apps/a, Secret apps/s) and none of the objects it applies, so it looks like another app's: pruning "
        "would delete them. Give this app its own inventory (--applyset NAME, or app: in set-steps' "
        "config), or, if this render replaces that app, pass --adopt to take the inventory over and prune "
        "them; nothing was applied"
    )
    assert [e for e in events if isinstance(e, Apply | Prune)] == []
    assert cluster.names("ConfigMap") == ["a"]
    assert LOCK not in cluster.parent()  # the refusal releases the lock
    # --no-prune deletes nothing, so it is not refused; --adopt takes the inventory over.
    assert cluster.apply([configmap("other")], prune=False).ok
    cluster.apply([configmap("other")], adopt=True)
    assert sorted(p[0] for p in cluster.pruned() if p[1] == "deleted") == [
        "ConfigMap apps/a",
        "Secret apps/s",
    ]


@pytest.mark.parametrize(
    ("kind", "flag"), [("Namespace", "prune_namespaces"), ("CustomResourceDefinition", "prune_crds")]
)
def test_namespaces_and_crds_are_pruned_only_when_asked_for(cluster: Cluster, kind: str, flag: str) -> None:
    guarded = namespace("old") if kind == "Namespace" else {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": kind, "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "names": {"kind": "Widget", "plural": "widgets"},
                 "scope": "Namespaced", "versions": [{"name": "v1", "served": True, "storage": True}]},
    }  # fmt: skip
    cluster.api.controllers.append(established)
    cluster.apply([guarded, configmap("a")])
    cluster.apply([configmap("a")])
    ref = f"{kind} old" if kind == "Namespace" else f"{kind}.apiextensions.k8s.io widgets.example.com"
    (entry,) = cluster.pruned()
    assert entry[:2] == (ref, "kept")
    assert f"pass --{flag.replace('_', '-')} to prune it" in entry[2]
    cluster.apply([configmap("a")], **{flag: True})
    assert cluster.pruned() == [(ref, "deleted", "")]


def established(obj: Doc) -> None:
    if obj["kind"] == "CustomResourceDefinition":
        obj["status"] = {"conditions": [{"type": "Established", "status": "True"}]}


def with_data(doc: Doc, value: str) -> Doc:
    doc["data"] = {"k": value}
    return doc


def test_unchanged_objects_are_reported_unchanged_and_changed_ones_configured(cluster: Cluster) -> None:
    cluster.apply([configmap("a"), configmap("b")])
    result = cluster.apply([configmap("a"), with_data(configmap("b"), "2"), configmap("c")])
    assert cluster.applied() == [("ConfigMap apps/a", "unchanged"), ("ConfigMap apps/b", "configured"),
                                 ("ConfigMap apps/c", "created")]  # fmt: skip
    assert (result.applied, result.unchanged) == (
        ["ConfigMap apps/b", "ConfigMap apps/c"],
        ["ConfigMap apps/a"],
    )
    dry = cluster.apply([configmap("a"), with_data(configmap("b"), "3")], dry_run=True)
    assert [(e.object, e.action, e.dry_run) for e in cluster.events if isinstance(e, Apply)] == [
        ("ConfigMap apps/a", "unchanged", True), ("ConfigMap apps/b", "configured", True),
    ]  # fmt: skip
    assert [(e.object, e.action, e.dry_run) for e in cluster.events if isinstance(e, Prune)] == [
        ("ConfigMap apps/c", "deleted", True)
    ]
    assert dry.pruned == ["ConfigMap apps/c"]


def test_prune_does_not_delete_an_object_recreated_meanwhile(cluster: Cluster) -> None:
    cluster.apply([configmap("a"), configmap("b")])
    old = cluster.api.object("v1", "ConfigMap", "apps", "b")
    assert old is not None

    def recreate_b(verb: str, key: Key) -> None:
        if verb == "delete" and key.name == "b":
            cluster.api.remove("v1", "ConfigMap", "apps", "b")
            cluster.api.seed({**old, "metadata": {k: v for k, v in old["metadata"].items() if k != "uid"}})

    cluster.api.before.append(recreate_b)
    result = cluster.apply([configmap("a")])
    new = cluster.api.object("v1", "ConfigMap", "apps", "b")
    assert new is not None  # the UID precondition kept the new object
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
    assert result.pruned == []
    assert cluster.pruned() == [
        ("ConfigMap apps/b", "skipped", "already gone, or replaced by a newer object")
    ]
    assert "ConfigMap" in cluster.parent()[GROUP_KINDS].split(",")


def test_members_kept_by_the_prune_opt_out_stay_in_the_recorded_kinds(cluster: Cluster) -> None:
    kept = secret("s")
    kept["metadata"].setdefault("annotations", {})["krmfn.dev/prune"] = "disabled"
    cluster.apply([configmap("a"), kept])
    cluster.apply([configmap("a")])
    assert cluster.names("Secret") == ["s"]
    assert "Secret" in cluster.parent()[GROUP_KINDS].split(",")


def test_no_prune_deletes_nothing(cluster: Cluster) -> None:
    cluster.apply([configmap("a"), configmap("b")])
    result = cluster.apply([configmap("a")], prune=False)
    assert cluster.pruned() == []
    assert result.pruned == []
    assert cluster.names("ConfigMap") == ["a", "b"]


def test_members_kept_by_no_prune_are_pruned_by_a_later_run(cluster: Cluster) -> None:
    cluster.apply([configmap("a"), secret("s")])
    cluster.apply([configmap("a")], prune=False)
    assert "Secret" in cluster.parent()[GROUP_KINDS].split(",")
    cluster.apply([configmap("a")])
    assert cluster.names("Secret") == []


def test_jobs_are_remembered_and_not_run_again_after_ttl_deletion(cluster: Cluster) -> None:
    migrate, a = job("migrate"), configmap("a", 1)
    cluster.apply([a, migrate])
    assert cluster.applied() == [("Job.batch apps/migrate", "created"), ("ConfigMap apps/a", "created")]
    run = jobs.run_hash(migrate)
    assert cluster.parent()[JOB_RECORDS] == f"apps/migrate={run}:completed"

    cluster.api.remove("batch/v1", "Job", "apps", "migrate")  # ttlSecondsAfterFinished
    cluster.apply([a, migrate])
    assert ("Job.batch apps/migrate", "skipped") in cluster.applied()
    assert cluster.names("Job") == []
    assert cluster.parent()[JOB_RECORDS] == f"apps/migrate={run}:completed"

    # A field a live Job may change (its TTL) is the same run: still not run again.
    ttl = job("migrate")
    ttl["spec"]["ttlSecondsAfterFinished"] = 60
    cluster.apply([a, ttl])
    assert ("Job.batch apps/migrate", "skipped") in cluster.applied()

    changed = job("migrate", image="app:2")
    cluster.apply([a, changed])
    assert ("Job.batch apps/migrate", "created") in cluster.applied()
    assert cluster.parent()[JOB_RECORDS] == f"apps/migrate={jobs.run_hash(changed)}:completed"

    cluster.apply([a])
    assert JOB_RECORDS not in cluster.parent()  # a Job no longer rendered is forgotten
    assert cluster.names("Job") == []  # and pruned


def test_the_run_wide_timeout_bounds_the_whole_run_and_names_what_it_was_doing(cluster: Cluster) -> None:
    clock = FakeClock()

    def slow(verb: str, key: Key) -> None:
        if verb == "apply" and key.name == "a":
            clock.advance(61)  # the first step takes longer than the whole run may

    cluster.api.before.append(slow)
    plan = build_plan([configmap("a", step=0), configmap("b", step=1)], namespace="apps", default_timeout=300)
    events: list[Event] = []
    result = Runner(cluster.api, Options(namespace="apps", timeout=60), events.append, clock=clock).run(plan)
    assert isinstance(result.error, RunTimeout)
    assert str(result.error) == (
        "the run did not finish within --timeout 1m0s, during step step-1; nothing was pruned"
    )
    assert (result.failed_step, result.failed_step_index) == ("step-1", 1)
    assert [(e.step_name, e.result) for e in events if isinstance(e, StepDone)] == [
        ("step-0", "healthy"),
        ("step-1", "timeout"),
    ]
    assert cluster.names("ConfigMap") == ["a"]  # the second step was never applied


def test_a_changed_job_under_a_stale_hashed_name_says_the_hash_does_not_match(cluster: Cluster) -> None:
    def hashed(image: str, name_image: str) -> Doc:
        doc = job("migrate", image)
        doc["metadata"]["name"] = f"migrate-{spec_hash(job('migrate', name_image)['spec'])}"
        doc["metadata"]["annotations"][JOB_BASE_NAME] = "migrate"
        return doc

    cluster.apply([hashed("app:1", "app:1")])
    immutable = "spec.template: Invalid value: ...: field is immutable"

    def refuse_the_new_template(verb: str, key: Key) -> None:
        if verb == "apply" and key.kind == "Job":  # what the API server answers a changed Job template
            raise ApiStatusError(422, "Invalid", immutable)

    cluster.api.before.append(refuse_the_new_template)
    plan = build_plan([hashed("app:2", "app:1")], namespace="apps", default_timeout=30)
    result = Runner(cluster.api, Options(namespace="apps"), cluster.events.append).run(plan)
    name_hash, actual = spec_hash(job("migrate", "app:1")["spec"]), spec_hash(job("migrate", "app:2")["spec"])
    assert str(result.error) == (
        f"Job.batch apps/migrate-{name_hash}: the rendered spec differs from the live Job's in fields a Job "
        f"cannot change ({immutable}): the name's hash {name_hash} does not match the rendered spec, which "
        f"hashes to {actual}, so something changed the Job after hash-job-names named it (an overlay's "
        "image, label or patch) and the changed Job kept the live one's name. Run hash-job-names after every "
        "transformer that changes the Job (in the overlay that sets the final image, after set-image), or "
        "annotate the Job krmfn.dev/force: enabled to delete and re-create it"
    )


def fail_labelled_jobs(obj: Doc) -> None:
    if obj["kind"] == "Job" and obj["metadata"].get("labels", {}).get("fails"):
        obj["status"] = {
            "failed": 1,
            "conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}],
        }


def failing(name: str, **notes: str) -> Doc:
    doc = job(name)
    doc["metadata"]["labels"] = {"fails": "yes"}
    doc["metadata"]["annotations"].update(notes)
    return doc


def test_a_failed_job_deleted_by_ttl_is_not_run_again_and_its_step_fails(cluster: Cluster) -> None:
    cluster.api.controllers.insert(0, fail_labelled_jobs)
    cluster.api.controllers.remove(complete_jobs)
    plan = build_plan([failing("migrate")], namespace="apps", default_timeout=30, wait=True)
    first = Runner(cluster.api, Options(namespace="apps"), cluster.events.append).run(plan)
    assert first.error is not None and "BackoffLimitExceeded" in str(first.error)
    run = jobs.run_hash(failing("migrate"))
    assert cluster.parent()[JOB_RECORDS] == f"apps/migrate={run}:failed"
    cluster.api.remove("batch/v1", "Job", "apps", "migrate")  # ttlSecondsAfterFinished
    cluster.events = []
    again = Runner(cluster.api, Options(namespace="apps"), cluster.events.append).run(plan)
    assert cluster.applied() == [("Job.batch apps/migrate", "skipped")]
    assert cluster.names("Job") == []
    assert again.error is not None
    assert "failed before and deleted since (ttlSecondsAfterFinished); not run again" in str(again.error)
    # recreate-on-failure runs it again
    retry = build_plan([failing("migrate", **{"krmfn.dev/recreate-on-failure": "enabled"})],
                       namespace="apps", default_timeout=30, wait=True)  # fmt: skip
    cluster.events = []
    Runner(cluster.api, Options(namespace="apps"), cluster.events.append).run(retry)
    assert cluster.applied() == [("Job.batch apps/migrate", "created")]
    assert cluster.names("Job") == ["migrate"]


def test_a_job_never_seen_finishing_is_not_run_again_after_ttl_deletion(cluster: Cluster) -> None:
    cluster.api.controllers.remove(complete_jobs)  # it runs on: the final step does not wait
    cluster.apply([job("warm")], wait=False)
    run = jobs.run_hash(job("warm"))
    assert cluster.parent()[JOB_RECORDS] == f"apps/warm={run}:started"
    cluster.api.remove("batch/v1", "Job", "apps", "warm")
    cluster.apply([job("warm")], wait=False)
    assert cluster.applied() == [("Job.batch apps/warm", "skipped")]
    assert cluster.names("Job") == []
    # and a step that waits for it takes it as done: its outcome is unknown, it is not run again
    cluster.apply([job("warm")], wait=True)
    assert cluster.names("Job") == []


def test_a_completed_job_gets_new_labels_and_annotations_in_place(cluster: Cluster) -> None:
    cluster.apply([job("migrate")])
    uid = cluster.api.object("batch/v1", "Job", "apps", "migrate")["metadata"]["uid"]  # type: ignore[index]
    cluster.apply([job("migrate")])
    assert cluster.applied() == [("Job.batch apps/migrate", "unchanged")]
    kept = job("migrate")
    kept["metadata"]["annotations"]["krmfn.dev/prune"] = "disabled"
    cluster.apply([kept])
    assert cluster.applied() == [("Job.batch apps/migrate", "configured")]
    live = cluster.api.object("batch/v1", "Job", "apps", "migrate")
    assert live is not None and live["metadata"]["uid"] == uid
    assert live["metadata"]["annotations"]["krmfn.dev/prune"] == "disabled"
    cluster.apply([configmap("a")], adopt=True)  # a render with none of the inventory's objects
    assert ("Job.batch apps/migrate", "kept", "krmfn.dev/prune: disabled") in cluster.pruned()


def test_a_record_of_krmfn_0_1_keeps_a_ttl_deleted_job_from_running_again(cluster: Cluster) -> None:
    migrate = job("migrate")
    cluster.api.seed(Parent("krmfn", "apps", "0.1.0", group_kinds={"Job.batch"}).render())
    legacy = {LEGACY_COMPLETED_JOBS: f"apps/migrate={jobs.legacy_spec_hash(migrate)}"}
    cluster.api.annotate("v1", "Secret", "apps", "krmfn", legacy)
    cluster.apply([migrate])
    assert cluster.applied() == [("Job.batch apps/migrate", "skipped")]
    notes = cluster.parent()
    assert LEGACY_COMPLETED_JOBS not in notes
    assert notes[JOB_RECORDS] == f"apps/migrate={jobs.run_hash(migrate)}:completed"


def test_a_job_renamed_by_the_new_name_hash_is_not_run_again(cluster: Cluster) -> None:
    # krmfn 0.1's hash-job-names covered backoffLimit: the same run gets another name after an upgrade.
    old, new = job("migrate-0a1b2c3d"), job("migrate-9f8e7d6c")
    for doc in (old, new):
        doc["metadata"]["annotations"]["krmfn.dev/job-base-name"] = "migrate"
    cluster.api.seed(Parent("krmfn", "apps", "0.1.0", group_kinds={"Job.batch"}).render())
    legacy = {LEGACY_COMPLETED_JOBS: f"apps/migrate-0a1b2c3d={jobs.legacy_spec_hash(old)}"}
    cluster.api.annotate("v1", "Secret", "apps", "krmfn", legacy)
    cluster.apply([new])
    assert cluster.applied() == [("Job.batch apps/migrate-9f8e7d6c", "skipped")]
    skipped = next(e for e in cluster.events if isinstance(e, Apply))
    assert skipped.detail.startswith("completed before as migrate-0a1b2c3d and deleted since")
    assert cluster.names("Job") == []
    assert cluster.parent()[JOB_RECORDS] == f"apps/migrate-9f8e7d6c={jobs.run_hash(new)}:completed"


def test_a_failed_job_restarted_in_place_reports_its_exit_code_and_the_previous_logs(
    cluster: Cluster,
) -> None:
    # restartPolicy OnFailure: the container exited 3 and was restarted in place, then killed (137) when
    # the Job failed. The reason is the exit before the kill; its logs are the previous container's.
    def fail_with_a_pod(obj: Doc) -> None:
        if obj["kind"] != "Job":
            return
        obj["status"] = {
            "conditions": [{"type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded"}]
        }
        cluster.api.seed({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "migrate-x", "namespace": "apps",
                         "labels": {"batch.kubernetes.io/job-name": "migrate"},
                         "ownerReferences": [{"uid": obj["metadata"]["uid"]}]},
            "status": {"phase": "Running", "containerStatuses": [{
                "name": "m", "restartCount": 2, "state": {"terminated": {"exitCode": 137, "reason": "Error"}},
                "lastState": {"terminated": {"exitCode": 3, "reason": "Error"}}}]},
        })  # fmt: skip

    cluster.api.controllers[:] = [fail_with_a_pod]
    cluster.api.log_lines[("migrate-x", "m", True)] = "applying 0042\nlock timeout after 30s\n"
    plan = build_plan([job("migrate")], namespace="apps", default_timeout=30, wait=True)
    result = Runner(cluster.api, Options(namespace="apps"), cluster.events.append).run(plan)
    assert result.error is not None
    message = str(result.error)
    assert "pod migrate-x container m: Error (exit code 3), restarted 2 times" in message
    assert "last 2 log lines before the restart: applying 0042 / lock timeout after 30s" in message
    assert cluster.api.log_requests == [("migrate-x", "m", True)]
