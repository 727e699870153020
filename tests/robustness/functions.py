"""Per function: a strategy of valid functionConfigs and which items the function must leave alone.

"Not targeted" is the set of items a function has no reason to touch; on the fidelity path each must come
back byte for byte (quotes, flow style, comments), and on every path semantically unchanged.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from krmfn.k8s.kobj import is_local_config
from krmfn.registry import CANONICAL_ORDER
from krmfn.sdk.function import Function
from robustness.strategies import IMAGE_NAMES, REGISTRIES, Obj, manifests

API = "fn.krmfn.dev/v1alpha1"
NO_PODS = frozenset({"ConfigMap", "Secret", "Service", "Widget"})
MANIFESTS = manifests()


def typed(kind: str, body: Obj) -> Obj:
    return {"apiVersion": API, "kind": kind, "metadata": {"name": "fn-config"}, **body}


@dataclass(frozen=True)
class Spec:
    name: str
    configs: st.SearchStrategy[Obj]
    untargeted: Callable[[Obj], bool]
    items: st.SearchStrategy[list[Obj]] = MANIFESTS

    @property
    def function(self) -> Function[Any]:
        found: Function[Any] = importlib.import_module(CANONICAL_ORDER[self.name]).FUNCTION
        return found


def _kind_selectors() -> st.SearchStrategy[list[Obj]]:
    kinds = ("Deployment", "StatefulSet", "Job", "CronJob", "Pod", "Widget")
    return st.lists(st.sampled_from(kinds).map(lambda k: {"kind": k}), max_size=2)


@st.composite
def _image_rule(draw: st.DrawFn) -> Obj:
    rule: Obj = {"name": draw(st.sampled_from(REGISTRIES)) + draw(st.sampled_from(IMAGE_NAMES))}
    choice = draw(st.integers(0, 4))
    if choice in (0, 1):
        rule["newTag"] = draw(st.sampled_from(("1.4.2", "v3", "stable")))
    if choice in (1, 2):
        rule["newName"] = draw(st.sampled_from(("mirror.example.com/nginx", "app2", "localhost:5000/x")))
    if choice == 3:
        rule["digest"] = "sha256:" + "ab" * 32
    if choice == 4:
        rule["semver"] = draw(st.sampled_from((">=1.2.0 <2.0.0", "^1", "~1.3")))
        rule["tags"] = draw(st.lists(st.sampled_from(("1.2.0", "1.3.1", "2.0.0", "latest")), min_size=1))
    return rule


@st.composite
def _set_image(draw: st.DrawFn) -> Obj:
    body: Obj = {"images": draw(st.lists(_image_rule(), min_size=1, max_size=4))}
    selectors = draw(_kind_selectors())
    if selectors:
        body["selectors"] = selectors
    return typed("SetImage", body)


@st.composite
def _set_config_checksum(draw: st.DrawFn) -> Obj:
    body: Obj = {"strict": draw(st.booleans())}
    selectors = draw(_kind_selectors())
    if selectors:
        body["selectors"] = selectors
    if draw(st.booleans()):
        body["exclude"] = [{"kind": "Pod"}]
    return typed("SetConfigChecksum", body)


@st.composite
def _hash_job_names(draw: st.DrawFn) -> Obj:
    body: Obj = {}
    if draw(st.booleans()):
        body["exclude"] = [{"namespace": "team-a"}]
    return typed("HashJobNames", body)


@st.composite
def _set_steps(draw: st.DrawFn) -> Obj:
    steps: list[Obj] = [
        {"name": "pre-deploy", "timeout": "5m", "selectors": [{"kind": "Job"}]},
        {"name": "deploy", "timeout": draw(st.sampled_from(("10m", "1h30m", "90s")))},
        {"name": "post-deploy", "selectors": [{"kind": "CronJob"}, {"kind": "Widget"}]},
    ]
    body: Obj = {
        "steps": steps[: draw(st.integers(1, 3))],
        "wait": draw(st.booleans()),
        "emit": draw(st.lists(st.sampled_from(("depends-on", "argocd")), unique=True)),
    }
    if draw(st.integers(0, 4)) > 0:
        body["defaultStep"] = draw(st.sampled_from([s["name"] for s in body["steps"]]))
    return typed("SetSteps", body)


@st.composite
def _validate_jobs(draw: st.DrawFn) -> Obj:
    from krmfn.functions.validate_jobs.rules import RULES

    levels = st.sampled_from(("error", "warning", "info", "off"))
    return typed("ValidateJobs", {"severity": draw(st.dictionaries(st.sampled_from(sorted(RULES)), levels))})


INPUTS: Obj = {"tag": "1.2.3", "replicas": 3, "config": {"logLevel": "info"}, "title": "My App!"}
TEMPLATES = (
    "<< inputs.tag >>",
    "v-<< inputs.tag >>-<< inputs.replicas >>",
    "<< inputs.replicas >>",
    "<< inputs.replicas | quote >>",
    "<< inputs.config | toYaml | sha256sum >>",
    "<< inputs.title | slugify >>",
    "<< inputs.absent | default('fallback') >>",
    "<< inputs.config >>",
    "<< inputs.level >>",
    "<< inputs.absent >>",
    "cat <<EOF >> log",
    "<<inputs.tag>>",
)


@st.composite
def _templated(draw: st.DrawFn) -> list[Obj]:
    """A package with expressions in annotations, images, env values and replicas."""
    items = draw(manifests())
    for obj in items:
        if is_local_config(obj) or draw(st.integers(0, 2)) == 0:
            continue
        notes = obj["metadata"].setdefault("annotations", {})
        notes["example.com/rendered"] = draw(st.sampled_from(TEMPLATES))
        template = obj.get("spec", {}).get("template") if isinstance(obj.get("spec"), dict) else None
        if isinstance(template, dict):
            container = template["spec"]["containers"][0]
            container["image"] = "app:<< inputs.tag >>"
            container.setdefault("env", []).append({"name": "T", "value": draw(st.sampled_from(TEMPLATES))})
            if "replicas" in obj["spec"]:
                obj["spec"]["replicas"] = "<< inputs.replicas >>"
    return items


@st.composite
def _render_inputs(draw: st.DrawFn) -> Obj:
    inputs = dict(INPUTS)
    if draw(st.booleans()):
        # Not "<< inputs.tag >>": an input holding an expression renders again on the next run (reported).
        inputs["level"] = draw(st.sampled_from(("debug", "", "a: b")))
    body: Obj = {"inputs": inputs}
    if draw(st.integers(0, 3)) == 0:
        body["inputsFrom"] = [{"name": "local-settings"}]
    return typed("RenderInputs", body)


def _without_expressions(obj: Obj) -> bool:
    return "<<" not in json.dumps(obj, default=str)


SPECS: dict[str, Spec] = {
    "render-inputs": Spec("render-inputs", _render_inputs(), _without_expressions, _templated()),
    "set-image": Spec("set-image", _set_image(), lambda obj: obj["kind"] in NO_PODS),
    "set-config-checksum": Spec(
        "set-config-checksum", _set_config_checksum(), lambda obj: obj["kind"] in NO_PODS
    ),
    "hash-job-names": Spec("hash-job-names", _hash_job_names(), lambda obj: obj["kind"] != "Job"),
    "set-steps": Spec("set-steps", _set_steps(), is_local_config),
    "validate-jobs": Spec("validate-jobs", _validate_jobs(), lambda obj: True),
}
