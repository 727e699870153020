"""Result conventions (issue 16 item 6): a result with a field names its resource (the functionConfig for
config errors), both config forms share one root, a ResourceList carries results without repeating
them on stderr (kpt prints both), and a misspelt ResourceList kind is an error."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path
from typing import Any

import pytest
from e2e import run, tool

from krmfn.functions.render import FUNCTION as RENDER
from krmfn.functions.set_config_checksum import FUNCTION as SET_CONFIG_CHECKSUM
from krmfn.functions.set_image import FUNCTION as SET_IMAGE
from krmfn.functions.set_steps import FUNCTION as SET_STEPS
from krmfn.sdk.function import Function
from krmfn.yaml.io import _load_fast, dump_all_fast, dump_fast

DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web"},
    "spec": {
        "template": {
            "spec": {
                "containers": [{"name": "w", "image": "x", "envFrom": [{"configMapRef": {"name": "gone"}}]}]
            }
        }
    },
}


def resource_list(config: Any, items: list[dict[str, Any]] | None = None) -> str:
    doc = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": items or [DEPLOYMENT]}
    if config is not None:
        doc["functionConfig"] = config
    return dump_fast(doc)


def results(function: Function[Any], text: str) -> list[dict[str, Any]]:
    out, _ = function.process(text)
    return list(_load_fast(out).get("results") or [])


def with_field(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in found if "field" in r]


TYPED = {
    "apiVersion": "fn.krmfn.dev/v1alpha1",
    "kind": "SetImage",
    "metadata": {"name": "bump"},
    "images": [{"name": ""}],
}
CONFIGMAP = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "function-input"},
    "data": {"strict": "maybe"},
}


@pytest.mark.parametrize(
    ("function", "config", "path", "ref"),
    [
        (SET_IMAGE, TYPED, "functionConfig.images[0].name", ("SetImage", "bump")),
        (SET_CONFIG_CHECKSUM, CONFIGMAP, "functionConfig.data.strict", ("ConfigMap", "function-input")),
        (
            SET_STEPS,
            {
                "apiVersion": "fn.krmfn.dev/v1alpha1",
                "kind": "SetSteps",
                "metadata": {"name": "s"},
                "steps": 5,
            },
            "functionConfig.steps",
            ("SetSteps", "s"),
        ),
        (
            RENDER,
            {
                "apiVersion": "fn.krmfn.dev/v1alpha1",
                "kind": "Render",
                "metadata": {"name": "all"},
                "setImage": {"images": [{"name": ""}]},
            },
            "functionConfig.setImage.images[0].name",
            ("Render", "all"),
        ),
    ],
    ids=["typed", "configmap", "set-steps", "combined"],
)
def test_config_errors_name_the_function_config(
    function: Function[Any], config: dict[str, Any], path: str, ref: tuple[str, str]
) -> None:
    found = with_field(results(function, resource_list(config)))
    assert found, "expected a result about a config field"
    for result in found:
        assert result["field"]["path"] == path
        assert (result["resourceRef"]["kind"], result["resourceRef"]["name"]) == ref


def test_every_result_with_a_field_has_a_resource() -> None:
    """Whatever a function reports about a field, the spec wants the resource it belongs to."""
    found = results(SET_CONFIG_CHECKSUM, resource_list(None))
    assert with_field(found)
    assert all("resourceRef" in r for r in with_field(found)), found


def _cli(function: Function[Any], text: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = function.main([], stdin=io.StringIO(text), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def _as_kpt_sends_it(text: str) -> str:
    return text.replace(
        "metadata:\n    name: web",
        "metadata:\n    name: web\n    annotations:\n      internal.config.kubernetes.io/seqindent: compact",
    )


def test_under_kpt_results_are_in_the_resource_list_only() -> None:
    code, out, err = _cli(SET_CONFIG_CHECKSUM, _as_kpt_sends_it(resource_list(None)))
    assert code == 0 and "not in the ResourceList" in out
    assert err == ""
    code, out, err = _cli(SET_IMAGE, _as_kpt_sends_it(resource_list(TYPED)))
    assert code == 1 and "must not be empty" in out
    # An error still says so on stderr, in one line that points at the results instead of repeating them.
    assert err == "krmfn-set-image: 1 error(s), reported in the output ResourceList's results\n"


def test_other_resource_list_callers_get_the_results_on_stderr_too() -> None:
    """kustomize prints an exec function's stderr, never the results it returns."""
    code, out, err = _cli(SET_IMAGE, resource_list(TYPED))
    assert code == 1 and "must not be empty" in out and "must not be empty" in err


