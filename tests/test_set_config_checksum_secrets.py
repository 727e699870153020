"""Secret values never leave the Secret: not in other items, results, stderr; and the checksum's semantics."""

from __future__ import annotations

import base64
import io
from typing import Any

import pytest

from krmfn.functions.hash_job_names import FUNCTION as HASH_JOB_NAMES
from krmfn.functions.set_config_checksum import FUNCTION as SET_CONFIG_CHECKSUM
from krmfn.k8s.configdigest import checksum
from krmfn.yaml.io import _load_fast, dump_fast

CANARY = "canary-7f3e9a-do-not-leak"
CANARY_B64 = base64.b64encode(CANARY.encode()).decode()
LEAKS = (CANARY, CANARY_B64, CANARY[:12], CANARY_B64[:12])


def secret(name: str, **body: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, **body}


def config_map(name: str, **body: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, **body}


def workload(annotation: str = "") -> dict[str, Any]:
    container = {
        "name": "c",
        "image": "ghcr.io/example/app:1",
        "envFrom": [{"secretRef": {"name": "string-data"}}, {"secretRef": {"name": "absent"}}],
        "env": [{"name": "P", "valueFrom": {"secretKeyRef": {"name": "data", "key": "password"}}}],
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "uses-secrets", "annotations": {"krmfn.dev/checksum-from": annotation}},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [container],
                    "volumes": [{"name": "v", "secret": {"secretName": "malformed"}}],
                }
            }
        },
    }


def items() -> list[dict[str, Any]]:
    return [
        secret("string-data", stringData={"password": CANARY}),
        secret("data", data={"password": CANARY_B64}),
        secret("malformed", data=f"not-a-mapping-{CANARY}"),
        secret("not-base64", data={"password": CANARY}),
        workload("Secret/not-base64"),
    ]


def run(function: Any, text: str, mode: str) -> tuple[str, str, int]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = function.main(["--yaml", mode], io.StringIO(text), stdout, stderr)
    return stdout.getvalue(), stderr.getvalue(), code


@pytest.mark.parametrize("mode", ["fast", "fidelity"])
@pytest.mark.parametrize("strict", [False, True])
def test_secret_values_appear_only_in_secrets(mode: str, strict: bool) -> None:
    text = dump_fast(
        {
            "apiVersion": "config.kubernetes.io/v1",
            "kind": "ResourceList",
            "items": items(),
            "functionConfig": {
                "apiVersion": "fn.krmfn.dev/v1alpha1",
                "kind": "SetConfigChecksum",
                "strict": strict,
            },
        }
    )
    out, err, code = run(SET_CONFIG_CHECKSUM, text, mode)
    assert code == (1 if strict else 0)
    doc = _load_fast(out)
    # The missing Secret is reported, by name only, in the output's results (kpt prints them; stderr
    # does not repeat them).
    assert any("absent" in r["message"] for r in doc["results"])
    out2, err2, _ = run(HASH_JOB_NAMES, dump_fast({**doc, "functionConfig": None}), mode)
    for stage in (doc, _load_fast(out2)):
        rest = {**stage, "items": [i for i in stage["items"] if i["kind"] != "Secret"]}
        seen = dump_fast(rest) + err + err2
        job = next(i for i in stage["items"] if i["kind"] == "Job")
        assert job["spec"]["template"]["metadata"]["annotations"]["krmfn.dev/config-checksum"].startswith(
            "sha256:"
        )
        for leak in LEAKS:
            assert leak not in seen


def test_string_data_and_data_hash_alike() -> None:
    as_string = secret("s", stringData={"password": CANARY})
    as_data = secret("s", data={"password": CANARY_B64})
    wrapped = secret("s", data={"password": CANARY_B64[:8] + "\n" + CANARY_B64[8:]})
    assert checksum([as_string]) == checksum([as_data]) == checksum([wrapped])
    assert checksum([as_string]) != checksum([secret("s", stringData={"password": CANARY + "!"})])


def test_string_data_wins_over_data_like_the_api_server() -> None:
    both = secret("s", data={"k": base64.b64encode(b"old").decode()}, stringData={"k": "new"})
    assert checksum([both]) == checksum([secret("s", stringData={"k": "new"})])


def test_order_independent() -> None:
    a = config_map("a", data={"x": "1", "y": "2"})
    a_reordered = config_map("a", data={"y": "2", "x": "1"})
    b = secret("b", stringData={"k": "v"})
    assert checksum([a, b]) == checksum([b, a_reordered])


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (config_map("a", data={"x": "1"}), config_map("a", data={"x": "2"})),
        (config_map("a", data={"x": "1"}), config_map("a", data={"x": "1"}, binaryData={"b": "AAE="})),
        (secret("s", stringData={"k": "v"}), secret("s", type="kubernetes.io/tls", stringData={"k": "v"})),
        (config_map("a", data={"x": "1"}), secret("a", stringData={"x": "1"})),
    ],
    ids=["data", "binaryData", "secret-type", "another-kind"],
)
def test_payload_changes_change_the_checksum(before: dict[str, Any], after: dict[str, Any]) -> None:
    assert checksum([before]) != checksum([after])


def test_name_and_namespace_do_not_change_the_checksum() -> None:
    """Inside a kustomization names are not final (a namePrefix, a generator's hash suffix come later):
    the checksum must be the one a pipe after the build computes, so only content counts."""
    base = config_map("app", data={"x": "1"})
    renamed = config_map("prod-app-7h2k9d8t5c", data={"x": "1"})
    renamed["metadata"]["namespace"] = "prod"
    assert checksum([base]) == checksum([renamed])


def test_metadata_does_not_change_the_checksum() -> None:
    plain = config_map("a", data={"x": "1"})
    decorated = config_map("a", data={"x": "1"})
    decorated["metadata"].update(labels={"team": "a"}, annotations={"config.kubernetes.io/index": "3"})
    assert checksum([plain]) == checksum([decorated])
