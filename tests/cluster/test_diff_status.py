"""`krmfn diff` and `krmfn status` against the real control plane: what the next apply would change, what
the last runs did, and that neither ever writes or takes the lock."""

from __future__ import annotations

import contextlib
import io
import json
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from lightkube import Client
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import ConfigMap, Secret

from krmfn.cli import main as krmfn_main
from krmfn.runner.inventory.applyset import ID_LABEL, TOOLING, applyset_id
from krmfn.runner.inventory.runs import MAX_RUNS
from krmfn.runner.reserved import LAST_PLAN, LOCK, RUNS
from krmfn.yaml.io import dump_all_fast

from .objects import meta
from .runner_fixtures import Apply, Spawn, configmap, deployment, final_wait, inventory_problems, job
from .runner_fixtures import apply as apply  # noqa: PLC0414 (re-exported fixture)
from .runner_fixtures import spawn as spawn  # noqa: PLC0414 (re-exported fixture)

Doc = dict[str, Any]
ESC = "\x1b"


@dataclass
class Ran:
    code: int
    out: str
    err: str

    def events(self) -> list[Doc]:
        return [json.loads(line) for line in self.out.splitlines()]

    def diffs(self) -> dict[str, Doc]:
        return {e["object"]: e for e in self.events() if e["type"] == "diff"}


Krmfn = Callable[..., Ran]


@pytest.fixture
def krmfn(kubeconfig: Path, namespace: str, tmp_path: Path) -> Krmfn:
    """``krmfn(command, docs | None, *flags)``: runs ``krmfn diff -f FILE`` or ``krmfn status`` in this
    process against the test namespace, the inventory named krmfn (as the apply fixture names it)."""
    counter = iter(range(1000))

    def run(command: str, docs: list[Doc] | None, *flags: str) -> Ran:
        argv = [command, "-n", namespace, "--kubeconfig", str(kubeconfig)]
        if docs is not None:
            path = tmp_path / f"input-{next(counter)}.yaml"
            path.write_text(dump_all_fast(docs))
            argv += ["-f", str(path)]
        if not any(f.startswith("--applyset") for f in flags):
            argv += ["--applyset", "krmfn"]
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = krmfn_main([*argv, *flags])
        return Ran(code, out.getvalue(), err.getvalue())

    return run


def secret(name: str, step: int | None = None, **values: str) -> Doc:
    doc: Doc = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "stringData": values}
    if step is not None:
        doc["metadata"]["annotations"] = {"krmfn.dev/step-index": str(step), "krmfn.dev/step": f"step{step}"}
    return doc


def parent_version(client: Client, namespace: str) -> str:
    return str(meta(client.get(Secret, "krmfn", namespace=namespace)).resourceVersion)


# --- diff ----------------------------------------------------------------------------------------------


def test_diff_without_an_inventory_is_one_line_and_exit_1(krmfn: Krmfn) -> None:
    ran = krmfn("diff", [configmap("app", 0, a="1")])
    assert ran.code == 1
    assert ran.out == ""
    assert ran.err.count("\n") == 1 and "no inventory" in ran.err and "Secret krmfn" in ran.err


def test_diff_after_apply_is_empty_and_exit_0(apply: Apply, krmfn: Krmfn) -> None:
    docs = [configmap("app", 0, a="1"), secret("creds", 0, password="p"), deployment("web", 1)]
    assert apply(docs).code == 0
    ran = krmfn("diff", docs)
    assert (ran.code, ran.out) == (0, ""), ran.err
    assert "0 to create, 0 to update, 0 to delete, 3 unchanged" in ran.err
    events = krmfn("diff", docs, "-o", "json").events()
    assert [e["action"] for e in events if e["type"] == "diff"] == ["unchanged"] * 3
    assert all(e["patch"] == [] for e in events if e["type"] == "diff")
    assert events[-1] == {"type": "result", "ok": True, "changed": False, "create": 0, "update": 0,
                          "delete": 0, "unchanged": 3, "failed": 0, "error": None}  # fmt: skip


