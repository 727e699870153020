"""set-steps' ``orderFrom``: other tools' ordering annotations as steps. Each row of the mapping table in
krmfn/functions/set_steps/README.md is one case here, by its id (a test checks the two lists are the
same), run through the function as a kpt ResourceList; the example packages under
krmfn/functions/set_steps/examples/ run the same mappings under kpt and kustomize (tests/test_examples.py),
and tests/test_helm.py runs a real chart's ``helm template`` through them."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from krmfn.functions.set_steps import FUNCTION
from krmfn.yaml.io import _load_fast, dump_all_fast

Doc = dict[str, Any]
README_SET_STEPS = Path(__file__).parent.parent / "krmfn/functions/set_steps/README.md"


def obj(kind: str, name: str, **notes: Any) -> Doc:
    api = {"Job": "batch/v1", "Deployment": "apps/v1"}.get(kind, "v1")
    meta: Doc = {"name": name, "namespace": "apps"}
    if notes:
        meta["annotations"] = dict(notes)
    return {"apiVersion": api, "kind": kind, "metadata": meta}


def hook(name: str, events: str, weight: str | None = None, kind: str = "Job", **more: Any) -> Doc:
    notes = {"helm.sh/hook": events, **more}
    if weight is not None:
        notes["helm.sh/hook-weight"] = weight
    return obj(kind, name, **notes)


def argo(name: str, hook: str | None = None, wave: str | None = None, kind: str = "Job") -> Doc:
    notes = {}
    if hook is not None:
        notes["argocd.argoproj.io/hook"] = hook
    if wave is not None:
        notes["argocd.argoproj.io/sync-wave"] = wave
    return obj(kind, name, **notes)


def kapp(name: str, group: str | None = None, rule: str | None = None, kind: str = "Job", **more: Any) -> Doc:
    notes = dict(more)
    if group is not None:
        notes["kapp.k14s.io/change-group"] = group
    if rule is not None:
        notes["kapp.k14s.io/change-rule"] = rule
    return obj(kind, name, **notes)


@dataclass
class Run:
    code: int
    items: list[Doc]
    results: list[Doc]

    def step_of(self) -> dict[str, str]:
        """Each output object's step, by name (onFailure steps prefixed ``!``, onDelete steps ``~``)."""
        out = {}
        for item in self.items:
            notes = item["metadata"].get("annotations") or {}
            mark = "!" if notes.get("krmfn.dev/on-failure") == "true" else ""
            mark = "~" if notes.get("krmfn.dev/on-delete") == "true" else mark
            out[item["metadata"]["name"]] = mark + notes.get("krmfn.dev/step", "")
        return out

    def order(self) -> list[list[str]]:
        """Object names grouped by step, in step order (the steps, the onFailure steps, the onDelete
        steps)."""
        groups: dict[tuple[int, int], list[str]] = {}
        for item in self.items:
            notes = item["metadata"]["annotations"]
            kind = (
                2
                if notes.get("krmfn.dev/on-delete") == "true"
                else notes.get("krmfn.dev/on-failure") == "true"
            )
            key = (int(kind), int(notes["krmfn.dev/step-index"]))
            groups.setdefault(key, []).append(item["metadata"]["name"])
        return [sorted(groups[key]) for key in sorted(groups)]

    def messages(self, severity: str) -> list[str]:
        return [r["message"] for r in self.results if r["severity"] == severity]

    def one(self, severity: str, name: str, annotation: str) -> str:
        """The one result of ``severity`` on object ``name`` at ``annotation``: it names both."""
        found = [
            r
            for r in self.results
            if r["severity"] == severity
            and r.get("resourceRef", {}).get("name") == name
            and r.get("field", {}).get("path") == f"metadata.annotations.{annotation}"
        ]
        assert len(found) == 1, (severity, name, annotation, self.results)
        assert annotation in found[0]["message"]
        return str(found[0]["message"])


