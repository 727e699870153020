"""Triggers (``krmfn.dev/hash-from``): a generated matrix of every trigger kind against every kind of
change, one at a time and in pairs (a trigger's change with an unrelated one), asserting the Job's name
changes exactly when a trigger changed; and the matrix of what is refused. Three readers must agree on
both: hash-job-names (the name), the runner's plan (the run hash and the name hash it checks) and
validate-jobs (no name-hash-mismatch on the output, the same refusal)."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable
from typing import Any

import pytest

from krmfn.functions.hash_job_names import FUNCTION as HASH
from krmfn.functions.set_config_checksum import FUNCTION as CHECKSUM
from krmfn.functions.validate_jobs import FUNCTION as VALIDATE
from krmfn.k8s.jobhash import name_hash
from krmfn.runner.errors import SourceError
from krmfn.runner.plan import build_plan
from krmfn.yaml.io import _load_fast, dump_fast

Doc = dict[str, Any]
HASH_FROM = "krmfn.dev/hash-from"
FIELD = f"metadata.annotations.{HASH_FROM}"
ARGS = "field:spec.template.spec.containers[name=migrate].args"


def stream(hash_from: str | None = None) -> list[Doc]:
    """A migration Job that reads a schema ConfigMap and a password Secret, with a sidecar and an env
    var; a web app's ConfigMap beside it that the Job does not use."""
    notes = {HASH_FROM: hash_from} if hash_from is not None else {}
    job: Doc = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "db-migration", "namespace": "shop", "annotations": notes},
        "spec": {
            "backoffLimit": 1,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "initContainers": [{"name": "wait", "image": "busybox:1.36"}],
                    "containers": [
                        {
                            "name": "migrate",
                            "image": "shop-migrate:1.0",
                            "args": ["up"],
                            "env": [
                                {"name": "LOG_LEVEL", "value": "info"},
                                {
                                    "name": "PASSWORD",
                                    "valueFrom": {"secretKeyRef": {"name": "db-password", "key": "pw"}},
                                },
                            ],
                            "volumeMounts": [{"name": "schema", "mountPath": "/schema"}],
                        },
                        {"name": "proxy", "image": "cloud-sql-proxy:2.0"},
                    ],
                    "volumes": [{"name": "schema", "configMap": {"name": "db-schema"}}],
                }
            },
        },
    }
    return [
        job,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "db-schema", "namespace": "shop"},
         "data": {"schema.sql": "create table t (id int);"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db-password", "namespace": "shop"},
         "stringData": {"pw": "s3cret"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-config", "namespace": "shop"},
         "data": {"THEME": "dark"}},
    ]  # fmt: skip


def _container(docs: list[Doc], name: str) -> Doc:
    pod = docs[0]["spec"]["template"]["spec"]
    return next(c for c in pod["initContainers"] + pod["containers"] if c["name"] == name)


CHANGES: dict[str, Callable[[list[Doc]], None]] = {
    "migrate-image": lambda d: _container(d, "migrate").update(image="shop-migrate:1.1"),
    "init-image": lambda d: _container(d, "wait").update(image="busybox:1.37"),
    "sidecar-image": lambda d: _container(d, "proxy").update(image="cloud-sql-proxy:2.1"),
    "migrate-args": lambda d: _container(d, "migrate").update(args=["up", "--all"]),
    "env-var": lambda d: _container(d, "migrate")["env"][0].update(value="debug"),
    "schema-content": lambda d: d[1]["data"].update({"schema.sql": "create table t (id bigint);"}),
    "secret-content": lambda d: d[2]["stringData"].update(pw="n3w"),
    "job-label": lambda d: d[0]["metadata"].setdefault("labels", {}).update(team="db"),
    "ttl": lambda d: d[0]["spec"].update(ttlSecondsAfterFinished=600),
    "web-config": lambda d: d[3]["data"].update(THEME="light"),
}
# What each trigger covers. ``spec`` sees a ConfigMap's or Secret's content through the checksum
# set-config-checksum writes on the pod template (the pipeline below runs it first, in canonical order);
# the TTL is a field a live Job may change (jobspec.py), and labels and an unused ConfigMap are not spec.
IN_SPEC = {"migrate-image", "init-image", "sidecar-image", "migrate-args", "env-var", "schema-content",
           "secret-content"}  # fmt: skip
