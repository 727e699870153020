"""No Secret value ever leaves its Secret: canary values planted in Secrets (``data`` in base64,
``stringData`` in plain text, malformed Secrets, a ConfigMap and a Secret sharing a name, templates that
fail) must not appear in results, on stderr, or in any output item other than the Secrets themselves,
for every function, on both YAML paths, through the CLI and along the whole chain in canonical order."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from krmfn.limits import Limits
from krmfn.registry import CANONICAL_ORDER, load
from krmfn.yaml.io import dump_fast
from krmfn.yaml.io import load as load_yaml
from robustness.harness import output_problems, run_cli_many

PLAIN = "CANARYplain7f3a9c"
DECODED = "CANARYb64x1d2e3f"
ENCODED = base64.b64encode(DECODED.encode()).decode()
TEMPLATE = "CANARYtmpl5b6c"
CANARIES = (PLAIN, DECODED, ENCODED, TEMPLATE, "CANARY")


def secret(name: str, **body: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "apps"}, **body}


def secrets() -> list[dict[str, Any]]:
    return [
        secret("creds", type="Opaque", data={"token": ENCODED}, stringData={"password": PLAIN}),
        # A ConfigMap of the same name holds no canary: code that mixes the two kinds up would leak.
        secret("shared", stringData={"key": f"{PLAIN}-shared"}),
        secret("bad-base64", data={"token": f"{PLAIN}!!not base64"}),
        secret("data-is-a-list", data=[PLAIN, ENCODED]),
        secret("data-is-a-string", data=PLAIN),
        secret("string-data-int", stringData={"n": 5, "s": PLAIN, "nested": {"deep": PLAIN}}),
        secret("binary-key", data={PLAIN: ENCODED}),
        secret(
            "templated",
            stringData={
                "around": f"{TEMPLATE} << inputs.missing >>",
                "ok": f"{TEMPLATE}-<< inputs.tag >>",
                "inside": f"<< inputs.missing ~ '{TEMPLATE}' >>",
                "token": f"<< inputs.{TEMPLATE} | {TEMPLATE} >>",
            },
        ),
        {**secret("typed", type=f"{PLAIN}/type", data={"a": ENCODED}), "immutable": True},
    ]


def pod_spec() -> dict[str, Any]:
    names = [s["metadata"]["name"] for s in secrets()]
    return {
        "restartPolicy": "Always",
        "containers": [
            {
                "name": "main",
                "image": "nginx:1.25",
                "env": [
                    {"name": f"S{i}", "valueFrom": {"secretKeyRef": {"name": n, "key": "token"}}}
                    for i, n in enumerate(names)
                ],
                "envFrom": [{"secretRef": {"name": "shared"}}, {"configMapRef": {"name": "shared"}}],
            }
        ],
        "volumes": [
            {"name": "creds", "secret": {"secretName": "creds"}},
            {"name": "mixed", "projected": {"sources": [{"secret": {"name": "templated"}}]}},
        ],
    }


def items() -> list[dict[str, Any]]:
    checksum_from = ",".join(f"Secret/{s['metadata']['name']}" for s in secrets())
    workload_meta = {"namespace": "apps", "annotations": {"krmfn.dev/checksum-from": checksum_from}}
    job_spec = {"backoffLimit": 1, "template": {"spec": {**pod_spec(), "restartPolicy": "Never"}}}
    return [
        *secrets(),
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shared", "namespace": "apps"}},
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", **workload_meta},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"spec": pod_spec()}},
        },
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "migrate", **workload_meta},
            "spec": job_spec,
        },
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": "nightly", **workload_meta},
            "spec": {"schedule": "@daily", "jobTemplate": {"spec": job_spec}},
        },
    ]


CONFIGS: dict[str, dict[str, Any]] = {
    # renderSecrets: Secret payloads are rendered (and their errors reported) only when asked.
    "render-inputs": {
        "inputs": {"tag": "1.2.3"},
        "inputsFrom": [{"name": "shared", "namespace": "apps"}],
        "renderSecrets": True,
    },
    "set-image": {"images": [{"name": "nginx", "newTag": "1.27"}]},
    "set-config-checksum": {"strict": True},
    "hash-job-names": {},
    "set-steps": {
        "steps": [{"name": "pre", "selectors": [{"kind": "Job"}]}, {"name": "deploy"}],
        "defaultStep": "deploy",
        "emit": ["depends-on", "argocd"],
    },
    "validate-jobs": {"severity": {"backoff-limit-default": "error"}},
}


def function_config(name: str) -> dict[str, Any]:
    kind = load(name).kind
    return {"apiVersion": "fn.krmfn.dev/v1alpha1", "kind": kind, "metadata": {"name": "c"}, **CONFIGS[name]}


def resource_list(name: str, objects: list[dict[str, Any]] | None = None) -> str:
    root = {
        "apiVersion": "config.kubernetes.io/v1",
        "kind": "ResourceList",
        "items": items() if objects is None else objects,
        "functionConfig": function_config(name),
    }
    return dump_fast(root)


def leaks(output: str, stderr: str = "") -> list[str]:
    """Where a canary shows up: the output with Secret items removed (results included), and stderr."""
    doc = load_yaml(output, "fast", Limits())
    doc["items"] = [item for item in doc.get("items") or [] if item.get("kind") != "Secret"]
    visible = dump_fast(doc) + stderr
    return [canary for canary in CANARIES if canary in visible]


def test_canaries_are_really_in_the_input() -> None:
    text = resource_list("set-image")
    assert all(canary in text for canary in (PLAIN, ENCODED, TEMPLATE))
    assert DECODED not in text  # only its base64 form is: a leak would mean something decoded it
    assert not leaks(text)


@pytest.mark.parametrize("mode", ["fast", "fidelity"])
@pytest.mark.parametrize("name", list(CANONICAL_ORDER))
def test_no_function_leaks_a_secret_value(name: str, mode: str) -> None:
    out, code = load(name).process(resource_list(name), mode)
    assert not output_problems(out, code, "fast")
    assert not leaks(out), out


def test_the_functions_did_touch_the_secrets() -> None:
    """The canary test means something only if the functions read and reported on these Secrets."""
    checksum, _ = load("set-config-checksum").process(resource_list("set-config-checksum"))
    assert "krmfn.dev/config-checksum: sha256:" in checksum
    rendered, code = load("render-inputs").process(resource_list("render-inputs"))
    assert code == 1
    assert f"{TEMPLATE}-1.2.3" in rendered  # the valid expression in the Secret was rendered
    assert "field:\n    path: stringData.around" in rendered


@pytest.mark.parametrize("mode", ["fast", "fidelity"])
def test_no_cli_leaks_a_secret_value_on_stderr(mode: str) -> None:
    no_env: dict[str, str] = {}
    jobs = [(name, resource_list(name).encode(), ("--yaml", mode), no_env) for name in CANONICAL_ORDER]
    for (name, *_), run in zip(jobs, run_cli_many(jobs), strict=True):
        stdout, stderr = run.stdout.decode(), run.stderr.decode()
        assert "Traceback" not in stderr
        assert not leaks(stdout, stderr), (name, stderr)


@pytest.mark.parametrize("mode", ["fast", "fidelity"])
def test_the_chain_in_canonical_order_leaks_nothing(mode: str) -> None:
    objects = items()
    for name in CANONICAL_ORDER:
        out, code = load(name).process(resource_list(name, objects), mode)
        assert not leaks(out), (name, out)
        assert not output_problems(out, code, "fast")
        objects = load_yaml(out, "fast", Limits())["items"]


@pytest.mark.parametrize("mode", ["fast", "fidelity"])
def test_a_duplicate_key_in_a_secret_does_not_quote_its_values(mode: str) -> None:
    # ruamel's message was: found duplicate key "password" with value "<second>" (original value: "<first>").
    text = (
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
        "- apiVersion: v1\n  kind: Secret\n  metadata: {name: s}\n  stringData:\n"
        f"    password: {PLAIN}\n    password: {ENCODED}\n"
    )
    (run,) = run_cli_many([("set-steps", text.encode(), ("--yaml", mode), {})])
    assert run.code == 1
    assert "duplicate key 'password' at line 9" in run.stderr.decode()
    assert not leaks(run.stdout.decode(), run.stderr.decode())
