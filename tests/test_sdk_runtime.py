"""The function runtime end to end: ResourceList validation, config errors, CLI edge, exit codes."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Literal

import pytest
from example_function import FUNCTION

from krmfn import Function, ResourceList, Selector, select
from krmfn.errors import ConfigError
from krmfn.sdk.config import from_configmap, parse
from krmfn.sdk.resourcelist import choose_mode
from krmfn.yaml.io import _load_fast, dump_fast

HEAD = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n"
CONFIG = {"apiVersion": "fn.krmfn.dev/v1alpha1", "kind": "ExampleAnnotate", "key": "k", "value": "v"}


def resource_list(items: list[object], config: object = CONFIG) -> str:
    return dump_fast(
        {
            "apiVersion": "config.kubernetes.io/v1",
            "kind": "ResourceList",
            "items": items,
            "functionConfig": config,
        }
    )


def run(text: str) -> tuple[dict, int]:
    out, code = FUNCTION.process(text)
    return _load_fast(out), code


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no input: expected a ResourceList or a stream of KRM objects"),
        ("- a\n- b\n", "not a ResourceList"),
        ("apiVersion: v2\nkind: ResourceList\nitems: []\n", "got apiVersion 'v2', kind 'ResourceList'"),
        (HEAD + "items: {}\n", "items must be a list"),
        (HEAD + "items: [hello]\n", r"items\[0\]: an item must be a mapping"),
        (
            HEAD + "items: [{kind: Job, metadata: {name: a}}]\n",
            r"items\[0\] \(Job a\): apiVersion is required",
        ),
        (HEAD + "items: [{apiVersion: v1, kind: ConfigMap, metadata: {}}]\n", "metadata.name is required"),
        (HEAD + "items: [{apiVersion: v1, kind: ConfigMap}]\n", "metadata is required"),
        (
            HEAD + "items: [{apiVersion: v1, kind: ConfigMap, metadata: {name: a, labels: [x]}}]\n",
            "labels must be",
        ),
        (HEAD + "items: []\nitems: []\n", "duplicate key 'items'"),
        (HEAD + "items: [\n", "line"),
    ],
    ids=[
        "empty-input",
        "a-list",
        "wrong-kind",
        "items-not-a-list",
        "item-not-a-mapping",
        "item-without-apiversion",
        "item-without-name",
        "item-without-metadata",
        "labels-not-a-mapping",
        "duplicate-key",
        "malformed-yaml",
    ],
)
def test_bad_input_is_an_error_result_and_exit_1(text: str, message: str) -> None:
    outcome = FUNCTION.outcome(text)
    assert outcome.code == 1
    if "ResourceList" in text:  # what kpt sends: the error comes back as a result
        out = _load_fast(outcome.text)
        assert out["kind"] == "ResourceList"
        (result,) = out["results"]
    else:  # read as a plain stream: nothing on stdout, the error on stderr only (issue 15 item 17)
        assert outcome.text == ""
        (result,) = [r.to_dict() for r in outcome.results]
    assert result["severity"] == "error"
    assert re.search(message, result["message"]), result["message"]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "nonsense: [",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\nkind: [\n",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\nn: " + "9" * 30 + "\n",
        "- a\n- b\n",
    ],
)
def test_a_plain_stream_that_cannot_be_read_writes_nothing_on_stdout(text: str) -> None:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = FUNCTION.main([], stdin=io.StringIO(text), stdout=stdout, stderr=stderr)
    assert (code, stdout.getvalue()) == (1, "")
    assert stderr.getvalue().startswith("krmfn-example-annotate: error: ")


def test_v1beta1_resource_lists_are_accepted() -> None:
    text = resource_list([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}])
    out, code = run(text.replace("config.kubernetes.io/v1", "config.kubernetes.io/v1beta1"))
    assert code == 0
    assert out["items"][0]["metadata"]["annotations"] == {"k": "v"}


def test_generate_name_is_a_valid_identity() -> None:
    out, code = run(
        resource_list([{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"generateName": "m-"}}])
    )
    assert out["items"][0]["metadata"] == {"generateName": "m-", "annotations": {"k": "v"}}
    assert code == 0


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({**CONFIG, "kind": "SetImage"}, "expected apiVersion fn.krmfn.dev/v1alpha1, kind ExampleAnnotate"),
        (
            {"apiVersion": "fn.krmfn.dev/v1alpha1", "kind": "ExampleAnnotate"},
            "key: required field is missing",
        ),
        ({**CONFIG, "value": 3}, "value: expected a string, got number 3"),
        (
            {**CONFIG, "selectors": {"kind": "Job"}},
            "selectors: expected a list, each a mapping with keys apiVersion, kind",
        ),
        ({**CONFIG, "selectors": [{"knd": "Job"}]}, r"selectors\[0\]\.knd: unknown field 'knd'"),
        ({**CONFIG, "selectors": [{"labels": {"a": 1}}]}, r"selectors\[0\]\.labels\.a: expected a string"),
        ("just text", "functionConfig must be a mapping"),
    ],
    ids=[
        "wrong-kind",
        "missing-required",
        "wrong-type",
        "list-expected",
        "unknown-nested-field",
        "nested-wrong-type",
        "not-a-mapping",
    ],
)
def test_config_errors_name_the_field_and_expected_form(config: object, message: str) -> None:
    out, code = run(resource_list([], config))
    assert code == 1
    errors = [r for r in out["results"] if r["severity"] == "error"]
    assert len(errors) == 1
    text = f"{errors[0].get('field', {}).get('path', '')}: {errors[0]['message']}"
    assert re.search(message, text), text


@dataclass(frozen=True)
class Everything:
    name: str
    count: int = 0
    enabled: bool = False
    mode: Literal["a", "b"] = "a"
    tags: list[str] = field(default_factory=list)
    extra: dict[str, int] = field(default_factory=dict)
    selector: Selector | None = None


def test_configmap_form_reads_strings_by_field_type() -> None:
    got = from_configmap(
        Everything,
        {
            "name": "n",
            "count": "3",
            "enabled": "true",
            "mode": "b",
            "tags": "x, y",
            "extra": "{a: 1}",
            "selector": "{kind: Job}",
        },
    )
    assert got == Everything("n", 3, True, "b", ["x", "y"], {"a": 1}, Selector(kind="Job"))


def test_configmap_form_reports_unparseable_values() -> None:
    with pytest.raises(ConfigError, match="count: expected a whole number, got string 'many'"):
        from_configmap(Everything, {"name": "n", "count": "many"})


def test_bool_is_not_an_int() -> None:
    with pytest.raises(ConfigError, match="count: expected a whole number, got boolean true"):
        parse(Everything, {"name": "n", "count": True})


def test_kpt_placeholder_configmap_without_data_means_defaults() -> None:
    @dataclass(frozen=True)
    class Optional:
        flag: bool = False

    function = Function("t", "T", Optional, lambda rl, c: rl.results.info(f"flag={c.flag}"), "test")
    out, code = function.process(
        resource_list([], {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "function-input"}})
    )
    assert code == 0
    assert _load_fast(out)["results"] == [{"message": "flag=False", "severity": "info"}]


def test_a_bug_in_a_transform_is_an_error_result_not_a_traceback() -> None:
    def broken(rl: ResourceList, config: object) -> None:
        raise KeyError("boom")

    function = Function("t", "T", Everything, broken, "test")
    out, code = function.process(
        resource_list([], {"apiVersion": "v1", "kind": "ConfigMap", "data": {"name": "n"}})
    )
    assert code == 1
    assert "internal error: KeyError" in _load_fast(out)["results"][0]["message"]


def test_results_keep_items_and_function_config_in_the_output() -> None:
    items = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}]
    out, _ = run(resource_list(items, {**CONFIG, "value": 1}))
    assert out["items"] == items
    assert out["functionConfig"]["value"] == 1


def test_cli_edge_writes_resource_list_to_stdout_and_errors_to_stderr() -> None:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = FUNCTION.main([], stdin=io.StringIO(HEAD + "nonsense: ["), stdout=stdout, stderr=stderr)
    assert code == 1
    assert _load_fast(stdout.getvalue())["kind"] == "ResourceList"
    assert stderr.getvalue().startswith("krmfn-example-annotate: error: ")
    assert "Traceback" not in stderr.getvalue()


def test_help_lists_every_field_with_an_example() -> None:
    stdout = io.StringIO()
    assert FUNCTION.main(["--help"], stdout=stdout) == 0
    text = stdout.getvalue()
    for expected in ("key  (required; a string)", "example: example.com/owner", "kind: ExampleAnnotate"):
        assert expected in text


def test_unknown_flag_exits_2() -> None:
    stderr = io.StringIO()
    assert FUNCTION.main(["--frobnicate"], stdin=io.StringIO(""), stdout=io.StringIO(), stderr=stderr) == 2
    assert "unknown argument '--frobnicate'" in stderr.getvalue()


@pytest.mark.parametrize(
    ("text", "requested", "mode"),
    [
        ("items: []", None, "fidelity"),
        ("kind: ResourceList\ninternal.config.kubernetes.io/seqindent: compact", None, "fidelity"),
        ("x: " + "y" * (2 << 20), None, "fidelity"),
        ("config.k8s.io/id: '1'", None, "fidelity"),
        ("internal.config.kubernetes.io/seqindent: compact", "fast", "fast"),
        ("items: []", "fidelity", "fidelity"),
    ],
    ids=[
        "plain-input-is-faithful",
        "kpt-is-faithful",
        "no-size-threshold",
        "kustomize-is-faithful",
        "fast-on-request",
        "fidelity-on-request",
    ],
)
def test_yaml_path_choice(text: str, requested: str | None, mode: str) -> None:
    assert choose_mode(text, requested) == mode


def test_selectors_and_exclusions() -> None:
    items = [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "m-1", "annotations": {"krmfn.dev/job-base-name": "m"}},
        },
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x", "labels": {"tier": "db"}}},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "m", "annotations": {"config.kubernetes.io/local-config": "true"}},
        },
    ]
    assert [o["metadata"]["name"] for o in select(items, [Selector(name="m")])] == ["m-1"]
    assert [o["metadata"]["name"] for o in select(items, [Selector(labels={"tier": "db"})])] == ["x"]
    assert [o["metadata"]["name"] for o in select(items, [], [Selector(kind="Job", name="x")])] == ["m-1"]
    assert [o["metadata"]["name"] for o in select(items, include_local=True)] == ["m-1", "x", "m"]


def test_krmfn_fn_rejects_unknown_functions() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "krmfn.cli", "fn", "nope"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 2
    assert "unknown function 'nope'" in proc.stderr


def test_configmap_form_on_the_fidelity_path_reads_quoted_values() -> None:
    from krmfn.limits import Limits
    from krmfn.yaml.io import load

    data = load('data: {count: "3", tags: "a,b", extra: "{a: 1}", name: n}', "fidelity", Limits())["data"]
    assert from_configmap(Everything, dict(data)) == Everything("n", 3, tags=["a", "b"], extra={"a": 1})


def test_configmap_form_splits_lists_of_literals() -> None:
    @dataclass(frozen=True)
    class Emit:
        emit: list[Literal["depends-on", "argocd"]] = field(default_factory=list)

    assert from_configmap(Emit, {"emit": "depends-on, argocd"}) == Emit(["depends-on", "argocd"])