COVERS: dict[str, set[str]] = {
    "spec": IN_SPEC,
    "image": {"migrate-image", "init-image", "sidecar-image"},
    "image:migrate": {"migrate-image"},
    "image:wait": {"init-image"},
    "configmap/db-schema": {"schema-content"},
    "secret/db-password": {"secret-content"},
    ARGS: {"migrate-args"},
    f"image:migrate,configmap/db-schema,{ARGS}": {"migrate-image", "schema-content", "migrate-args"},
}


def render(docs: list[Doc], config: Doc | None = None) -> list[Doc]:
    """set-config-checksum then hash-job-names, as a pipeline runs them; fails on any error result."""
    items = copy.deepcopy(docs)
    for function, fn_config in ((CHECKSUM, None), (HASH, config)):
        rl: Doc = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": items}
        if fn_config is not None:
            rl["functionConfig"] = fn_config
        text, code = function.process(dump_fast(rl))
        out = _load_fast(text)
        assert code == 0, out.get("results")
        items = out["items"]
    return items


def job_name(docs: list[Doc]) -> str:
    return str(docs[0]["metadata"]["name"])


def check_readers_agree(rendered: list[Doc]) -> None:
    """The plan's name hash is the one in the name, and validate-jobs finds no mismatch."""
    plan = build_plan(copy.deepcopy(rendered), namespace="shop", default_timeout=30)
    [item] = [it for it in plan.items if it.kind == "Job"]
    assert item.triggered is not None
    assert name_hash(item.key.name, "db-migration") == item.triggered.name_hash
    rl = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": rendered}
    text, _ = VALIDATE.process(dump_fast(rl))
    rules = {r.get("tags", {}).get("rule") for r in _load_fast(text).get("results") or []}
    assert not rules & {"name-hash-mismatch", "hash-from-invalid", "hash-from-unhashed"}


CASES = [
    (trigger, combo)
    for trigger in COVERS
    for size in (1, 2)
    for combo in itertools.combinations(CHANGES, size)
]


@pytest.mark.parametrize(("trigger", "changes"), CASES, ids=[f"{t} x {'+'.join(c)}" for t, c in CASES])
def test_the_name_changes_exactly_when_a_trigger_changed(trigger: str, changes: tuple[str, ...]) -> None:
    before = render(stream(trigger))
    changed = stream(trigger)
    for change in changes:
        CHANGES[change](changed)
    after = render(changed)
    expected = bool(COVERS[trigger] & set(changes))
    assert (job_name(before) != job_name(after)) is expected
    if trigger != "spec":
        check_readers_agree(after)
        plan_before = build_plan(copy.deepcopy(before), namespace="shop", default_timeout=30)
        plan_after = build_plan(copy.deepcopy(after), namespace="shop", default_timeout=30)
        runs = [next(it for it in p.items if it.kind == "Job").triggered for p in (plan_before, plan_after)]
        assert runs[0] is not None and runs[1] is not None
        assert (runs[0].run_hash != runs[1].run_hash) is expected  # the runner's run: the same values


def test_spec_alone_is_the_name_without_the_annotation() -> None:
    assert job_name(render(stream("spec"))) == job_name(render(stream()))
    plan = build_plan(render(stream("spec")), namespace="shop", default_timeout=30)
    assert all(it.triggered is None for it in plan.items)  # the runner treats it as no triggers


def test_order_and_spaces_do_not_change_the_name() -> None:
    one = render(stream("image:migrate,configmap/db-schema"))
    other = render(stream(" configmap/db-schema ,  image:migrate"))
    assert job_name(one) == job_name(other)


def test_a_renamed_configmap_is_found_by_the_name_the_trigger_was_written_with() -> None:
    # kustomize's namePrefix and a generator's hash, after the build: the reference and the object carry
    # the final name, the annotation the base one.
    docs = stream("configmap/db-schema")
    final = "prod-db-schema-5c7b9d2f8k"
    docs[1]["metadata"]["name"] = final
    docs[0]["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"] = final
    renamed = render(docs)
    edited = copy.deepcopy(docs)
    edited[1]["data"]["schema.sql"] = "create table u (id int);"
    assert job_name(render(edited)) != job_name(renamed)
    check_readers_agree(renamed)


def config(*entries: Doc) -> Doc:
    return {"apiVersion": "fn.krmfn.dev/v1alpha1", "kind": "HashJobNames", "metadata": {"name": "h"},
            "triggers": list(entries)}  # fmt: skip


