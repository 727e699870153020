"""Hypothesis strategies for valid manifests: the workloads, config objects and CRs a krmfn package holds.

Names come from small pools so that references sometimes resolve (a ConfigMap that exists) and sometimes
do not (one that lives in the cluster, or in another namespace), and string values lean on what YAML
readers get wrong (``yes``, ``0755``, ``: ``, ``#``, multi-line text, non-ASCII).
"""

from __future__ import annotations

import base64
import random
from typing import Any

from hypothesis import strategies as st
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import DoubleQuotedScalarString, LiteralScalarString, SingleQuotedScalarString

from krmfn.yaml.io import dump

Obj = dict[str, Any]

NAMESPACES = (None, "default", "team-a")
LOCAL_CONFIG = {"config.kubernetes.io/local-config": "true"}
TRICKY = (
    "",
    "yes",
    "no",
    "on",
    "null",
    "~",
    "0755",
    "1.0",
    "1e3",
    "0x1F",
    "true",
    "2024-01-01",
    "a: b",
    "- item",
    "# not a comment",
    "x #y",
    "{a: 1}",
    "[1, 2]",
    "*alias",
    "&anchor",
    "!tag",
    "'quoted'",
    '"double"',
    "line one\nline two\n",
    "trailing space ",
    " leading space",
    "tab\there",
    "ünïcödé 日本",
    "<< not a template",
    "%percent",
    "@at",
    "`backtick`",
)
_SAFE_ALPHABET = st.characters(
    codec="utf-8", categories=["L", "N", "P", "S", "Zs"], exclude_characters="\x85\u2028\u2029"
)
IMAGE_NAMES = ("nginx", "busybox", "app", "team/worker", "library/redis")
REGISTRIES = ("", "ghcr.io/acme/", "localhost:5000/", "registry.example.com:443/team/")
CR_KEYS = ("size", "color", "replicas", "mode", "items", "weight", "target")


_LOWER = "abcdefghijklmnopqrstuvwxyz"
_ALNUM = _LOWER + "0123456789"


def dns_label(max_size: int = 20) -> st.SearchStrategy[str]:
    middle = st.text(_ALNUM + "-", max_size=max_size - 2)
    return st.builds(
        lambda first, mid, last: first + mid + last,
        st.sampled_from(_LOWER),
        middle,
        st.one_of(st.just(""), st.sampled_from(_ALNUM)),
    ).map(lambda s: s.rstrip("-") or "x")


def text_values() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(TRICKY), st.text(_SAFE_ALPHABET, max_size=24))


def label_values() -> st.SearchStrategy[str]:
    return st.one_of(
        st.just(""),
        st.text(_ALNUM + "ABCXYZ_.-", min_size=1, max_size=12).map(lambda s: s.strip("_.-") or "v"),
    )


def label_keys() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(("app", "tier", "app.kubernetes.io/name", "example.com/team")),
        dns_label(12).map(lambda s: f"example.com/{s}"),
    )


def annotation_keys() -> st.SearchStrategy[str]:
    return st.one_of(
        label_keys(), st.sampled_from(("example.com/note", "kubectl.kubernetes.io/last-applied"))
    )


@st.composite
def images(draw: st.DrawFn) -> str:
    ref = draw(st.sampled_from(REGISTRIES)) + draw(st.sampled_from(IMAGE_NAMES))
    if draw(st.booleans()):
        ref += ":" + draw(st.sampled_from(("1.2.3", "latest", "v2", "1.25-alpine", "3")))
    if draw(st.integers(0, 4)) == 0:
        ref += "@sha256:" + draw(st.binary(min_size=32, max_size=32)).hex()
    return ref


class Pools:
    """The names references are drawn from: those of present objects plus some that are absent."""

    def __init__(self, configmaps: list[str], secrets: list[str]) -> None:
        self.configmaps = [*configmaps, "absent-config"]
        self.secrets = [*secrets, "absent-secret"]