def test_diff_shows_updates_creates_and_prunes_and_writes_nothing(
    apply: Apply, krmfn: Krmfn, kube_client: Client, namespace: str
) -> None:
    kept = configmap("kept", 0, annotations={"krmfn.dev/prune": "disabled"}, a="1")
    assert apply([configmap("app", 0, a="1", b="2"), configmap("old", 0, a="1"), kept]).code == 0
    before = parent_version(kube_client, namespace)
    new = [configmap("app", 0, a="1", b="3"), configmap("added", 1, c="4")]
    ran = krmfn("diff", new)
    assert ran.code == 1, ran.err
    assert f"# ConfigMap {namespace}/app: update (step step0)" in ran.out
    assert "-  b: '2'\n+  b: '3'\n" in ran.out
    assert f"diff -u -N live/v1.ConfigMap.{namespace}.app merged/v1.ConfigMap.{namespace}.app" in ran.out
    assert f"# ConfigMap {namespace}/added: create (step step1)" in ran.out
    assert f"# ConfigMap {namespace}/old: delete: no longer rendered" in ran.out
    assert "kept" not in ran.out, "an object opted out of prune is no deletion"
    for left_out in ("managedFields", "resourceVersion", "uid:", "creationTimestamp", "generation"):
        assert left_out not in ran.out
    assert "1 to create, 1 to update, 1 to delete, 0 unchanged" in ran.err
    diffs = krmfn("diff", new, "-o", "json").diffs()
    assert diffs[f"ConfigMap {namespace}/app"]["patch"] == [
        {"op": "replace", "path": "/data/b", "value": "3"}
    ]
    assert diffs[f"ConfigMap {namespace}/added"]["action"] == "create"
    assert {"op": "add", "path": "/data", "value": {"c": "4"}} in diffs[f"ConfigMap {namespace}/added"][
        "patch"
    ]
    assert diffs[f"ConfigMap {namespace}/old"]["action"] == "delete"
    assert krmfn("diff", new, "--no-prune", "-o", "json").diffs().keys() == {
        f"ConfigMap {namespace}/app",
        f"ConfigMap {namespace}/added",
    }
    # Nothing was written: not the parent, not the objects (the dry run changed nothing).
    assert parent_version(kube_client, namespace) == before
    assert (kube_client.get(ConfigMap, "app", namespace=namespace).data or {})["b"] == "2"
    assert not _exists(kube_client, "added", namespace)
    assert _exists(kube_client, "old", namespace)


def _service(name: str, **spec: Any) -> Doc:
    ports = spec.pop("ports", [{"port": 80}])
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"ports": ports, "selector": {"app": name}, **spec}}  # fmt: skip


# Each object the dry run of a create answers with something it made up for that request alone, with
# what the diff of that create must not show, and what it must (the rendered object set it).
INVENTED: list[tuple[Doc, tuple[str, ...], tuple[str, ...]]] = [
    (job("migrate"), ("controller-uid",), ("batch.kubernetes.io/job-name",)),
    (_service("cluster-ip"), ("clusterIP",), ()),
    (_service("node-port", type="NodePort"), ("clusterIP", "nodePort"), ()),
    (_service("balancer", type="LoadBalancer", externalTrafficPolicy="Local"),
     ("clusterIP", "nodePort", "healthCheckNodePort"), ()),
    (_service("headless", clusterIP="None"), (), ('"clusterIP":"None"',)),
    (_service("fixed", type="NodePort", ports=[{"port": 80, "nodePort": 30080}]), ("clusterIP",),
     ('"nodePort":30080',)),
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bare"},
      "spec": {"containers": [{"name": "main", "image": "app:1"}]}}, ("kube-api-access-",), ()),
]  # fmt: skip


