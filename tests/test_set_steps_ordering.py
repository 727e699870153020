"""set-steps' ordering checks on generated layouts, its own annotations against a user's pin, and the app
name it writes for the runner's inventory."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from krmfn.functions.set_steps import FUNCTION
from krmfn.yaml.io import _load_fast, dump_all_fast

Doc = dict[str, Any]
STEPS = ["first", "second", "third"]
EXAMPLES = Path(__file__).resolve().parent.parent


def config(**extra: Any) -> Doc:
    return {
        "apiVersion": "fn.krmfn.dev/v1alpha1",
        "kind": "SetSteps",
        "metadata": {"name": "steps"},
        "steps": [{"name": name} for name in STEPS],
        **extra,
    }


def pinned(doc: Doc, step: str) -> Doc:
    doc["metadata"].setdefault("annotations", {})["krmfn.dev/step-pin"] = step
    return doc


def run(items: list[Doc], cfg: Doc | None = None) -> tuple[int, list[Doc], list[Doc]]:
    text = dump_all_fast([{"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
                           "items": items, "functionConfig": cfg or config()}])  # fmt: skip
    outcome = FUNCTION.outcome(text, "fast")
    out = _load_fast(outcome.text)
    return outcome.code, out["items"], [r.to_dict() for r in outcome.results]


def errors(results: list[Doc]) -> list[str]:
    return [r["message"] for r in results if r["severity"] == "error"]


# --- a pod template that uses what a later step applies -----------------------------------------------------

WORKLOADS = {
    "Job": ("batch/v1", "spec.template"),
    "CronJob": ("batch/v1", "spec.jobTemplate.spec.template"),
    "Deployment": ("apps/v1", "spec.template"),
    "StatefulSet": ("apps/v1", "spec.template"),
    "DaemonSet": ("apps/v1", "spec.template"),
    "Pod": ("v1", ""),
}

# (kind used, the pod spec that uses the object "needed", whether the use may be optional)
USES: dict[str, tuple[str, Doc, bool]] = {
    "envFrom-configMap": ("ConfigMap", {"containers": [{"name": "c", "envFrom": [
        {"configMapRef": {"name": "needed"}}]}]}, True),
    "env-secretKeyRef": ("Secret", {"containers": [{"name": "c", "env": [
        {"name": "X", "valueFrom": {"secretKeyRef": {"name": "needed", "key": "k"}}}]}]}, True),
    "initContainer-env-configMapKeyRef": ("ConfigMap", {"containers": [{"name": "c"}], "initContainers": [
        {"name": "i", "env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "needed"}}}]}
    ]}, True),
    "volume-configMap": ("ConfigMap", {"containers": [{"name": "c"}], "volumes": [
        {"name": "v", "configMap": {"name": "needed"}}]}, True),
    "volume-secret": ("Secret", {"containers": [{"name": "c"}], "volumes": [
        {"name": "v", "secret": {"secretName": "needed"}}]}, True),
    "projected-secret": ("Secret", {"containers": [{"name": "c"}], "volumes": [
        {"name": "v", "projected": {"sources": [{"secret": {"name": "needed"}}]}}]}, True),
    "serviceAccountName": ("ServiceAccount", {"containers": [{"name": "c"}],
                                              "serviceAccountName": "needed"}, False),
    "imagePullSecrets": ("Secret", {"containers": [{"name": "c"}], "imagePullSecrets": [{"name": "needed"}]},
                         False),
    "persistentVolumeClaim": ("PersistentVolumeClaim", {"containers": [{"name": "c"}], "volumes": [
        {"name": "v", "persistentVolumeClaim": {"claimName": "needed"}}]}, False),
}  # fmt: skip


def workload(kind: str, pod_spec: Doc) -> Doc:
    api_version, path = WORKLOADS[kind]
    obj: Doc = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "user", "namespace": "apps"}}
    template: Doc = {"spec": pod_spec}
    if not path:
        obj["spec"] = pod_spec
        return obj
    node = obj
    parts = path.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = template
    return obj


def make_optional(pod_spec: Doc) -> Doc:
    """The same spec with every reference marked optional: true."""

    def visit(value: Any) -> None:
        if isinstance(value, dict):
            for key in (
                "configMapRef",
                "secretRef",
                "configMapKeyRef",
                "secretKeyRef",
                "configMap",
                "secret",
            ):
                if isinstance(value.get(key), dict):
                    value[key]["optional"] = True
            for child in value.values():
                visit(child)
        elif isinstance(value, list):
            for child in value:
                visit(child)

    visit(pod_spec)
    return pod_spec


LAYOUTS = [
    pytest.param(kind, use, user_step, needed_step, id=f"{kind}-{use}-{user_step}-uses-{needed_step}")
    for kind, use in itertools.product(WORKLOADS, USES)
    for user_step, needed_step in [(0, 2), (1, 1), (1, 0)]
]


@pytest.mark.parametrize(("kind", "use", "user_step", "needed_step"), LAYOUTS)
def test_pod_template_using_an_object_of_a_later_step_is_an_error_naming_both(
    kind: str, use: str, user_step: int, needed_step: int
) -> None:
    needed_kind, pod_spec, _ = USES[use]
    needed = {"apiVersion": "v1", "kind": needed_kind, "metadata": {"name": "needed", "namespace": "apps"}}
    user = workload(kind, _copy(pod_spec))
    code, items, results = run([pinned(user, STEPS[user_step]), pinned(needed, STEPS[needed_step])])
    if needed_step <= user_step:
        assert code == 0, errors(results)
        return
    assert code == 1
    message = f"in step '{STEPS[user_step]}', but its pod template uses {needed_kind} apps/needed, in the "
    message += f"later step '{STEPS[needed_step]}'"
    found = [r for r in results if r["severity"] == "error"]
    assert [r["message"].startswith(message) for r in found] == [True], found
    assert found[0]["resourceRef"]["kind"] == kind
    assert "krmfn.dev/step" not in items[0]["metadata"]["annotations"]  # all or nothing: nothing written


# What kustomize leaves on an object its overlay renamed, as the functions see it inside the build: the
# pod template still says `needed` (kustomize fixes references last), the object is already renamed.
RENAMES = {
    "namePrefix": ("prod-needed", {"prefixes": "prod-", "previousNames": "needed"}),
    "nameSuffix": ("needed-eu", {"suffixes": "-eu", "previousNames": "needed"}),
    "two-overlays": ("prod-eu-needed", {"prefixes": "eu-,prod-", "previousNames": "needed,eu-needed"}),
    "generator": ("needed", {"needsHashSuffix": "enabled"}),
    "generator-and-prefix": ("prod-needed", {"needsHashSuffix": "enabled", "prefixes": "prod-",
                                             "previousNames": "needed"}),
}  # fmt: skip


def renamed(kind: str, how: str) -> Doc:
    name, notes = RENAMES[how]
    annotations = {f"internal.config.kubernetes.io/{k}": v for k, v in notes.items()}
    if "previousNames" in notes:
        count = len(notes["previousNames"].split(","))
        annotations["internal.config.kubernetes.io/previousKinds"] = ",".join([kind] * count)
        annotations["internal.config.kubernetes.io/previousNamespaces"] = ",".join(["apps"] * count)
    meta = {"name": name, "namespace": "apps", "annotations": annotations}
    return {"apiVersion": "v1", "kind": kind, "metadata": meta}


RENAMED_LAYOUTS = [
    pytest.param(kind, use, how, id=f"{kind}-{use}-{how}")
    for kind, use, how in itertools.product(WORKLOADS, USES, RENAMES)
    if not how.startswith("generator") or USES[use][0] in ("ConfigMap", "Secret")  # what generators make
]


@pytest.mark.parametrize(("kind", "use", "how"), RENAMED_LAYOUTS)
def test_inside_a_kustomize_build_a_renamed_object_is_found_as_kustomize_will_find_it(
    kind: str, use: str, how: str
) -> None:
    """Issue 34: under namePrefix the check compared `needed` with `prod-needed` and passed."""
    needed_kind, pod_spec, _ = USES[use]
    needed = renamed(needed_kind, how)
    user = workload(kind, _copy(pod_spec))
    user["metadata"]["annotations"] = {
        "internal.config.kubernetes.io/prefixes": RENAMES[how][1].get("prefixes", ""),
        "internal.config.kubernetes.io/suffixes": RENAMES[how][1].get("suffixes", ""),
    }
    code, _, results = run([pinned(user, "first"), pinned(needed, "second")])
    assert code == 1
    assert [m.split(":")[0] for m in errors(results)] == [
        f"in step 'first', but its pod template uses {needed_kind} apps/{needed['metadata']['name']}, in the "
        "later step 'second'"
    ]
    code, _, results = run([pinned(user, "second"), pinned(needed, "first")])
    assert code == 0, errors(results)


@pytest.mark.parametrize("use", [u for u, (_, _, optional) in USES.items() if optional])
def test_an_optional_reference_does_not_block_a_pod_and_is_not_reported(use: str) -> None:
    needed_kind, pod_spec, _ = USES[use]
    needed = {"apiVersion": "v1", "kind": needed_kind, "metadata": {"name": "needed", "namespace": "apps"}}
    user = workload("Job", make_optional(_copy(pod_spec)))
    code, _, results = run([pinned(user, "first"), pinned(needed, "second")])
    assert code == 0, errors(results)


def test_a_reference_in_another_namespace_or_outside_the_stream_is_not_an_ordering_question() -> None:
    _, pod_spec, _ = USES["envFrom-configMap"]
    other = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "needed", "namespace": "other"}}
    code, _, results = run([pinned(workload("Job", _copy(pod_spec)), "first"), pinned(other, "third")])
    assert code == 0, errors(results)


@pytest.mark.parametrize(("ns_step", "obj_step"), [(1, 0), (2, 1), (0, 0), (0, 2)])
@pytest.mark.parametrize("kind", ["ConfigMap", "Deployment", "Job", "Role"])
def test_an_object_before_its_namespace_is_an_error_naming_both(
    kind: str, ns_step: int, obj_step: int
) -> None:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}}
    api_version = {"Deployment": "apps/v1", "Job": "batch/v1", "Role": "rbac.authorization.k8s.io/v1"}
    obj = {
        "apiVersion": api_version.get(kind, "v1"),
        "kind": kind,
        "metadata": {"name": "x", "namespace": "apps"},
    }
    code, _, results = run([pinned(namespace, STEPS[ns_step]), pinned(obj, STEPS[obj_step])])
    if ns_step <= obj_step:
        assert code == 0, errors(results)
        return
    assert errors(results) == [
        f"in step '{STEPS[obj_step]}', but it lives in Namespace apps, in the later step "
        f"'{STEPS[ns_step]}': the API server refuses it while namespace apps does not exist; move Namespace "
        f"apps to step '{STEPS[obj_step]}' or earlier (a selector or the annotation krmfn.dev/step-pin), or "
        f"this object to step '{STEPS[ns_step]}' or later"
    ]


def test_a_custom_resource_before_its_crd_is_an_error_and_a_cluster_scoped_one_ignores_namespaces() -> None:
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced", "names": {"kind": "Widget"}}}  # fmt: skip
    widget = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "apps"},
    }
    other = {"apiVersion": "other.io/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "apps"}}
    code, _, results = run([pinned(crd, "second"), pinned(widget, "first"), pinned(other, "first")])
    assert code == 1
    assert [m.split(":")[0] for m in errors(results)] == [
        "in step 'first', but its kind is defined by CustomResourceDefinition widgets.example.com, in the "
        "later step 'second'"
    ]
    code, _, results = run([pinned(crd, "first"), pinned(widget, "second")])
    assert code == 0, errors(results)


def test_a_selector_that_matches_nothing_names_what_it_may_mean_and_a_selector_that_lasts() -> None:
    jobs = [
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {
            "name": "prod-db-migration-5c3f1a2b", "namespace": "a", "labels": {"app": "migrate", "tier": "x"},
            "annotations": {"krmfn.dev/job-base-name": "prod-db-migration"}}},
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "cache-warmup", "namespace": "a",
                                                               "labels": {"tier": "x"}}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "db-migration-config-89g4tffbfk",
                                                               "namespace": "a"}},
    ]  # fmt: skip
    cfg = config(defaultStep="second")
    cfg["steps"][0]["selectors"] = [
        {"kind": "Job", "name": "db-migration"},
        {"kind": "Job", "name": "cache-warmup"},
    ]
    cfg["steps"][2]["selectors"] = [
        {"name": "cache-warmpu"},
        {"kind": "Secret", "name": "nothing-like-it"},
        {"kind": "ConfigMap", "name": "db-migration-config"},  # a generator's hash is seen through
    ]
    code, _, results = run(jobs, cfg)
    found = [
        (r["severity"], r["field"]["path"], r["message"])
        for r in results
        if "selectors" in r.get("field", {}).get("path", "")
    ]
    assert code == 1
    assert found == [
        ("error", "functionConfig.steps[0].selectors[0]",
         "step 'first': this selector matches no resource, so Job a/prod-db-migration-5c3f1a2b falls to the "
         "later step 'second'; it may mean Job a/prod-db-migration-5c3f1a2b: select {kind: Job, name: "
         "prod-db-migration} or {kind: Job, labels: {app: migrate}}; to accept this, set "
         "unmatchedSelectors: warning"),
        ("warning", "functionConfig.steps[2].selectors[0]",
         "step 'third': this selector matches no resource; it may mean Job a/cache-warmup: select "
         "{name: cache-warmup}"),
        ("warning", "functionConfig.steps[2].selectors[1]",
         "step 'third': this selector matches no resource"),
    ]  # fmt: skip
    cfg["unmatchedSelectors"] = "warning"
    code, items, results = run(jobs, cfg)
    assert code == 0, errors(results)
    assert [r["severity"] for r in results if "selectors" in r.get("field", {}).get("path", "")] == [
        "warning"
    ] * 3
    assert items[0]["metadata"]["annotations"]["krmfn.dev/step"] == "second"


def _object(kind: str, name: str, step: str | None = None, **labels: str) -> Doc:
    api_version = {"Job": "batch/v1", "Deployment": "apps/v1"}.get(kind, "v1")
    doc: Doc = {"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": "a"}}
    if labels:
        doc["metadata"]["labels"] = labels
    return pinned(doc, step) if step else doc


# (what the stream holds, the selectors of step 'first' (defaultStep 'second'), the severity expected)
UNMATCHED = {
    "step-left-empty": ([_object("ConfigMap", "settings")], [{"kind": "Job", "name": "migrate"}], "error"),
    "kind-left-to-a-later-step": (
        [_object("Job", "prod-migrate"), _object("ConfigMap", "settings")],
        [{"kind": "Job", "name": "migrate"}, {"kind": "ConfigMap"}], "error"),
    "kindless-name-left-to-a-later-step": (
        [_object("Job", "prod-migrate"), _object("ConfigMap", "settings")],
        [{"name": "migrate"}, {"kind": "ConfigMap"}], "error"),
    "kind-pinned-later-on-purpose": (
        [_object("Job", "other", "third"), _object("ConfigMap", "settings")],
        [{"kind": "Job", "name": "migrate"}, {"kind": "ConfigMap"}], "warning"),
    "kind-placed-later-by-its-own-selector": (
        [_object("Job", "warmup", None, role="warmup"), _object("ConfigMap", "settings")],
        [{"kind": "Job", "name": "migrate"}, {"kind": "ConfigMap"}], "warning"),
    "kind-in-an-earlier-step": (
        [_object("Job", "prod-migrate", "first"), _object("ConfigMap", "settings")],
        [{"kind": "ConfigMap", "name": "config"}, {"kind": "ConfigMap"}], "warning"),
    "nothing-of-its-kind": (
        [_object("ConfigMap", "settings")], [{"kind": "Secret", "name": "s"}, {"kind": "ConfigMap"}],
        "warning"),
}  # fmt: skip


@pytest.mark.parametrize("case", UNMATCHED)
@pytest.mark.parametrize("where", ["steps", "onFailure"])
def test_an_unmatched_selector_is_an_error_when_the_order_the_config_asks_for_is_lost(
    case: str, where: str
) -> None:
    items, selectors, severity = UNMATCHED[case]
    cfg = config(defaultStep="second")
    if any(i["metadata"].get("labels") for i in items):
        cfg["steps"][2]["selectors"] = [{"kind": "Job", "labels": {"role": "warmup"}}]
    if where == "steps":
        cfg["steps"][0]["selectors"] = selectors
    else:  # the same as an onFailure step after the steps
        cfg["onFailure"] = [{"name": "first-failure", "selectors": selectors}]
        if severity == "error" and case != "step-left-empty":
            severity = "warning"  # what falls to a step of the run is earlier than any onFailure step
        if case == "kind-in-an-earlier-step":
            items = [_object("Job", "prod-migrate", "second"), items[1]]
    code, _, results = run(_copy(items), cfg)
    prefix = "functionConfig.steps[0]" if where == "steps" else "functionConfig.onFailure[0]"
    found = [r for r in results if r.get("field", {}).get("path", "") == f"{prefix}.selectors[0]"]
    assert [r["severity"] for r in found] == [severity], results
    assert code == (1 if severity == "error" else 0), errors(results)
    if severity == "error":
        cfg = _copy(cfg)
        cfg["unmatchedSelectors"] = "warning"
        code, _, results = run(_copy(items), cfg)
        assert code == 0, errors(results)


def test_a_suggestion_never_names_a_hash_and_names_each_object_once() -> None:
    """The pipe after a build: every name is final; the suggestion is the name the next release keeps."""
    job = _object("Job", "prod-db-migrate-eu-0a1b2c3d")
    job["metadata"]["annotations"] = {"krmfn.dev/job-base-name": "prod-db-migrate-eu"}
    config_map = _object("ConfigMap", "prod-web-config-eu-89g4tffbfk")
    cfg = config(defaultStep="second")
    cfg["steps"][0]["selectors"] = [{"kind": "Job", "name": "db-migrate"}, {"name": "web-config"}]
    code, _, results = run([job, config_map], cfg)
    messages = [r["message"] for r in results if r["severity"] == "error"]
    assert code == 1
    assert messages == [
        "step 'first': this selector matches no resource, so the step has no resources and Job "
        "a/prod-db-migrate-eu-0a1b2c3d falls to the later step 'second'; it may mean Job "
        "a/prod-db-migrate-eu-0a1b2c3d: select {kind: Job, name: prod-db-migrate-eu}; to accept this, set "
        "unmatchedSelectors: warning",
        "step 'first': this selector matches no resource, so the step has no resources and ConfigMap "
        "a/prod-web-config-eu-89g4tffbfk falls to the later step 'second'; it may mean ConfigMap "
        "a/prod-web-config-eu-89g4tffbfk: select {name: prod-web-config-eu}; to accept this, set "
        "unmatchedSelectors: warning",
    ]
    cfg["steps"][0]["selectors"] = [
        {"kind": "Job", "name": "prod-db-migrate-eu"},
        {"name": "prod-web-config-eu"},
    ]
    code, items, results = run([job, config_map], cfg)
    assert code == 0, errors(results)
    assert [i["metadata"]["annotations"]["krmfn.dev/step"] for i in items] == ["first", "first"]


# --- set-steps' own annotations follow the config; a user's pin stays --------------------------------------


def test_annotations_of_an_earlier_render_follow_a_changed_config_and_a_pin_stays() -> None:
    items = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "a"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kept", "namespace": "a"}},
    ]
    pinned(items[1], "third")
    cfg = config(defaultStep="second")
    _, rendered, _ = run(items, cfg)  # the first render, written back in place (kpt fn render)
    assert [i["metadata"]["annotations"]["krmfn.dev/step"] for i in rendered] == ["second", "third"]
    cfg["steps"][0]["selectors"] = [{"kind": "ConfigMap"}]
    code, again, results = run(rendered, cfg)
    assert code == 0
    assert [i["metadata"]["annotations"]["krmfn.dev/step"] for i in again] == ["first", "third"]
    assert [r["message"] for r in results if r.get("resourceRef", {}).get("name") == "settings"] == [
        "moves from step 'second' (an earlier render) to 'first', as the config says; to keep a resource in "
        "a step whatever the selectors say, annotate it krmfn.dev/step-pin"
    ]
    assert again[1]["metadata"]["annotations"]["krmfn.dev/step-pin"] == "third"


def test_app_is_written_on_every_resource_and_must_name_a_secret() -> None:
    items = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "a"}}]
    code, out, _ = run(items, config(defaultStep="first", app="shop"))
    assert code == 0
    assert out[0]["metadata"]["annotations"]["krmfn.dev/app"] == "shop"
    code, _, results = run(items, config(defaultStep="first", app="Shop_1"))
    assert code == 1
    assert errors(results)[0].startswith("app 'Shop_1' is not a DNS-1123 subdomain")


def _copy(value: Any) -> Any:
    return _load_fast(dump_all_fast([value]))
