"""Plain streams: `kustomize build | krmfn-<name> --fn-config cfg.yaml | kubectl apply -f -`."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
from example_function import FUNCTION

from krmfn.yaml.io import dump_all_fast, dump_fast, load_all_fast

CONFIG = {"apiVersion": "fn.krmfn.dev/v1alpha1", "kind": "ExampleAnnotate", "key": "k", "value": "v"}
OBJECTS = [
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}"}, "data": {"i": str(i)}}
    for i in range(3)
]


def main(args: list[str], stdin: str) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = FUNCTION.main(args, stdin=io.StringIO(stdin), stdout=stdout, stderr=stderr)
    return code, stdout.getvalue(), stderr.getvalue()


@pytest.fixture
def config_file(tmp_path: Path) -> str:
    path = tmp_path / "fn.yaml"
    path.write_text(dump_fast(CONFIG))
    return str(path)


def test_a_stream_comes_back_as_a_stream_in_order(config_file: str) -> None:
    code, out, err = main(["--fn-config", config_file], dump_all_fast(OBJECTS))
    assert (code, err) == (0, "")
    docs = list(load_all_fast(out))
    assert [d["metadata"]["name"] for d in docs] == ["c0", "c1", "c2"]
    assert all(d["metadata"]["annotations"] == {"k": "v"} for d in docs)
    assert "ResourceList" not in out


def test_a_stream_reads_like_kubectl_empty_documents_and_a_leading_separator(config_file: str) -> None:
    text = "---\n" + dump_all_fast(OBJECTS[:1]) + "---\n---\n" + dump_all_fast(OBJECTS[1:])
    code, out, _ = main(["--fn-config=" + config_file], text)
    assert code == 0
    assert len(list(load_all_fast(out))) == 3


def test_a_single_object_is_a_stream_of_one(config_file: str) -> None:
    code, out, _ = main(["--fn-config", config_file], dump_fast(OBJECTS[0]))
    assert code == 0
    (doc,) = load_all_fast(out)
    assert doc["metadata"]["annotations"] == {"k": "v"}


def test_the_configmap_form_works_as_fn_config(tmp_path: Path) -> None:
    path = tmp_path / "cm.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {key: team, value: a}\n")
    code, out, _ = main(["--fn-config", str(path)], dump_all_fast(OBJECTS))
    assert code == 0
    assert next(load_all_fast(out))["metadata"]["annotations"] == {"team": "a"}


def test_fn_config_replaces_the_resource_lists_own(config_file: str) -> None:
    rl = {
        "apiVersion": "config.kubernetes.io/v1",
        "kind": "ResourceList",
        "items": OBJECTS[:1],
        "functionConfig": {**CONFIG, "value": "from-the-list"},
    }
    code, out, _ = main(["--fn-config", config_file], dump_fast(rl))
    (doc,) = load_all_fast(out)
    assert code == 0
    assert doc["kind"] == "ResourceList"
    assert doc["functionConfig"]["value"] == "v"
    assert doc["items"][0]["metadata"]["annotations"] == {"k": "v"}


def test_an_error_leaves_stdout_empty_so_a_pipe_applies_nothing(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(dump_fast({**CONFIG, "value": ["not", "a", "string"]}))
    code, out, err = main(["--fn-config", str(path)], dump_all_fast(OBJECTS))
    assert (code, out) == (1, "")
    assert "functionConfig.value" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            dump_all_fast([OBJECTS[0], {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}]),
            "document 2 (ConfigMap): metadata.name is required",
        ),
        (dump_all_fast([OBJECTS[0], ["a", "list"]]), "document 2: an item must be a mapping"),
        (
            dump_all_fast([{"apiVersion": "v1", "kind": "List", "items": [OBJECTS[0], {"kind": "Job"}]}]),
            "document 1, item 2 (Job): apiVersion is required",
        ),
        (
            dump_all_fast(
                [OBJECTS[0], {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": []}]
            ),
            "document 2 is a ResourceList inside a stream of 2 documents",
        ),
        ("---\n---\n", "no input: expected a ResourceList or a stream of KRM objects"),
    ],
    ids=[
        "object-without-a-name",
        "not-a-mapping",
        "a-kubectl-list",
        "resource-list-in-a-stream",
        "only-separators",
    ],
)
def test_bad_streams_are_errors_that_name_the_document(text: str, message: str) -> None:
    code, _, err = main([], text)
    assert code == 1
    assert message in err


def test_a_stream_keeps_its_text_where_nothing_changed(config_file: str) -> None:
    first = "# the app\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}  # flow\ndata:\n  x: 'yes'\n"
    second = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n"
    code, out, _ = main(["--fn-config", config_file], first + "---\n" + second)
    assert code == 0
    assert out == (
        first.replace("{name: a}", "{name: a, annotations: {k: v}}")
        + "---\n"
        + second
        + "  annotations:\n    k: v\n"
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read: No such file or directory"),
        (dump_all_fast([CONFIG, CONFIG]), "expected one YAML document (a functionConfig), found 2"),
        ("- a\n", "expected a YAML mapping (a functionConfig)"),
        ("a: [\n", "line"),
    ],
    ids=["missing-file", "two-documents", "not-a-mapping", "malformed"],
)
def test_unusable_fn_config_files_exit_2_before_reading_stdin(
    tmp_path: Path, content: str | None, message: str
) -> None:
    path = tmp_path / "fn.yaml"
    if content is not None:
        path.write_text(content)
    code, out, err = main(["--fn-config", str(path)], dump_all_fast(OBJECTS))
    assert (code, out) == (2, "")
    assert err.startswith(f"krmfn-example-annotate: --fn-config {path}: ")
    assert message in err


def test_validate_jobs_in_a_pipe_stops_a_bad_job_reaching_kubectl() -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "migrate"},
        "spec": {"template": {"spec": {"containers": [{"name": "m", "image": "app:1"}]}}},
    }
    proc = subprocess.run(
        [sys.executable, "-m", "krmfn.cli", "fn", "validate-jobs"],
        input=dump_all_fast([OBJECTS[0], job]),
        capture_output=True,
        text=True,
        check=False,
    )
    assert (proc.returncode, proc.stdout) == (1, "")
    assert "Job migrate" in proc.stderr
    assert "spec.template.spec.restartPolicy" in proc.stderr


def test_lists_are_read_as_their_items_as_kubectl_and_krmfn_apply_read_them(config_file: str) -> None:
    listed = {"apiVersion": "v1", "kind": "ConfigMapList", "items": OBJECTS[1:]}
    code, out, _ = main(["--fn-config", config_file], dump_all_fast([OBJECTS[0], listed]))
    assert code == 0
    assert [d["metadata"]["name"] for d in load_all_fast(out)] == ["c0", "c1", "c2"]