def run(order_from: str, items: list[Doc], **config: Any) -> Run:
    cfg = {
        "apiVersion": "fn.krmfn.dev/v1alpha1",
        "kind": "SetSteps",
        "metadata": {"name": "s"},
        "orderFrom": order_from,
        "defaultStep": "deploy",
        "steps": [{"name": "deploy"}],
        **config,
    }
    text = dump_all_fast(
        [
            {
                "apiVersion": "config.kubernetes.io/v1",
                "kind": "ResourceList",
                "items": items,
                "functionConfig": cfg,
            }
        ]
    )
    outcome = FUNCTION.outcome(text, "fast")
    results = [r.to_dict() for r in outcome.results]
    items = _load_fast(outcome.text)["items"] if outcome.text else []
    return Run(outcome.code, items, results)


APP = obj("Deployment", "app")


def helm_pre() -> None:
    out = run(
        "helm",
        [hook("a", "pre-install"), hook("b", "pre-upgrade"), hook("c", "pre-install, pre-upgrade"), APP],
    )
    assert out.order() == [["a", "b", "c"], ["app"]]
    assert out.step_of()["a"] == "helm-pre-0"


def helm_post() -> None:
    out = run("helm", [hook("a", "post-install"), hook("b", "POST-UPGRADE"), APP, hook("c", "pre-upgrade")])
    assert out.order() == [["c"], ["app"], ["a", "b"]]
    assert out.step_of()["a"] == "helm-post-0"


def helm_weight() -> None:
    items = [
        hook("m", "pre-upgrade", "0"),
        hook("sa", "pre-upgrade", "-5", kind="ServiceAccount"),
        hook("late", "pre-upgrade", "10"),
        hook("empty", "pre-upgrade", ""),
        hook("plus", "pre-upgrade", "+10"),
        APP,
        hook("w2", "post-upgrade", "2"),
        hook("w1", "post-upgrade", "-1"),
    ]
    out = run("helm", items)
    assert out.order() == [["sa"], ["empty", "m"], ["late", "plus"], ["app"], ["w1"], ["w2"]]
    assert out.step_of()["sa"] == "helm-pre-minus5"
    assert out.step_of()["w1"] == "helm-post-minus1"


def helm_extra_events() -> None:
    out = run("helm", [hook("a", "pre-install,pre-delete"), APP])
    assert out.order() == [["a"], ["app"]]
    assert "pre-delete" in out.one("info", "a", "helm.sh/hook")


def helm_test() -> None:
    out = run("helm", [hook("t", "test", kind="Pod"), hook("t2", "test-success", kind="Pod"), APP])
    assert out.code == 0
    assert out.order() == [["app"]]
    assert "--skip-tests" in out.one("warning", "t", "helm.sh/hook")
    out.one("warning", "t2", "helm.sh/hook")


def helm_other() -> None:
    out = run("helm", [hook("d", "post-delete"), hook("r", "post-rollback"), hook("p", "pre-rollback"), APP])
    assert out.order() == [["app"]]
    assert "left out" in out.one("warning", "d", "helm.sh/hook")
    out.one("warning", "r", "helm.sh/hook")
    out.one("warning", "p", "helm.sh/hook")


def helm_pre_delete() -> None:
    items = [hook("backup", "pre-delete", "-1"), hook("drain", "pre-delete,post-delete", "3"),
             hook("sa", "pre-delete", "-1", kind="ServiceAccount"), obj("Job", "own"), APP]  # fmt: skip
    out = run("helm", items, onDelete=[{"name": "own", "selectors": [{"name": "own"}]}])
    assert out.code == 0
    assert out.order() == [["app"], ["own"], ["backup", "sa"], ["drain"]]
    assert out.step_of() == {"backup": "~helm-predelete-minus1", "sa": "~helm-predelete-minus1",
                             "drain": "~helm-predelete-3", "own": "~own", "app": "deploy"}  # fmt: skip
    assert "post-delete" in out.one("info", "drain", "helm.sh/hook")
    assert out.messages("warning") == []
    refused = run("helm", items, emit=["depends-on"])
    assert refused.code != 0 and "kpt live" in refused.messages("error")[0]


def helm_mixed() -> None:
    out = run("helm", [hook("x", "pre-install,post-upgrade"), APP])
    assert out.step_of() == {"x": "deploy", "app": "deploy"}
    assert "step-pin" in out.one("warning", "x", "helm.sh/hook")
    pinned = run("helm", [hook("x", "pre-install,post-upgrade", **{"krmfn.dev/step-pin": "deploy"}), APP])
    assert pinned.messages("warning") == []