@pytest.mark.e2e
def test_kustomize_shows_the_error_message(tmp_path: Path) -> None:
    config = {
        **TYPED,
        "metadata": {
            "name": "bump",
            "annotations": {"config.kubernetes.io/function": "exec:\n  path: krmfn-set-image\n"},
        },
    }
    (tmp_path / "kustomization.yaml").write_text("resources: [web.yaml]\ntransformers: [fn.yaml]\n")
    (tmp_path / "web.yaml").write_text(dump_fast(DEPLOYMENT))
    (tmp_path / "fn.yaml").write_text(dump_fast(config))
    done = run(
        [tool("kustomize"), "build", "--enable-alpha-plugins", "--enable-exec", str(tmp_path)],
        tmp_path,
        check=False,
    )
    assert done.returncode != 0 and "functionConfig.images[0].name: must not be empty" in done.stderr


def test_a_stream_has_only_stderr_for_its_results() -> None:
    code, out, err = _cli(SET_CONFIG_CHECKSUM, dump_all_fast([DEPLOYMENT]))
    assert code == 0 and "not in the ResourceList" in err and "results" not in out


@pytest.mark.parametrize("kind", ["ResourceLst", "ResourcesList", "List", None])
def test_a_misspelt_resource_list_kind_is_an_error(kind: str | None) -> None:
    doc: dict[str, Any] = {
        "apiVersion": "config.kubernetes.io/v1",
        "items": [DEPLOYMENT],
        "functionConfig": TYPED,
    }
    if kind is not None:
        doc["kind"] = kind
    for mode in ("fast", "fidelity"):
        outcome = SET_IMAGE.outcome(dump_fast(doc), mode)
        out, code = outcome.text, outcome.code
        assert code == 1, out
        assert any("expected kind ResourceList" in r.message for r in outcome.results), outcome.results
        assert "Deployment" not in out  # nothing of the input was treated as objects


@pytest.mark.e2e
def test_kpt_prints_each_result_once(tmp_path: Path) -> None:
    (tmp_path / "Kptfile").write_text(
        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: p}\n"
        "pipeline:\n  mutators:\n  - exec: krmfn-set-config-checksum\n"
    )
    (tmp_path / "web.yaml").write_text(dump_fast(DEPLOYMENT))
    done = run([tool("kpt"), "fn", "render", "--allow-exec", str(tmp_path)], tmp_path)
    output = done.stdout + done.stderr
    assert output.count("ConfigMap gone is not in the ResourceList") == 1, output


def test_cli_help_still_goes_to_stdout() -> None:
    proc = subprocess.run(["krmfn-set-image", "--help"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and proc.stdout.startswith("krmfn-set-image")


def _kpt_list(count: int) -> str:
    """A ResourceList as kpt sends it (bookkeeping annotations, flow style in the files)."""
    items = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": f"cm-{i}",
                "annotations": {
                    "internal.config.kubernetes.io/seqindent": "compact",
                    "config.kubernetes.io/path": f"cm-{i}.yaml",
                },
            },
            "data": {"payload": "x" * 600},
        }
        for i in range(count)
    ]
    return dump_fast({"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": items})


def test_a_large_kpt_list_keeps_its_formatting_without_a_warning() -> None:
    """Issue 16 item 7, as issue 18 settles it: there is no size past which the formatting is rewritten.
    A list far over the old 1 MiB threshold comes back with every untouched item byte for byte."""
    large = _kpt_list(3000)
    assert len(large) > 1024 * 1024
    out, code = SET_CONFIG_CHECKSUM.process(large)
    assert code == 0
    assert [r for r in results(SET_CONFIG_CHECKSUM, large) if r["severity"] == "warning"] == []
    # nothing references these ConfigMaps: the items are written back exactly as they came
    assert out.split("items:", 1)[1].split("\nresults:", 1)[0].strip() in large