def test_diff_of_new_objects_leaves_out_what_the_dry_run_made_up(apply: Apply, krmfn: Krmfn) -> None:
    """Issue 34: a new Job's diff showed the controller-uid labels and selector the server's dry run
    invented (the apply invents others), noise in every diff; so are a Service's allocations and a Pod's
    token volume. Once applied, the next diff is empty: nothing the server keeps was left out."""
    seed = configmap("seed", a="1")
    assert apply([seed]).code == 0  # the inventory exists: a diff without one shows nothing
    docs = [seed, *(doc for doc, _, _ in INVENTED)]
    ran = krmfn("diff", docs, "-o", "json")
    assert ran.code == 1, ran.err
    diffs = [d for d in ran.diffs().values() if d["action"] != "unchanged"]
    assert [d["action"] for d in diffs] == ["create"] * len(INVENTED), diffs
    for doc, absent, present in INVENTED:
        (found,) = [d for d in diffs if d["object"].endswith(f"/{doc['metadata']['name']}")]
        text = json.dumps(found["patch"], separators=(",", ":"))
        assert [a for a in absent if a in text] == [], (doc["metadata"]["name"], text)
        assert [p for p in present if p not in text] == [], (doc["metadata"]["name"], text)
    again = krmfn("diff", docs)
    assert "controller-uid" not in again.out and "kube-api-access-" not in again.out
    assert apply(docs, "--no-wait").code == 0
    after = krmfn("diff", docs)
    assert (after.code, after.out) == (0, ""), after.err


def _exists(client: Client, name: str, namespace: str) -> bool:
    return any(meta(cm).name == name for cm in client.list(ConfigMap, namespace=namespace))


def test_diff_masks_secret_values(apply: Apply, krmfn: Krmfn, namespace: str) -> None:
    assert apply([secret("creds", 0, password="hunter2", same="s3cr3t-same", gone="old-value")]).code == 0
    new = [secret("creds", 0, password="correct-horse", same="s3cr3t-same", added="new-value")]
    for ran in (krmfn("diff", new), krmfn("diff", new, "-o", "json")):
        assert ran.code == 1, ran.err
        for value in ("hunter2", "correct-horse", "s3cr3t-same", "old-value", "new-value"):
            for encoded in (value, __import__("base64").b64encode(value.encode()).decode()):
                assert encoded not in ran.out, f"{value} leaked"
    text = krmfn("diff", new).out
    assert "-  password: '*** (before)'\n+  password: '*** (after)'" in text
    assert "   same: '***'" in text
    patch = krmfn("diff", new, "-o", "json").diffs()[f"Secret {namespace}/creds"]["patch"]
    assert {"op": "replace", "path": "/data/password", "value": "*** (after)"} in patch
    assert {"op": "add", "path": "/data/added", "value": "***"} in patch
    # stringData is merged into data by the server, so a key no longer rendered stays: the diff says
    # what the server would store, not what the manifest lists.
    assert not any(op["path"] == "/data/gone" for op in patch)


def test_diff_shows_a_job_with_an_unchanged_run_hash_as_unchanged(
    apply: Apply, krmfn: Krmfn, kube_client: Client, namespace: str
) -> None:
    docs = [job("migrate", 0), final_wait(configmap("app", 1, a="1"))]
    assert apply(docs).code == 0
    diffs = krmfn("diff", docs, "-o", "json").diffs()
    assert diffs[f"Job.batch {namespace}/migrate"]["action"] == "unchanged"
    assert "spec hash is unchanged" in diffs[f"Job.batch {namespace}/migrate"]["detail"]
    # Deleted since (as ttlSecondsAfterFinished would): recorded completed, so not run again.
    kube_client.delete(Job, "migrate", namespace=namespace, grace_period=0)
    _wait_gone(kube_client, "migrate", namespace)
    gone = krmfn("diff", docs, "-o", "json")
    assert gone.code == 0, gone.out
    assert "completed before and deleted since" in gone.diffs()[f"Job.batch {namespace}/migrate"]["detail"]
    # A new spec under the same name: the server refuses it in place, named.
    changed = krmfn("diff", [job("migrate", 0, image="app:2"), final_wait(configmap("app", 1, a="1"))])
    assert changed.code == 1, changed.err  # not live any more: it would be created
    assert f"# Job.batch {namespace}/migrate: create" in changed.out