def helm_unknown() -> None:
    out = run("helm", [hook("x", "pre-instal"), APP])
    assert out.order() == [["app"]]
    assert "'pre-instal'" in out.one("warning", "x", "helm.sh/hook")


def helm_hook_failed() -> None:
    out = run(
        "helm",
        [
            hook("m", "pre-upgrade", **{"helm.sh/hook-delete-policy": "before-hook-creation, hook-failed"}),
            APP,
        ],
    )
    assert out.order() == [["m"], ["app"]]
    assert "recreate-on-failure" in out.one("info", "m", "helm.sh/hook-delete-policy")
    assert not any(i["metadata"]["annotations"].get("krmfn.dev/on-failure") for i in out.items)


def argocd_presync() -> None:
    out = run(
        "argocd", [argo("p2", "PreSync", "2"), argo("p1", "PreSync", "-1"), argo("neg", wave="-9"), APP]
    )
    assert out.order() == [["p1"], ["p2"], ["neg"], ["app"]]
    assert out.step_of()["p1"] == "argocd-presync-minus1"


def argocd_wave_negative() -> None:
    out = run("argocd", [argo("a", wave="-2"), argo("b", "Sync", "-1"), APP])
    assert out.order() == [["a"], ["b"], ["app"]]
    assert out.step_of()["a"] == "argocd-wave-minus2"


def argocd_wave_zero() -> None:
    out = run("argocd", [argo("a", wave="0"), argo("b", "Sync"), argo("c", wave=""), APP])
    assert out.order() == [["a", "app", "b", "c"]]
    assert out.step_of()["a"] == "deploy"


def argocd_wave_positive() -> None:
    out = run("argocd", [argo("a", wave="3"), argo("b", "Sync", "1"), argo("post", "PostSync", "-4"), APP])
    assert out.order() == [["app"], ["b"], ["a"], ["post"]]
    assert out.step_of()["a"] == "argocd-wave-3"


def argocd_postsync() -> None:
    out = run("argocd", [argo("b", "PostSync", "1"), argo("a", "PostSync"), APP])
    assert out.order() == [["app"], ["a"], ["b"]]
    assert out.step_of()["a"] == "argocd-postsync-0"


def argocd_syncfail() -> None:
    config = {"onFailure": [{"name": "notify", "selectors": [{"name": "notify"}]}]}
    out = run("argocd", [argo("f", "SyncFail", "1"), obj("Job", "notify"), APP], **config)
    assert out.step_of() == {"f": "!argocd-syncfail-1", "notify": "!notify", "app": "deploy"}
    assert out.order() == [["app"], ["notify"], ["f"]]


def argocd_skip() -> None:
    out = run("argocd", [argo("s", "Skip"), APP])
    assert out.order() == [["app"]]
    out.one("info", "s", "argocd.argoproj.io/hook")


def argocd_predelete() -> None:
    out = run("argocd", [argo("b", "PreDelete", "2"), argo("a", "PreDelete"), APP])
    assert out.step_of() == {"b": "~argocd-predelete-2", "a": "~argocd-predelete-0", "app": "deploy"}
    assert out.order() == [["app"], ["a"], ["b"]]
    assert out.messages("warning") == []


def argocd_postdelete() -> None:
    out = run("argocd", [argo("d", "PostDelete"), APP])
    assert out.order() == [["app"]]
    out.one("warning", "d", "argocd.argoproj.io/hook")


def argocd_several() -> None:
    out = run("argocd", [argo("x", "PreSync,PostSync"), argo("y", "presync"), APP])
    assert out.step_of() == {"x": "deploy", "y": "deploy", "app": "deploy"}
    assert "several phases" in out.one("warning", "x", "argocd.argoproj.io/hook")
    assert "not one of" in out.one("warning", "y", "argocd.argoproj.io/hook")


def argocd_helm_hook() -> None:
    out = run("argocd", [hook("h", "pre-upgrade", "-3"), argo("both", "PreSync"), APP])
    assert out.step_of() == {"h": "deploy", "both": "argocd-presync-0", "app": "deploy"}
    assert "orderFrom: helm" in out.one("warning", "h", "helm.sh/hook")


