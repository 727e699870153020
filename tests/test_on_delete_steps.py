"""On-delete steps without a cluster: set-steps' ``onDelete:`` writes ``krmfn.dev/on-delete``, the one step
grouping (krmfn/k8s/step_grouping.py) keeps them apart, ``krmfn plan`` shows them, ``krmfn apply`` never
applies them but records them on the parent, the exports write or refuse them, and ``krmfn delete`` (against
the in-memory API, tests/fake_kube.py) applies them before the teardown or refuses to go without them.
tests/cluster/test_delete_steps.py runs them on the control plane."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from fake_kube import FakeApi, FakeClock

from krmfn.errors import InputError
from krmfn.export import main as export_main
from krmfn.functions.set_steps import FUNCTION
from krmfn.k8s.step_grouping import group
from krmfn.runner.commands.delete_cmd import DeleteOptions, Deleter, DeleteResult, exit_code, result_data
from krmfn.runner.commands.delete_cmd import summary_line as delete_summary
from krmfn.runner.commands.printers import JsonPrinter, plan_data, plan_lines, summary_line
from krmfn.runner.engine.engine import Options, Result, Runner
from krmfn.runner.errors import SourceError
from krmfn.runner.events import Apply, Delete, Event, Log, StepDone
from krmfn.runner.inventory.applyset import Parent
from krmfn.runner.plan import build_plan
from krmfn.yaml.io import _load_fast, dump_all_fast, load_all_fast

Doc = dict[str, Any]
NS = "apps"
ON_DELETE = [
    {"name": "backup", "timeout": "2m", "selectors": [{"kind": "Job", "name": "backup"}]},
    {"name": "deregister", "selectors": [{"kind": "Job", "name": "deregister"}]},
]


def obj(kind: str, name: str, **notes: str) -> Doc:
    meta: Doc = {"name": name, "namespace": NS}
    if notes:
        meta["annotations"] = dict(notes)
    doc: Doc = {"apiVersion": "batch/v1" if kind == "Job" else "v1", "kind": kind, "metadata": meta}
    if kind == "Job":
        doc["spec"] = {
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x:1"}]}}
        }
    return doc


def set_steps(items: list[Doc], **config: Any) -> tuple[int, list[Doc], list[Doc]]:
    cfg = {"apiVersion": "fn.krmfn.dev/v1alpha1", "kind": "SetSteps", "metadata": {"name": "s"},
           "app": "shop", "defaultStep": "deploy", "onDelete": ON_DELETE,
           "steps": [{"name": "migrate", "selectors": [{"kind": "Job", "name": "migrate"}]},
                     {"name": "deploy"}],
           **config}  # fmt: skip
    text = dump_all_fast([{"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": items,
                           "functionConfig": cfg}])  # fmt: skip
    outcome = FUNCTION.outcome(text, "fast")
    items_out = _load_fast(outcome.text)["items"] if outcome.text else []
    return outcome.code, items_out, [r.to_dict() for r in outcome.results]


def notes(item: Doc) -> dict[str, str]:
    return dict(item["metadata"].get("annotations") or {})


def rendered(**config: Any) -> list[Doc]:
    items = [obj("Job", "migrate"), obj("ConfigMap", "web"), obj("Job", "backup"), obj("Job", "deregister")]
    code, out, results = set_steps(items, **config)
    assert code == 0, results
    return out


# --- set-steps ---------------------------------------------------------------------------------------------


def test_set_steps_marks_the_on_delete_steps_numbered_among_themselves() -> None:
    by_name = {item["metadata"]["name"]: notes(item) for item in rendered()}
    assert by_name["backup"] == {
        "krmfn.dev/step": "backup", "krmfn.dev/step-index": "0", "krmfn.dev/step-timeout": "2m0s",
        "krmfn.dev/on-delete": "true", "krmfn.dev/app": "shop",
    }  # fmt: skip
    assert by_name["deregister"]["krmfn.dev/step-index"] == "1"
    assert by_name["web"]["krmfn.dev/wait"] == "true"  # the final step is the last of the steps
    assert "krmfn.dev/on-delete" not in by_name["migrate"]


def test_an_object_moved_out_of_an_on_delete_step_loses_the_mark() -> None:
    moved = [{"name": "backup", "selectors": [{"kind": "Job", "name": "backup"}]}]
    code, items, _ = set_steps(rendered(), onDelete=moved)
    assert code == 0
    deregister = next(i for i in items if i["metadata"]["name"] == "deregister")
    assert "krmfn.dev/on-delete" not in notes(deregister) and notes(deregister)["krmfn.dev/step"] == "deploy"


def test_emit_argocd_makes_them_pre_delete_hooks_in_their_order() -> None:
    by_name = {item["metadata"]["name"]: notes(item) for item in rendered(emit=["argocd"])}
    assert by_name["backup"]["argocd.argoproj.io/hook"] == "PreDelete"
    assert [by_name[n]["argocd.argoproj.io/sync-wave"] for n in ("backup", "deregister")] == ["0", "1"]


CONFIG_ERRORS = {
    "name-shared-with-a-step": ({"onDelete": [{"name": "deploy"}]}, "onDelete[0].name",
                                "duplicate step name"),
    "name-shared-with-on-failure": (
        {"onFailure": [{"name": "backup"}], "onDelete": [{"name": "backup"}]}, "onDelete[0].name",
        "also onFailure"),
    "on-timeout-continue": ({"onDelete": [{"name": "b", "onTimeout": "continue"}]}, "onDelete[0].onTimeout",
                            "always fails the run"),
    "default-step": ({"defaultStep": "backup"}, "defaultStep", "is an onDelete step"),
    "kpt-live": ({"emit": ["depends-on"]}, "onDelete", "kpt live apply"),
    "over-20": ({"onDelete": [{"name": f"d{i}"} for i in range(21)]}, "onDelete",
                "over the limit of 20"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CONFIG_ERRORS))
def test_the_config_refuses(case: str) -> None:
    config, field, message = CONFIG_ERRORS[case]
    code, _, results = set_steps([obj("ConfigMap", "web")], **config)
    errors = [r for r in results if r["severity"] == "error"]
    assert code == 1 and len(errors) == 1, results
    assert errors[0]["field"]["path"] == f"functionConfig.{field}" and message in errors[0]["message"]


# --- the one grouping, the plan ----------------------------------------------------------------------------


def test_grouping_keeps_them_apart_and_refuses_both_marks_and_a_typo() -> None:
    found = group(rendered())
    assert [s.name for s in found.steps] == ["migrate", "deploy"]
    assert [(s.name, [o["metadata"]["name"] for o in s.items]) for s in found.on_delete] == [
        ("backup", ["backup"]), ("deregister", ["deregister"])
    ]  # fmt: skip
    both = obj("Job", "x", **{"krmfn.dev/on-delete": "true", "krmfn.dev/on-failure": "true"})
    with pytest.raises(InputError, match="both"):
        group([both])
    with pytest.raises(InputError, match='on-delete must be "true" or "false"'):
        group([obj("Job", "x", **{"krmfn.dev/on-delete": "yes"})])
    twice = obj("Job", "y", **{"krmfn.dev/on-delete": "true", "krmfn.dev/step": "deploy"})
    with pytest.raises(InputError, match="two steps are named 'deploy'"):
        group([*rendered(), twice])


def test_the_plan_numbers_them_last_keeps_them_out_of_the_app_and_says_so() -> None:
    plan = build_plan(rendered(), namespace=NS, default_timeout=30)
    assert [(s.index, s.name) for s in plan.on_delete] == [(2, "backup"), (3, "deregister")]
    assert {str(item.key) for item in plan.items} == {f"Job.batch {NS}/migrate", f"ConfigMap {NS}/web"}
    assert plan.on_delete[0].timeout == 120 and plan.on_delete[0].wait
    lines = plan_lines(plan)
    assert (
        lines[-4].startswith("on delete: step 2 backup (timeout 2m0s")
        and "not applied by krmfn apply" in lines[-4]
    )
    assert [s["name"] for s in plan_data(plan)["onDelete"]] == ["backup", "deregister"]


# --- export: every exporter, with and without --drop-on-delete -------------------------------------------

EXPORTS = {
    ("resourceset", False): "refused",
    ("resourceset", True): "left out",
    ("argocd", False): "PreDelete",
    ("argocd", True): "left out",
}


@pytest.mark.parametrize(("engine", "drop"), sorted(EXPORTS))
def test_export(engine: str, drop: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "in.yaml"
    source.write_text(dump_all_fast(rendered()))
    args = ["export", engine, "-f", str(source)] + (
        ["--name", "shop", "-n", NS] if engine == "resourceset" else []
    )
    code = export_main(args + (["--drop-on-delete"] if drop else []))
    out, err = capsys.readouterr()
    expected = EXPORTS[(engine, drop)]
    if expected == "refused":
        assert (
            code == 1
            and f"Job {NS}/backup is in the on-delete step 'backup'" in err
            and "--drop-on-delete" in err
        )
        return
    assert code == 0, err
    docs = [d for d in load_all_fast(out) if d]
    names = json.dumps(docs)
    if expected == "left out":
        assert '"backup"' not in names and '"deregister"' not in names and '"web"' in names
        return
    hooks = {
        d["metadata"]["name"]: notes(d)
        for d in docs
        if notes(d).get("argocd.argoproj.io/hook") == "PreDelete"
    }
    assert sorted(hooks) == ["backup", "deregister"]
    assert [hooks[n]["argocd.argoproj.io/sync-wave"] for n in ("backup", "deregister")] == ["0", "1"]


# --- apply, then delete, on the in-memory API ------------------------------------------------------------


def finish_jobs(failing: set[str]) -> Any:
    """A Job controller that is quick: every Job applied completes at once, or fails (``failing``)."""

    def controller(doc: Doc) -> None:
        if doc["kind"] == "Job":
            failed = doc["metadata"]["name"] in failing
            condition = {
                "type": "Failed" if failed else "Complete",
                "status": "True",
                "reason": "BackoffLimitExceeded",
            }
            doc["status"] = {"failed" if failed else "succeeded": 1, "conditions": [condition]}

    return controller


def summary_line_of(result: DeleteResult) -> str:
    return delete_summary(result, DeleteOptions("shop", NS))


class App:
    def __init__(self, failing: set[str] | None = None) -> None:
        self.api = FakeApi(NS)
        self.failing = failing if failing is not None else set()
        self.api.controllers.append(finish_jobs(self.failing))
        self.events: list[Event] = []

    def apply(self, docs: list[Doc]) -> Result:
        plan = build_plan(docs, namespace=NS, default_timeout=30)
        result = Runner(self.api, Options(namespace=NS, applyset="shop"), self.events.append).run(plan)
        assert result.error is None, result.error
        return result

    def delete(self, docs: list[Doc] | None = None, **options: Any) -> DeleteResult:
        self.events = []
        steps = None if docs is None else build_plan(docs, namespace=NS, default_timeout=30).on_delete
        deleter = Deleter(self.api, DeleteOptions("shop", NS, on_delete=steps, **options), self.events.append,
                          clock=FakeClock())  # fmt: skip
        return deleter.run()

    def parent_notes(self) -> dict[str, str]:
        parent = self.api.object("v1", "Secret", NS, "shop")
        assert parent is not None
        return dict(parent["metadata"]["annotations"])

    def writes(self) -> list[tuple[str, str]]:
        return [(verb, what) for verb, what in self.api.requests if verb not in ("get", "list")]


def test_apply_never_applies_them_and_records_them_on_the_parent() -> None:
    app = App()
    result = app.apply(rendered())
    assert app.api.object("batch/v1", "Job", NS, "backup") is None
    assert not any(isinstance(e, Apply) and "backup" in e.object for e in app.events)
    assert app.parent_notes()["krmfn.dev/on-delete-steps"] == "backup,deregister"
    assert "on-delete step(s) backup, deregister not applied" in summary_line(result)
    out = io.StringIO()
    JsonPrinter(out).summary(result)
    assert json.loads(out.getvalue())["onDeleteNotApplied"] == ["backup", "deregister"]
    without = [d for d in rendered() if d["metadata"]["name"] not in ("backup", "deregister")]
    app.apply(without)
    assert "krmfn.dev/on-delete-steps" not in app.parent_notes()


def test_delete_runs_them_first_in_order_then_deletes_them_first() -> None:
    app = App()
    app.apply(rendered())
    app.api.requests.clear()
    result = app.delete(rendered())
    assert result.ok, result.error
    writes = [w for w in app.writes() if not w[1].startswith("Secret")]
    assert writes[:2] == [("apply", f"Job.batch {NS}/backup"), ("apply", f"Job.batch {NS}/deregister")]
    deletes = [what for verb, what in writes if verb == "delete"]
    assert deletes[:2] == [f"Job.batch {NS}/deregister", f"Job.batch {NS}/backup"]
    assert set(deletes[2:]) == {f"ConfigMap {NS}/web", f"Job.batch {NS}/migrate"}
    done = [(e.step, e.step_name, e.result) for e in app.events if isinstance(e, StepDone)]
    assert done[:2] == [(0, "backup", "healthy"), (1, "deregister", "healthy")] and done[2][0] == 2
    data = result_data(result, DeleteOptions("shop", NS))
    assert data["onDelete"] == [{"stepName": "backup", "result": "healthy"}, {"stepName": "deregister",
                                                                            "result": "healthy"}]  # fmt: skip
    assert data["inventory"] == "deleted" and exit_code(result) == 0 and data["steps"] == 6
    assert summary_line_of(result).startswith(
        "deleted 4 object(s) in 4 step(s), after 2 on-delete step(s), then"
    )
    assert app.api.object("v1", "Secret", NS, "shop") is None


def test_a_failing_one_stops_the_teardown_with_the_record_saying_so() -> None:
    app = App(failing={"backup"})
    app.apply(rendered())
    app.api.requests.clear()
    result = app.delete(rendered())
    assert not result.ok and exit_code(result) == 1
    assert str(result.error).startswith(
        "on-delete step backup: "
    ) and "nothing of the app was deleted" in str(result.error)
    assert result.failed_step == "backup" and result.failed_step_index == 0
    assert not [w for w in app.writes() if w[0] == "delete"]
    assert app.api.object("batch/v1", "Job", NS, "deregister") is None  # the next one did not run
    record = json.loads(app.parent_notes()["krmfn.dev/runs"])[-1]
    assert (record["command"], record["result"], record["failedStep"]) == ("delete", "failed", "backup")
    assert "Job.batch" in app.parent_notes()["applyset.kubernetes.io/contains-group-kinds"]
    # Fixed, the next delete runs it again (the failed Job deleted first, its record forgotten).
    app.failing.clear()
    app.api.requests.clear()
    result = app.delete(rendered())
    assert result.ok, result.error
    backup = [w for w in app.writes() if "backup" in w[1]][:2]
    assert backup == [("delete", f"Job.batch {NS}/backup"), ("apply", f"Job.batch {NS}/backup")]


def test_force_goes_on_past_a_failing_one_and_exits_3() -> None:
    app = App(failing={"backup"})
    app.apply(rendered())
    result = app.delete(rendered(), force=True)
    assert result.ok and exit_code(result) == 3 and result.went_on and "--force" in result.went_on
    assert result.on_delete == [("backup", "failed"), ("deregister", "healthy")]
    assert app.api.object("v1", "Secret", NS, "shop") is None
    assert app.api.object("batch/v1", "Job", NS, "backup") is None  # deleted with the teardown


def test_without_the_render_an_app_with_on_delete_steps_is_refused() -> None:
    app = App()
    app.apply(rendered())
    app.api.requests.clear()
    result = app.delete(None)
    assert not result.ok and exit_code(result) == 2
    assert "has on-delete steps (backup, deregister)" in str(result.error) and "--skip-delete-steps" in str(
        result.error
    )
    assert app.writes() == []
    bare = [d for d in rendered() if d["metadata"]["name"] not in ("backup", "deregister")]
    result = app.delete(bare)
    assert exit_code(result) == 2 and "which the render given has none of" in str(result.error)
    assert app.writes() == []
    result = app.delete(None, skip_delete_steps=True)
    assert result.ok and result.on_delete == [] and app.api.object("v1", "Secret", NS, "shop") is None
    assert not [w for w in app.writes() if w[0] == "apply" and "Job" in w[1]]


def test_a_dry_run_lists_them_first_through_a_server_dry_run_and_writes_nothing() -> None:
    app = App()
    app.apply(rendered())
    app.api.requests.clear()
    result = app.delete(rendered(), dry_run=True)
    assert result.ok, result.error
    assert {verb for verb, _ in app.api.requests} <= {"get", "list", "apply-dry-run"}
    kinds = [type(e).__name__ for e in app.events if isinstance(e, (Apply, Delete))]
    assert kinds[:2] == ["Apply", "Apply"] and set(kinds[2:]) == {"Delete"}
    assert all(e.dry_run for e in app.events if isinstance(e, Apply))
    assert result.on_delete == [("backup", "applied"), ("deregister", "applied")]


def test_the_record_read_back_is_bounded_whatever_the_cluster_holds() -> None:
    live = Parent("shop", NS, "1").render()
    live["metadata"]["annotations"]["krmfn.dev/on-delete-steps"] = ",".join(["x" * 1000] * 1000) + ",,\x1b[2J"
    parent = Parent.from_live("shop", NS, "1", live)
    assert len(parent.on_delete) == 20 and all(len(name) <= 63 for name in parent.on_delete)
    assert Parent.from_live("shop", NS, "1", Parent("shop", NS, "1").render()).on_delete == []


def test_validate_jobs_tells_an_on_delete_step_from_the_step_of_the_same_index() -> None:
    from krmfn.functions.validate_jobs import FUNCTION as VALIDATE

    hook = obj("Job", "backup", **{"helm.sh/hook": "pre-install", "krmfn.dev/step-index": "0"})
    web = obj("Deployment", "web", **{"krmfn.dev/step-index": "0"})
    web["apiVersion"] = "apps/v1"

    def warned(job: Doc) -> bool:
        text = dump_all_fast([{"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
                               "items": [job, web]}])  # fmt: skip
        return any("helm-hook-same-step" in str(r.to_dict()) for r in VALIDATE.outcome(text, "fast").results)

    assert warned(hook)  # one step with the Deployment: the class the rule is for
    hook["metadata"]["annotations"]["krmfn.dev/on-delete"] = "true"
    assert not warned(hook)  # on-delete step 0 is not step 0


def test_delete_reads_the_renders_name_and_on_delete_steps_and_reports_bad_input_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from krmfn.runner.commands.delete_cmd import main, parser
    from krmfn.runner.commands.delete_input import on_delete_steps, read_render

    source = tmp_path / "render.yaml"
    source.write_text(dump_all_fast(rendered()))
    name, docs = read_render(parser().parse_args(["-f", str(source)]))
    steps = on_delete_steps(docs, "shop", NS, 30)
    assert name == "shop" and steps is not None and [s.name for s in steps] == ["backup", "deregister"]
    assert read_render(parser().parse_args(["--applyset", "shop"])) == ("shop", None)
    assert on_delete_steps(None, "shop", NS, 30) is None
    parent_named = [*rendered(), obj("Secret", "shop", **{"krmfn.dev/on-delete": "true"})]
    with pytest.raises(SourceError, match="is the ApplySet parent"):
        on_delete_steps(parent_named, "shop", NS, 30)
    bad = [*rendered(), obj("Job", "typo", **{"krmfn.dev/on-delete": "yes\x1b[2J"})]
    source.write_text(dump_all_fast(bad))
    assert main(["delete", "-f", str(source), "--kubeconfig", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1
        and f"Job.batch {NS}/typo: annotation krmfn.dev/on-delete" in err
        and "\x1b" not in err
    )


def test_an_inventory_kept_for_a_namespace_needs_no_render_to_finish() -> None:
    namespace = obj("Namespace", "shop-data", **{"krmfn.dev/step-index": "0"})
    del namespace["metadata"]["namespace"]
    app = App()
    app.apply([*rendered(), namespace])
    result = app.delete([*rendered(), namespace])
    assert result.ok and result.inventory == "kept", result.error
    assert "krmfn.dev/on-delete-steps" not in app.parent_notes()
    result = app.delete(None, prune_namespaces=True)
    assert result.ok and app.api.object("v1", "Namespace", "", "shop-data") is None, result.error


def test_an_apply_after_a_stopped_delete_prunes_what_the_delete_applied() -> None:
    app = App(failing={"backup"})
    app.apply(rendered())
    assert not app.delete(rendered()).ok
    assert app.api.object("batch/v1", "Job", NS, "backup") is not None
    app.events = []
    app.apply(rendered())
    assert app.api.object("batch/v1", "Job", NS, "backup") is None
    assert app.api.object("v1", "ConfigMap", NS, "web") is not None


def test_follow_shows_an_on_delete_jobs_log_lines_as_apply_follow_does() -> None:
    app = App()
    app.apply(rendered())
    app.api.seed({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "backup-x", "namespace": NS,
                  "labels": {"batch.kubernetes.io/job-name": "backup"}},
                  "status": {"phase": "Succeeded", "containerStatuses": [
                      {"name": "main", "state": {"terminated": {"exitCode": 0}}}]}})  # fmt: skip
    app.api.log_streams[("backup-x", "main")] = [["2026-12-03T08:00:01.5Z backed up 3 tables"]]
    result = app.delete(rendered(), follow=True)
    assert result.ok, result.error
    logs = [e for e in app.events if isinstance(e, Log)]
    assert [(e.step_name, e.object, e.pod, e.line) for e in logs] == [
        ("backup", f"Job.batch {NS}/backup", "backup-x", "backed up 3 tables")]  # fmt: skip
    assert app.api.follow_requests[0] == ("backup-x", "main", "")