def test_the_config_names_triggers_as_the_annotation_does_and_takes_them_back() -> None:
    entry = {"selectors": [{"name": "db-migration"}], "hashFrom": ["image:migrate", "configmap/db-schema"]}
    from_config = render(stream(), config(entry))
    assert job_name(from_config) == job_name(render(stream("image:migrate,configmap/db-schema")))
    notes = from_config[0]["metadata"]["annotations"]
    assert notes[HASH_FROM] == "image:migrate,configmap/db-schema"
    assert notes["krmfn.dev/hash-from-config"] == "true"
    check_readers_agree(from_config)
    # rendered again in place without the entry: the annotation it wrote goes, the whole spec names the Job
    again = render(from_config, config())
    assert HASH_FROM not in again[0]["metadata"]["annotations"]
    assert job_name(again) == job_name(render(stream()))
    # a Job's own annotation is never replaced by the config
    own = render(stream("image"), config(entry))
    assert own[0]["metadata"]["annotations"][HASH_FROM] == "image"
    assert job_name(own) == job_name(render(stream("image")))


def _hash_errors(docs: list[Doc], fn_config: Doc | None = None) -> list[Doc]:
    rl: Doc = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": docs}
    if fn_config is not None:
        rl["functionConfig"] = fn_config
    text, code = HASH.process(dump_fast(rl))
    assert code == 1
    return [r for r in _load_fast(text)["results"] if r["severity"] == "error"]


def _without(kind: str, name: str) -> Callable[[list[Doc]], list[Doc]]:
    return lambda docs: [d for d in docs if (d["kind"], d["metadata"]["name"]) != (kind, name)]


# (annotation value, what the error says, how the stream differs from stream()'s)
REFUSED: list[tuple[Any, str, Callable[[list[Doc]], list[Doc]] | None]] = [
    ("", "is empty: name at least one trigger", None),
    ("  ", "is empty: name at least one trigger", None),
    (" , ", "entry 1 is empty", None),
    ("image,,spec", "entry 2 is empty", None),
    ("image,", "entry 2 is empty", None),
    ("Image", "unknown trigger 'Image': expected spec, image, image:<container>", None),
    ("images", "unknown trigger 'images'", None),
    ("ConfigMap/db-schema", "unknown trigger 'ConfigMap/db-schema'", None),
    ("deployment/web", "unknown trigger 'deployment/web'", None),
    ("configmap/", "'' is not a ConfigMap name", None),
    ("secret/Bad_Name", "'Bad_Name' is not a Secret name", None),
    ("image:", "'' is not a container name", None),
    ("image:Migrate", "'Migrate' is not a container name", None),
    ("image:nope", "the pod template has no container 'nope' (it has wait, migrate, proxy)", None),
    ("image,image", "'image' is listed twice", None),
    ("configmap/db-schema, configmap/db-schema", "'configmap/db-schema' is listed twice", None),
    ("image,image:migrate", "'image:migrate' is already covered by 'image'", None),
    ("configmap/nope", "references no ConfigMap 'nope' (its ConfigMap references: db-schema)", None),
    ("secret/db-schema", "references no Secret 'db-schema' (its Secret references: db-password)", None),
    ("configmap/web-config", "references no ConfigMap 'web-config'", None),
    ("configmap/db-schema", "ConfigMap db-schema is referenced but not in the stream",
     _without("ConfigMap", "db-schema")),
    ("secret/db-password", "Secret db-password is referenced but not in the stream",
     _without("Secret", "db-password")),
    ("field:metadata.name", "the path must start at spec", None),
    ("field:specs", "the path must start at spec", None),
    ("field:spec..x", "the path cannot be read at character 5", None),
    ("field:spec.template.spec.containers[name=*]", "the path cannot be read at character 30", None),
    ("field:spec.a b", "the path cannot be read at character 7", None),
    ("field:spec.template.spec.containers[01]", "the path cannot be read", None),
    ("field:" + "spec" + ".a" * 130, "the path is longer than 256 characters", None),
    ("field:spec" + ".a" * 25, "the path has more than 24 segments", None),
    ("field:spec.template.spec.containers[name=nope].args",
     "spec.template.spec.containers[name=nope] matches no element (it must match exactly one)", None),
    ("field:spec.template.spec.containers[9].args", "spec.template.spec.containers has 2 element(s)", None),
    ("field:spec.tempalte.spec", "spec.tempalte is not in the Job", None),
    ("field:spec.backoffLimit.x", "spec.backoffLimit is not a mapping", None),
    ("field:spec.template[name=x]", "spec.template is not a list", None),
    ("field:spec.template[0]", "spec.template is not a list", None),
    (",".join(f"field:spec.a{i}" for i in range(17)), "names 17 triggers, more than 16", None),
    (7, "expected a comma-separated string of triggers", None),
    ("image:" + "a" * 5000, "is longer than 4096 characters", None),
    ("image:a\x1b[2J", "'a\\x1b[2J' is not a container name", None),
]  # fmt: skip