def kapp_after() -> None:
    items = [
        kapp("migrate", "apps.example.com/db-migrations"),
        kapp(
            "app",
            rule="upsert after upserting apps.example.com/db-migrations",
            kind="Deployment",
            **{"kapp.k14s.io/change-group": "apps.example.com/app"},
        ),
        kapp(
            "warm",
            rule="upsert after upserting apps.example.com/app",
            **{"kapp.k14s.io/change-group.x": "{namespace}.{kind}.{name}"},
        ),
        kapp(
            "also",
            rule="upsert after upserting apps.example.com/db-migrations",
            **{"kapp.k14s.io/change-rule.2": "upsert after upserting apps.Job.warm"},
        ),
        obj("ConfigMap", "config"),
    ]
    out = run("kapp", items)
    assert out.code == 0, out.results
    assert out.order() == [["config", "migrate"], ["app"], ["warm"], ["also"]]
    assert out.step_of()["also"] == "kapp-after-3"


def kapp_other_rule() -> None:
    items = [
        kapp("a", "g"),
        kapp("b", rule="upsert before upserting g"),
        kapp("c", rule="delete after deleting g"),
    ]
    out = run("kapp", items)
    assert out.order() == [["a", "b", "c"]]
    assert "only 'upsert after upserting" in out.one("warning", "b", "kapp.k14s.io/change-rule")
    out.one("warning", "c", "kapp.k14s.io/change-rule")


def kapp_no_group() -> None:
    out = run("kapp", [kapp("b", rule="upsert after upserting nothing")])
    assert out.order() == [["b"]]
    assert "'nothing'" in out.one("warning", "b", "kapp.k14s.io/change-rule")


def kapp_placeholder() -> None:
    out = run("kapp", [kapp("a", "g-{crd-kind}"), kapp("b", rule="upsert after upserting g-x")])
    assert out.order() == [["a", "b"]]
    assert "{crd-kind}" in out.one("warning", "a", "kapp.k14s.io/change-group")


def kapp_nonce() -> None:
    items = [kapp("check", "g", **{"kapp.k14s.io/nonce": ""}), kapp("app", "g", kind="Deployment")]
    out = run("kapp", items)
    assert out.order() == [["app", "check"]]
    assert "only when its spec" in out.one("info", "check", "kapp.k14s.io/nonce")
    assert out.messages("warning") == []


def kapp_cycle() -> None:
    items = [
        kapp("a", "ga", "upsert after upserting gb"),
        kapp("b", "gb", "upsert after upserting ga"),
        kapp("c", "gc"),
    ]
    out = run("kapp", items)
    assert out.code != 0
    (message,) = out.messages("error")
    assert "cycle" in message and "Job apps/a" in message and "Job apps/b" in message
    assert "Job apps/c" not in message


HOSTILE_WEIGHTS = [
    "1e3",
    " 5",
    "5 ",
    "٣",
    "99999999999",
    "2147483648",
    "-2147483649",
    "0x10",
    "1_0",
    "5\u200b",
    "\x1b[2J",
    "٣" * 2000,
]


def hostile() -> None:
    for value in HOSTILE_WEIGHTS:
        for tool, item in (
            ("helm", hook("h", "pre-upgrade", value)),
            ("argocd", argo("h", "PreSync", value)),
        ):
            out = run(tool, [item, APP])
            assert out.code != 0
            (result,) = [r for r in out.results if r["severity"] == "error"]
            key = "helm.sh/hook-weight" if tool == "helm" else "argocd.argoproj.io/sync-wave"
            assert result["resourceRef"]["name"] == "h" and key in result["message"], result
            assert len(result["message"]) < 400 and "\x1b" not in repr(result["message"]).replace("\\x1b", "")
    for edge in ("2147483647", "-2147483648"):
        assert run("helm", [hook("h", "pre-upgrade", edge), APP]).code == 0
    out = run("helm", [hook("h", "pre-upgrade", 5), APP])  # type: ignore[arg-type]  # a number, unquoted
    assert out.code != 0
    assert "must be a string" in out.one("error", "h", "helm.sh/hook-weight")
    out = run("helm", [hook("h", "pre-upgrade," * 200), APP])
    assert "over the limit of 1024" in out.one("error", "h", "helm.sh/hook")
    out = run("kapp", [kapp("a", "grüppe"), kapp("b", rule="upsert after upserting")])
    assert out.code != 0
    assert "not a change group name" in out.one("error", "a", "kapp.k14s.io/change-group")
    assert "not a kapp change rule" in out.one("error", "b", "kapp.k14s.io/change-rule")