@st.composite
def env_vars(draw: st.DrawFn, pools: Pools) -> list[Obj]:
    out: list[Obj] = []
    for index in range(draw(st.integers(0, 3))):
        name = f"VAR_{index}"
        choice = draw(st.integers(0, 2))
        if choice == 0:
            out.append({"name": name, "value": draw(text_values())})
            continue
        kind, ref_key, pool = (
            ("configMapKeyRef", "name", pools.configmaps)
            if choice == 1
            else ("secretKeyRef", "name", pools.secrets)
        )
        ref: Obj = {ref_key: draw(st.sampled_from(pool)), "key": draw(st.sampled_from(("a", "b", "level")))}
        if draw(st.booleans()):
            ref["optional"] = draw(st.booleans())
        out.append({"name": name, "valueFrom": {kind: ref}})
    return out


@st.composite
def env_from(draw: st.DrawFn, pools: Pools) -> list[Obj]:
    out: list[Obj] = []
    for _ in range(draw(st.integers(0, 2))):
        if draw(st.booleans()):
            out.append({"configMapRef": {"name": draw(st.sampled_from(pools.configmaps))}})
        else:
            out.append({"secretRef": {"name": draw(st.sampled_from(pools.secrets))}})
    return out


@st.composite
def containers(draw: st.DrawFn, pools: Pools, prefix: str) -> list[Obj]:
    out: list[Obj] = []
    for index in range(draw(st.integers(1, 2))):
        container: Obj = {"name": f"{prefix}{index}", "image": draw(images())}
        env = draw(env_vars(pools))
        if env:
            container["env"] = env
        sources = draw(env_from(pools))
        if sources:
            container["envFrom"] = sources
        if draw(st.integers(0, 3)) == 0:
            container["command"] = ["sh", "-c", draw(text_values())]
        if draw(st.integers(0, 3)) == 0:
            container["ports"] = [{"containerPort": draw(st.integers(1, 65535))}]
        out.append(container)
    return out


@st.composite
def volumes(draw: st.DrawFn, pools: Pools) -> list[Obj]:
    out: list[Obj] = []
    for index in range(draw(st.integers(0, 3))):
        name = f"vol-{index}"
        choice = draw(st.integers(0, 3))
        if choice == 0:
            out.append({"name": name, "configMap": {"name": draw(st.sampled_from(pools.configmaps))}})
        elif choice == 1:
            out.append({"name": name, "secret": {"secretName": draw(st.sampled_from(pools.secrets))}})
        elif choice == 2:
            out.append(
                {
                    "name": name,
                    "projected": {
                        "sources": [
                            {"configMap": {"name": draw(st.sampled_from(pools.configmaps))}},
                            {"secret": {"name": draw(st.sampled_from(pools.secrets))}},
                        ]
                    },
                }
            )
        else:
            out.append({"name": name, "emptyDir": {}})
    return out


@st.composite
def pod_specs(draw: st.DrawFn, pools: Pools, restart: tuple[str, ...]) -> Obj:
    spec: Obj = {"containers": draw(containers(pools, "main-"))}
    if draw(st.integers(0, 3)) == 0:
        spec["initContainers"] = draw(containers(pools, "init-"))
    found = draw(volumes(pools))
    if found:
        spec["volumes"] = found
    if restart and draw(st.integers(0, 4)) > 0:
        spec["restartPolicy"] = draw(st.sampled_from(restart))
    return spec


@st.composite
def pod_templates(draw: st.DrawFn, pools: Pools, app: str, restart: tuple[str, ...]) -> Obj:
    template: Obj = {"metadata": {"labels": {"app": app}}, "spec": draw(pod_specs(pools, restart))}
    if draw(st.integers(0, 3)) == 0:
        template["metadata"]["annotations"] = {"example.com/note": draw(text_values())}
    return template


@st.composite
def metadata(draw: st.DrawFn, name: str, namespace: str | None) -> Obj:
    meta: Obj = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    labels = draw(st.dictionaries(label_keys(), label_values(), max_size=3))
    if labels:
        meta["labels"] = labels
    notes = draw(st.dictionaries(annotation_keys(), text_values(), max_size=3))
    if notes:
        meta["annotations"] = notes
    return meta


JOB_RESTART = ("Never", "OnFailure")
SCHEDULES = ("*/5 * * * *", "0 3 * * 1-5", "@daily", "@hourly", "30 2 1 * *")