@pytest.mark.parametrize(("value", "says", "edit"), REFUSED, ids=[repr(r[0])[:60] for r in REFUSED])
def test_a_bad_trigger_is_refused_by_every_reader_naming_the_job_and_the_annotation(
    value: Any, says: str, edit: Callable[[list[Doc]], list[Doc]] | None
) -> None:
    docs = stream()
    docs[0]["metadata"]["annotations"][HASH_FROM] = value
    docs = edit(docs) if edit is not None else docs
    [error] = _hash_errors(copy.deepcopy(docs))
    assert says in error["message"]
    assert error["resourceRef"]["name"] == "db-migration"
    assert error["field"]["path"] == FIELD
    with pytest.raises(SourceError) as refused:
        build_plan(copy.deepcopy(docs), namespace="shop", default_timeout=30)
    assert str(refused.value).startswith(f"Job.batch shop/db-migration: {FIELD}: ")
    assert says in str(refused.value)
    rl = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": docs}
    text, code = VALIDATE.process(dump_fast(rl))
    found = [r for r in _load_fast(text)["results"] if r.get("tags", {}).get("rule") == "hash-from-invalid"]
    assert code == 1 and len(found) == 1 and says in found[0]["message"]


BAD_CONFIGS: list[tuple[list[Doc], str, str]] = [
    ([{"hashFrom": []}], "triggers[0].hashFrom", "is empty"),
    ([{"hashFrom": ["image", "bogus"]}], "triggers[0].hashFrom", "unknown trigger 'bogus'"),
    ([{"hashFrom": ["image"]}, {"hashFrom": ["image", "image"]}], "triggers[1].hashFrom", "listed twice"),
    ([{"selectors": [{"name": "db-migration"}]}], "triggers[0].hashFrom", "required field is missing"),
]


@pytest.mark.parametrize(("entries", "field", "says"), BAD_CONFIGS, ids=[c[2] for c in BAD_CONFIGS])
def test_a_bad_config_entry_is_refused_naming_its_field(entries: list[Doc], field: str, says: str) -> None:
    [error] = _hash_errors(stream(), config(*entries))
    assert field in error["field"]["path"] and says in error["message"]


def test_two_config_entries_for_one_job_are_refused() -> None:
    [error] = _hash_errors(stream(), config({"hashFrom": ["image"]}, {"hashFrom": ["spec"], "selectors": [
        {"kind": "Job"}]}))  # fmt: skip
    assert "triggers[0] and triggers[1] both match this Job" in error["message"]
    assert error["resourceRef"]["name"] == "db-migration" and error["field"]["path"] == FIELD


def test_a_config_entry_that_names_nothing_in_the_job_says_the_config_wrote_it() -> None:
    [error] = _hash_errors(stream(), config({"hashFrom": ["image:nope"]}))
    assert "no container 'nope'" in error["message"]
    assert "written from the functionConfig's triggers" in error["message"]


def test_triggers_on_a_cronjob_are_a_warning_naming_it() -> None:
    template = {"spec": copy.deepcopy(stream()[0]["spec"])}
    cron: Doc = {"apiVersion": "batch/v1", "kind": "CronJob",
                 "metadata": {"name": "nightly", "annotations": {HASH_FROM: "image"}},
                 "spec": {"schedule": "0 3 * * *", "jobTemplate": template}}  # fmt: skip
    text, code = HASH.process(dump_fast({"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
                                         "items": [cron]}))  # fmt: skip
    [warning] = [r for r in _load_fast(text)["results"] if r["severity"] == "warning"]
    assert code == 0 and "has no effect on a CronJob" in warning["message"]
    assert warning["resourceRef"]["name"] == "nightly" and warning["field"]["path"] == FIELD
