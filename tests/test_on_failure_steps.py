"""On-failure steps without a cluster: set-steps' ``onFailure:`` writes ``krmfn.dev/on-failure``, the one
step grouping (krmfn/k8s/step_grouping.py) keeps them apart, ``krmfn plan`` shows them, ``krmfn export argocd
--hooks`` makes them SyncFail hooks and ``krmfn export resourceset`` refuses them unless
``--drop-on-failure``. tests/cluster/test_apply_on_failure.py runs them with ``krmfn apply``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from krmfn.export import main as export_main
from krmfn.functions.set_steps import FUNCTION
from krmfn.k8s.step_grouping import group
from krmfn.runner.commands.cli import main as runner_main
from krmfn.yaml.io import _load_fast, dump_all_fast, load_all_fast

Doc = dict[str, Any]


def obj(kind: str, name: str, **notes: str) -> Doc:
    api = "batch/v1" if kind == "Job" else "v1"
    meta: Doc = {"name": name, "namespace": "apps"}
    if notes:
        meta["annotations"] = dict(notes)
    return {"apiVersion": api, "kind": kind, "metadata": meta}


def set_steps(items: list[Doc], **config: Any) -> tuple[int, list[Doc], list[str]]:
    cfg = {"apiVersion": "fn.krmfn.dev/v1alpha1", "kind": "SetSteps", "metadata": {"name": "s"},
           "steps": [{"name": "migrate", "selectors": [{"kind": "Job", "name": "migrate"}]},
                     {"name": "deploy"}],
           "defaultStep": "deploy",
           "onFailure": [
               {"name": "notify", "timeout": "2m", "selectors": [{"kind": "Job", "name": "notify"}]},
               {"name": "restore", "selectors": [{"kind": "Job", "name": "restore"}]}],
           **config}  # fmt: skip
    text = dump_all_fast([{"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": items,
                           "functionConfig": cfg}])  # fmt: skip
    outcome = FUNCTION.outcome(text, "fast")
    results = [r.to_dict() for r in outcome.results]
    errors = [r["message"] for r in results if r["severity"] == "error"]
    return outcome.code, _load_fast(outcome.text)["items"], errors


def notes(item: Doc) -> dict[str, str]:
    return dict(item["metadata"].get("annotations") or {})


def rendered() -> list[Doc]:
    code, items, errors = set_steps(
        [obj("Job", "migrate"), obj("ConfigMap", "c"), obj("Job", "notify"), obj("Job", "restore")]
    )
    assert code == 0, errors
    return items


def test_set_steps_marks_the_on_failure_steps() -> None:
    by_name = {item["metadata"]["name"]: notes(item) for item in rendered()}
    assert by_name["notify"] == {
        "krmfn.dev/step": "notify", "krmfn.dev/step-index": "0", "krmfn.dev/step-timeout": "2m0s",
        "krmfn.dev/on-failure": "true",
    }  # fmt: skip
    assert by_name["restore"]["krmfn.dev/step-index"] == "1"
    assert by_name["c"]["krmfn.dev/wait"] == "true"  # the final step is the last of the steps
    assert "krmfn.dev/on-failure" not in by_name["migrate"]


def test_set_steps_moves_an_object_out_of_an_on_failure_step() -> None:
    before = rendered()
    changed = [{"name": "notify", "selectors": [{"kind": "Job", "name": "x"}]}]
    code, _, errors = set_steps(before, onFailure=changed)
    assert code == 1 and "this selector matches no resource, so the step has no resources" in errors[0]
    code, items, _ = set_steps(before, onFailure=changed, unmatchedSelectors="warning")  # it is meant
    assert code == 0
    moved = next(i for i in items if i["metadata"]["name"] == "notify")
    assert "krmfn.dev/on-failure" not in notes(moved) and notes(moved)["krmfn.dev/step"] == "deploy"


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"defaultStep": "notify"},
            "'notify' is an onFailure step, which cannot be the default; steps: migrate",
        ),
        ({"defaultStep": "nope"}, "unknown step 'nope'; steps: migrate, deploy"),
        ({"onFailure": [{"name": "deploy"}]}, "duplicate step name 'deploy' (also steps[1])"),
        ({"onFailure": [{"name": "n", "timeout": "soon"}]}, "soon"),
    ],
)
def test_set_steps_refuses_bad_on_failure_configs(config: Doc, message: str) -> None:
    code, _, errors = set_steps([obj("Job", "migrate")], **config)
    assert code != 0 and any(message in e for e in errors), errors


def test_a_pin_can_name_an_on_failure_step() -> None:
    pinned = [obj("Job", "other", **{"krmfn.dev/step-pin": "restore"})]
    code, items, _ = set_steps(pinned, unmatchedSelectors="warning")  # the other steps stay empty
    assert code == 0 and notes(items[0])["krmfn.dev/on-failure"] == "true"


def test_the_grouping_keeps_on_failure_steps_apart() -> None:
    steps = group(rendered())
    assert [s.name for s in steps.steps] == ["migrate", "deploy"]
    assert [s.name for s in steps.on_failure] == ["notify", "restore"]
    assert steps.wait


@pytest.mark.parametrize(
    ("objects", "message"),
    [
        ([obj("Job", "n", **{"krmfn.dev/on-failure": "yes"})], 'must be "true" or "false", got \'yes\''),
        ([obj("Job", "a", **{"krmfn.dev/step": "x", "krmfn.dev/step-index": "0"}),
          obj("Job", "b", **{"krmfn.dev/step": "x", "krmfn.dev/step-index": "0",
                             "krmfn.dev/on-failure": "true"})],
         "two steps are named 'x'"),
    ],
)  # fmt: skip
def test_the_grouping_refuses_what_one_set_steps_run_never_writes(objects: list[Doc], message: str) -> None:
    with pytest.raises(Exception, match=message):
        group(objects)


def test_plan_shows_the_on_failure_steps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "rendered.yaml"
    path.write_text(dump_all_fast(rendered()))
    assert runner_main(["plan", "-f", str(path)]) == 0
    text = capsys.readouterr().out
    assert "on failure: step 2 notify (timeout 2m0s, waits for health)\n  1. Job.batch apps/notify\n" in text
    assert runner_main(["plan", "-f", str(path), "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [s["name"] for s in data["steps"]] == ["migrate", "deploy"]
    assert [(s["index"], s["name"], s["objects"]) for s in data["onFailure"]] == [
        (2, "notify", ["Job.batch apps/notify"]), (3, "restore", ["Job.batch apps/restore"])]  # fmt: skip


def test_export_argocd_makes_them_sync_fail_hooks_and_only_with_hooks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "rendered.yaml"
    path.write_text(dump_all_fast(rendered()))
    assert export_main(["export", "argocd", "-f", str(path)]) == 1
    err = capsys.readouterr().err
    assert (
        "Job apps/notify is in the on-failure step 'notify' (krmfn.dev/on-failure), which Argo CD runs "
        "only as a SyncFail hook: pass --hooks"
    ) in err
    assert export_main(["export", "argocd", "-f", str(path), "--hooks"]) == 0
    out = {o["metadata"]["name"]: notes(o) for o in load_all_fast(capsys.readouterr().out)}
    assert out["notify"]["argocd.argoproj.io/hook"] == "SyncFail"
    assert out["restore"]["argocd.argoproj.io/sync-wave"] == "1"
    assert out["notify"]["argocd.argoproj.io/hook-delete-policy"] == "BeforeHookCreation"
    assert "argocd.argoproj.io/hook" not in out["c"]


def test_export_resourceset_refuses_them_unless_dropped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "rendered.yaml"
    path.write_text(dump_all_fast(rendered()))
    argv = ["export", "resourceset", "-f", str(path), "--name", "app", "-n", "apps"]
    assert export_main(argv) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert "on-failure step 'notify'" in line and "pass --drop-on-failure" in line
    assert export_main([*argv, "--drop-on-failure"]) == 0
    out = capsys.readouterr().out
    assert "notify" not in out and "restore" not in out and "migrate" in out