def test_diff_shows_a_job_renamed_by_its_hash_as_unchanged_as_apply_skips_it(
    apply: Apply, krmfn: Krmfn, kube_client: Client, namespace: str
) -> None:
    base = {"krmfn.dev/job-base-name": "migrate"}
    assert apply([final_wait(job("migrate-aaaaaaaa", 0, annotations=base))]).code == 0
    kube_client.delete(Job, "migrate-aaaaaaaa", namespace=namespace, grace_period=0)
    _wait_gone(kube_client, "migrate-aaaaaaaa", namespace)
    # The same run under another hashed name.
    renamed = [final_wait(job("migrate-bbbbbbbb", 0, annotations=base))]
    diff = krmfn("diff", renamed, "-o", "json").diffs()[f"Job.batch {namespace}/migrate-bbbbbbbb"]
    assert diff["action"] == "unchanged"
    assert diff["detail"] == "completed before as migrate-aaaaaaaa and deleted since: not run again"
    assert apply(renamed).actions()[f"Job.batch {namespace}/migrate-bbbbbbbb"] == "skipped"


def _wait_gone(client: Client, name: str, namespace: str) -> None:
    import time

    for _ in range(100):
        if not any(meta(j).name == name for j in client.list(Job, namespace=namespace)):
            return
        time.sleep(0.1)
    raise AssertionError(f"Job {name} was not deleted")


def test_diff_of_an_immutable_job_change_names_the_job_and_exits_2(
    apply: Apply, krmfn: Krmfn, namespace: str
) -> None:
    assert apply([job("migrate", 0)]).code == 0
    ran = krmfn("diff", [job("migrate", 0, image="app:2")])
    assert ran.code == 2
    assert f"Job.batch {namespace}/migrate" in ran.err and "cannot change" in ran.err
    assert "Traceback" not in ran.err


def test_diff_escapes_hostile_values_and_colours_only_on_a_terminal(
    apply: Apply, krmfn: Krmfn, namespace: str
) -> None:
    assert apply([configmap("app", 0, a="1")]).code == 0
    hostile = f"{ESC}]0;pwned{ESC}\\\u202e::add-mask::x\r\nfake line"
    ran = krmfn("diff", [configmap("app", 0, a=hostile)])
    assert ran.code == 1
    assert ESC not in ran.out and "\u202e" not in ran.out and "::add-mask::" not in ran.out
    assert "\r" not in ran.out