CASES: dict[str, Callable[[], None]] = {
    name.replace("_", "-"): fn
    for name, fn in globals().items()
    if callable(fn) and name.startswith(("helm_", "argocd_", "kapp_", "hostile"))
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_mapping_row(case: str) -> None:
    CASES[case]()


def test_every_row_of_the_readme_table_is_a_case() -> None:
    text = README_SET_STEPS.read_text()
    section = text[text.index("### Other tools' ordering annotations") :]
    section = section[: section.index("\n### ", 5)]
    rows = re.findall(r"^\| `([a-z-]+)` \|", section, re.MULTILINE)
    assert sorted(rows) == sorted(CASES)


def test_generated_steps_are_idempotent_and_follow_the_config() -> None:
    items = [hook("m", "pre-upgrade", "1"), APP, hook("w", "post-install")]
    first = run("helm", items)
    again = run("helm", first.items)
    assert again.items == first.items
    notes = {i["metadata"]["name"]: i["metadata"]["annotations"] for i in first.items}
    assert notes["m"]["krmfn.dev/step-timeout"] == "5m0s"
    assert notes["w"]["krmfn.dev/wait"] == "true" and "krmfn.dev/wait" not in notes["app"]


def test_a_pin_wins_over_the_annotations_and_the_annotations_over_selectors() -> None:
    config = {"steps": [{"name": "deploy", "selectors": [{"kind": "Job"}]}]}
    out = run(
        "helm",
        [
            hook("m", "pre-upgrade"),
            hook("p", "pre-upgrade", **{"krmfn.dev/step-pin": "deploy"}),
            obj("Job", "plain"),
        ],
        **config,
    )
    assert out.step_of() == {"m": "helm-pre-0", "p": "deploy", "plain": "deploy"}


def test_without_order_from_the_annotations_are_ignored() -> None:
    out = run("", [hook("m", "pre-upgrade"), hook("t", "test"), APP])
    assert set(out.step_of().values()) == {"deploy"} and len(out.items) == 3


def test_too_many_generated_steps_is_an_error_saying_how_many() -> None:
    out = run("helm", [hook(f"h{i}", "pre-upgrade", str(i)) for i in range(20)] + [APP])
    (message,) = out.messages("error")
    assert "ask for 20 more steps, 21 in all, over the limit of 20" in message


def test_a_generated_name_may_not_be_a_config_step() -> None:
    out = run(
        "helm", [hook("m", "pre-upgrade"), APP], steps=[{"name": "helm-pre-0"}], defaultStep="helm-pre-0"
    )
    assert any("'helm-pre-0' is generated" in m for m in out.messages("error"))


def test_order_from_argocd_with_emit_argocd_is_a_config_error() -> None:
    out = run("argocd", [APP], emit=["argocd"])
    assert out.code != 0
    assert any("reads the sync waves" in r["message"] for r in out.results)


def test_errors_leave_out_nothing() -> None:
    out = run("helm", [hook("t", "test"), hook("bad", "pre-upgrade", "x"), APP])
    assert out.code != 0
    assert [i["metadata"]["name"] for i in out.items] in ([], ["t", "bad", "app"])
    assert all("krmfn.dev/step" not in (i["metadata"].get("annotations") or {}) for i in out.items)


def test_a_hook_that_needs_a_release_object_is_an_ordering_error() -> None:
    """A pre-upgrade hook Job that runs as the release's ServiceAccount waits for a later step (on a Helm
    install it hangs too): set-steps' ordering check names both steps."""
    job = hook("m", "pre-upgrade")
    job["spec"] = {"template": {"spec": {"serviceAccountName": "app", "restartPolicy": "Never",
                                         "containers": [{"name": "m", "image": "busybox"}]}}}  # fmt: skip
    out = run("helm", [obj("ServiceAccount", "app"), job, APP])
    (message,) = out.messages("error")
    assert (
        "in step 'helm-pre-0'" in message and "ServiceAccount apps/app, in the later step 'deploy'" in message
    )