def _workload(kind: str, draw: st.DrawFn, pools: Pools, meta: Obj) -> Obj:
    name = meta["name"]
    if kind in ("Deployment", "StatefulSet"):
        spec: Obj = {
            "replicas": draw(st.integers(0, 5)),
            "selector": {"matchLabels": {"app": name}},
            "template": draw(pod_templates(pools, name, ("Always",))),
        }
        if kind == "StatefulSet":
            spec["serviceName"] = name
        return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": spec}
    if kind == "Job":
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": meta,
            "spec": draw(job_specs(pools, name)),
        }
    if kind == "CronJob":
        spec = {
            "schedule": draw(st.sampled_from(SCHEDULES)),
            "jobTemplate": {"spec": draw(job_specs(pools, name))},
        }
        if draw(st.booleans()):
            spec["concurrencyPolicy"] = draw(st.sampled_from(("Forbid", "Allow", "Replace")))
        if draw(st.integers(0, 3)) == 0:
            spec["timeZone"] = draw(st.sampled_from(("Etc/UTC", "Europe/Paris", "America/New_York")))
        return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta, "spec": spec}
    if kind == "Pod":
        spec = draw(pod_specs(pools, ("Always", "Never", "OnFailure")))
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
    raise AssertionError(kind)


@st.composite
def job_specs(draw: st.DrawFn, pools: Pools, app: str) -> Obj:
    spec: Obj = {"template": draw(pod_templates(pools, app, JOB_RESTART))}
    if draw(st.booleans()):
        spec["backoffLimit"] = draw(st.integers(0, 6))
    if draw(st.integers(0, 3)) == 0:
        spec["ttlSecondsAfterFinished"] = draw(st.integers(0, 86400))
    if draw(st.integers(0, 3)) == 0:
        spec["activeDeadlineSeconds"] = draw(st.integers(1, 7200))
    return spec


def cr_values() -> st.SearchStrategy[Any]:
    leaves = st.one_of(
        text_values(),
        st.integers(-(2**40), 2**40),
        st.booleans(),
        st.none(),
        st.floats(allow_nan=False, allow_infinity=False, width=32),
    )
    return st.recursive(
        leaves,
        lambda children: st.one_of(
            st.lists(children, max_size=3), st.dictionaries(st.sampled_from(CR_KEYS), children, max_size=3)
        ),
        max_leaves=8,
    )


@st.composite
def manifests(draw: st.DrawFn, max_workloads: int = 6) -> list[Obj]:
    """A valid package: ConfigMaps, Secrets, workloads referencing them, a Service, a CR, local config."""
    config_names = draw(st.lists(dns_label(12), max_size=3, unique=True))
    secret_names = draw(st.lists(dns_label(12), max_size=2, unique=True))
    pools = Pools(config_names, secret_names)
    items: list[Obj] = []
    taken: set[tuple[str, str | None, str]] = set()

    def claim(kind: str, namespace: str | None, name: str) -> bool:
        key = (kind, namespace or "default", name)
        if key in taken:
            return False
        taken.add(key)
        return True

    for name in config_names:
        namespace = draw(st.sampled_from(NAMESPACES))
        if draw(st.integers(0, 3)) > 0 and claim("ConfigMap", namespace, name):
            items.append(draw(configmaps(name, namespace)))
    for name in secret_names:
        namespace = draw(st.sampled_from(NAMESPACES))
        if draw(st.integers(0, 3)) > 0 and claim("Secret", namespace, name):
            items.append(draw(secrets(name, namespace)))
    kinds = ("Deployment", "StatefulSet", "Job", "CronJob", "Pod", "Service", "Widget")
    for kind in draw(st.lists(st.sampled_from(kinds), max_size=max_workloads)):
        long_names = kind in ("Job", "CronJob") and draw(st.integers(0, 5)) == 0
        name = draw(dns_label(60 if long_names else 20))
        namespace = draw(st.sampled_from(NAMESPACES))
        if not claim(kind, namespace, name):
            continue
        meta = draw(metadata(name, namespace))
        if kind == "Service":
            items.append(services(meta))
        elif kind == "Widget":
            items.append(
                {
                    "apiVersion": "example.com/v1",
                    "kind": "Widget",
                    "metadata": meta,
                    "spec": draw(cr_values()),
                }
            )
        else:
            items.append(_workload(kind, draw, pools, meta))
    if draw(st.integers(0, 3)) == 0:
        items.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "local-settings", "annotations": dict(LOCAL_CONFIG)},
                "data": {"note": draw(text_values())},
            }
        )
    order = draw(st.permutations(range(len(items))))
    items = [items[i] for i in order]
    if draw(st.booleans()):
        _add_kpt_bookkeeping(items)
    return items