def test_diff_external_differ_gets_two_directories(
    apply: Apply, krmfn: Krmfn, namespace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert apply([configmap("app", 0, a="1"), secret("creds", 0, password="hunter2")]).code == 0
    record = tmp_path / "seen"
    script = tmp_path / "differ"
    script.write_text(f'#!/bin/sh\nls "$1" "$2" > {record}\ncat "$1"/* "$2"/* >> {record}\nexit 1\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("KRMFN_DIFF", f"{script}")
    ran = krmfn("diff", [configmap("app", 0, a="2"), secret("creds", 0, password="other")])
    assert ran.code == 1, ran.err
    seen = record.read_text()
    assert f"v1.ConfigMap.{namespace}.app" in seen and f"v1.Secret.{namespace}.creds" in seen
    assert "a: '1'" in seen and "a: '2'" in seen
    assert "hunter2" not in seen and "*** (before)" in seen
    script.write_text("#!/bin/sh\nexit 3\n")
    failed = krmfn("diff", [configmap("app", 0, a="2")])
    assert failed.code == 2 and "failed with exit status 3" in failed.err and failed.err.count("\n") == 1
    monkeypatch.setenv("KRMFN_DIFF", str(tmp_path / "missing-program"))
    missing = krmfn("diff", [configmap("app", 0, a="2")])
    assert missing.code == 2 and "cannot run" in missing.err and missing.err.count("\n") == 1


def test_diff_and_status_refuse_another_tools_inventory(
    krmfn: Krmfn, kube_client: Client, namespace: str
) -> None:
    labels = {ID_LABEL: applyset_id("krmfn", namespace)}
    kube_client.create(Secret(metadata=ObjectMeta(name="krmfn", namespace=namespace, labels=labels,
                                                  annotations={TOOLING: "kubectl/v1.31"})))  # fmt: skip
    diff = krmfn("diff", [configmap("app", 0, a="1")])
    assert diff.code == 2 and "managed by kubectl/v1.31, not krmfn" in diff.err and diff.out == ""
    status = krmfn("status", None)
    assert status.code == 1 and "managed by kubectl/v1.31, not krmfn" in status.err and status.out == ""
    assert status.err.count("\n") == 1


def test_diff_refuses_another_apps_inventory_as_apply_does(apply: Apply, krmfn: Krmfn) -> None:
    assert apply([configmap("theirs", 0, a="1")]).code == 0
    ran = krmfn("diff", [configmap("mine", 0, a="1")])
    assert ran.code == 2 and "looks like another app's" in ran.err
    assert krmfn("diff", [configmap("mine", 0, a="1")], "--adopt").code == 1


def test_diff_and_status_run_while_an_apply_holds_the_lock(
    spawn: Spawn, krmfn: Krmfn, kube_client: Client, namespace: str
) -> None:
    # Slow enough that status and diff finish while the run holds the lock, on a loaded machine too.
    run = spawn([job("slow", 0, slow="12s"), final_wait(configmap("after", 1, a="1"))])
    run.until(lambda e: e["type"] == "wait")
    lock_before = (meta(kube_client.get(Secret, "krmfn", namespace=namespace)).annotations or {})[LOCK]
    status = krmfn("status", None, "-o", "json")
    assert status.code == 1
    data = json.loads(status.out)
    assert data["lock"]["holder"].endswith(f"/{run.proc.pid}")
    assert data["lastRun"]["result"] == "running"
    assert any("a run is in progress" in p for p in data["problems"])
    diff = krmfn("diff", [job("slow", 0, slow="12s"), final_wait(configmap("after", 1, a="1"))])
    assert diff.code == 1, diff.err  # the ConfigMap of step 1 is not applied yet
    notes = meta(kube_client.get(Secret, "krmfn", namespace=namespace)).annotations or {}
    assert notes.get(LOCK, "").startswith(lock_before[:40]), "diff and status never take the lock"
    assert run.finish().code == 0
    assert krmfn("status", None).code == 0


# --- status --------------------------------------------------------------------------------------------


def test_status_without_an_inventory_is_one_line_and_exit_1(krmfn: Krmfn) -> None:
    ran = krmfn("status", None)
    assert ran.code == 1 and ran.out == "" and ran.err.count("\n") == 1 and "no inventory" in ran.err


def test_status_needs_an_inventory_name(kubeconfig: Path, namespace: str) -> None:
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = krmfn_main(["status", "-n", namespace, "--kubeconfig", str(kubeconfig)])
    assert code == 2 and "--applyset NAME" in err.getvalue() and err.getvalue().count("\n") == 1


def test_status_after_a_healthy_run(apply: Apply, krmfn: Krmfn, namespace: str) -> None:
    docs = [configmap("app", 0, a="1"), job("migrate", 0), final_wait(deployment("web", 1))]
    assert apply(docs).code == 0
    ran = krmfn("status", None)
    assert ran.code == 0, ran.out
    lines = ran.out.splitlines()
    assert lines[0] == f"inventory: Secret {namespace}/krmfn (krmfn/v0.1.0), 3 member(s)"
    assert lines[1].startswith("last run: succeeded in ")
    assert lines[2].startswith("  steps: step0 ") and " healthy, step1 " in lines[2]
    assert "step step0:" in lines and "step step1:" in lines
    assert any(line.startswith(f"  ok Job.batch {namespace}/migrate: current") and "recorded completed for "
               "run hash" in line for line in lines)  # fmt: skip
    assert lines[-1] == "healthy"
    data = json.loads(krmfn("status", None, "-o", "json").out)
    assert data["healthy"] is True and data["lock"] is None and data["notInLastPlan"] == []
    assert data["lastRun"]["result"] == "succeeded" and data["lastRun"].get("failedStep") is None
    assert [s[0] for s in data["lastRun"]["steps"]] == ["step0", "step1"]
    assert data["jobs"] == [{"job": f"{namespace}/migrate", "specHash": data["jobs"][0]["specHash"],
                             "outcome": "completed", "live": True}]  # fmt: skip
    assert [s["name"] for s in data["steps"]] == ["step0", "step1"]


def test_status_after_a_failed_run_names_the_step_and_exits_1(
    apply: Apply, krmfn: Krmfn, kube_client: Client, namespace: str
) -> None:
    assert apply([configmap("app", 0, a="1"), job("migrate", 1, fail=True), configmap("late", 2)]).code == 1
    ran = krmfn("status", None, "-o", "json")
    assert ran.code == 1
    data = json.loads(ran.out)
    last = data["lastRun"]
    assert (last["result"], last["failedStep"]) == ("failed", "step1")
    assert "migrate" in last["error"]
    assert [s[2] for s in last["steps"]] == ["healthy", "failed"]
    assert any(f"Job.batch {namespace}/migrate is failed" in p for p in data["problems"])
    text = krmfn("status", None).out
    assert "last run: failed in" in text and "failed step step1" in text
    assert inventory_problems(kube_client, namespace) == []


def test_status_history_keeps_the_last_runs_bounded(
    apply: Apply, krmfn: Krmfn, kube_client: Client, namespace: str
) -> None:
    for i in range(MAX_RUNS + 2):
        assert apply([configmap("app", 0, a=str(i))]).code == 0
    data = json.loads(krmfn("status", None, "--history", "-o", "json").out)
    assert len(data["runs"]) == MAX_RUNS
    assert all(r["result"] == "succeeded" for r in data["runs"]), data["runs"]
    assert [r["start"] for r in data["runs"]] == sorted(r["start"] for r in data["runs"])
    text = krmfn("status", None, "--history").out
    assert text.count("\nrun: succeeded") == MAX_RUNS
    notes = meta(kube_client.get(Secret, "krmfn", namespace=namespace)).annotations or {}
    assert len(notes[RUNS]) < MAX_RUNS * 2048 and notes[LAST_PLAN].startswith("1:")


def test_status_lists_members_not_in_the_last_plan(apply: Apply, krmfn: Krmfn, namespace: str) -> None:
    assert apply([configmap("app", 0, a="1"), configmap("old", 0, a="1")]).code == 0
    assert apply([configmap("app", 0, a="1")], "--no-prune").code == 0
    data = json.loads(krmfn("status", None, "-o", "json").out)
    assert data["notInLastPlan"] == [f"ConfigMap {namespace}/old"]
    assert "not in the last plan (1)" in krmfn("status", None).out


def test_status_reads_a_tampered_run_record_without_failing(
    apply: Apply, krmfn: Krmfn, kube_client: Client, namespace: str
) -> None:
    assert apply([configmap("app", 0, a="1")]).code == 0
    hostile = json.dumps([{"run": f"x{ESC}[2J", "start": "2026-01-01T00:00:00Z", "end": None,
                           "result": "failed", "failedStep": f"s\u202e{ESC}]0;t", "error": "::error::boom",
                           "steps": [["a", "NaN", 3], ["b", 1.0, "healthy"]]}, "junk", 7])  # fmt: skip
    kube_client.patch(Secret, "krmfn", {"metadata": {"annotations": {RUNS: hostile, LAST_PLAN: "9:!!!"}}},
                      namespace=namespace)  # fmt: skip
    ran = krmfn("status", None)
    assert ran.code == 1 and "Traceback" not in ran.err
    assert ESC not in ran.out and "\u202e" not in ran.out and "::error::" not in ran.out
    assert "steps: b 1.0s healthy" in ran.out
    assert "too many to record which" in ran.out  # an unreadable plan record: not listed, counted
    data = json.loads(krmfn("status", None, "-o", "json").out)
    assert data["lastRun"]["steps"] == [["b", 1.0, "healthy"]]
    # The next run replaces the record with its own.
    assert apply([configmap("app", 0, a="2")]).code == 0
    assert krmfn("status", None).code == 0