@st.composite
def configmaps(draw: st.DrawFn, name: str, namespace: str | None) -> Obj:
    obj: Obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": draw(metadata(name, namespace))}
    data: dict[str, str] = draw(
        st.dictionaries(st.sampled_from(("a", "b", "level", "app.yaml")), text_values(), max_size=3)
    )
    keep_empty: bool = draw(st.booleans())
    if data or keep_empty:
        obj["data"] = data
    if draw(st.integers(0, 5)) == 0:
        obj["binaryData"] = {"blob": base64.b64encode(draw(st.binary(max_size=12))).decode()}
    return obj


@st.composite
def secrets(draw: st.DrawFn, name: str, namespace: str | None) -> Obj:
    obj: Obj = {"apiVersion": "v1", "kind": "Secret", "metadata": draw(metadata(name, namespace))}
    if draw(st.booleans()):
        obj["type"] = draw(st.sampled_from(("Opaque", "kubernetes.io/basic-auth")))
    data = draw(st.dictionaries(st.sampled_from(("a", "b", "password")), st.binary(max_size=16), max_size=2))
    if data:
        obj["data"] = {k: base64.b64encode(v).decode() for k, v in data.items()}
    plain = draw(st.dictionaries(st.sampled_from(("c", "token")), text_values(), max_size=2))
    if plain:
        obj["stringData"] = plain
    return obj


def services(meta: Obj) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta,
        "spec": {"selector": {"app": meta["name"]}, "ports": [{"port": 80, "targetPort": 8080}]},
    }


def _add_kpt_bookkeeping(items: list[Obj]) -> None:
    """What ``kpt fn render`` adds: the file each object came from, its index, and the id annotation."""
    for index, obj in enumerate(items):
        notes = obj["metadata"].setdefault("annotations", {})
        path = f"{obj['kind'].lower()}-{obj['metadata']['name']}.yaml"
        notes["config.kubernetes.io/index"] = "0"
        notes["internal.config.kubernetes.io/index"] = "0"
        notes["internal.config.kubernetes.io/path"] = path
        notes["config.kubernetes.io/path"] = path
        notes["internal.config.kubernetes.io/seqindent"] = "compact"
        notes["config.k8s.io/id"] = str(index + 1)


def resource_list(items: list[Obj], function_config: Obj | None) -> Obj:
    root: Obj = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": items}
    if function_config is not None:
        root["functionConfig"] = function_config
    return root


def styled(value: Any, rnd: random.Random, depth: int = 0, in_flow: bool = False) -> Any:
    """The same data with random YAML styles: flow collections, quoted and literal scalars, comments.

    The fidelity path must keep all of these on every field a function does not change. The root, the
    items list and the items themselves stay in block style, as kpt sends them (a comment's column in a
    flow collection depends on everything before it on the line, so ruamel cannot keep it there).
    """
    if isinstance(value, dict):
        mapping = CommentedMap()
        flow = in_flow or (depth >= 3 and bool(value) and rnd.random() < 0.15)
        for key, child in value.items():
            mapping[key] = styled(child, rnd, depth + 1, flow)
        if flow:
            mapping.fa.set_flow_style()
        elif value and rnd.random() < 0.2:
            key = rnd.choice(list(value))
            if not isinstance(mapping[key], (dict, list)):
                mapping.yaml_add_eol_comment(f"# why {key}", key)
        return mapping
    if isinstance(value, list):
        flow = in_flow or (depth >= 3 and bool(value) and rnd.random() < 0.2)
        seq = CommentedSeq(styled(child, rnd, depth + 1, flow) for child in value)
        if flow:
            seq.fa.set_flow_style()
        return seq
    if isinstance(value, str):
        roll = rnd.random()
        literal_ok = not in_flow and not value.endswith((" ", "\t")) and "\t" not in value
        if "\n" in value and roll < 0.5 and literal_ok:
            return LiteralScalarString(value)
        if roll < 0.2:
            return SingleQuotedScalarString(value)
        if roll < 0.35:
            return DoubleQuotedScalarString(value)
    return value


def styled_text(root: Obj, seed: int) -> str:
    return dump(styled(root, random.Random(seed)), "fidelity")
