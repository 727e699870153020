"""Fuzzing the ResourceList parser and every function's entry point: seeds, mutations and the oracle.

The oracle (``check``) holds for ANY input: the call returns within a time bound, writes a ResourceList
whose items are valid, exits 0 only without error results and 1 only with one, never shows a traceback
and never turns a bug into an "internal error" result. Used by the short fuzz tests in the suite and by
``bench/fuzz.py`` for long runs.
"""

from __future__ import annotations

import io
import random
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from krmfn.registry import CANONICAL_ORDER, load
from krmfn.sdk.function import Function
from krmfn.sdk.resourcelist import choose_mode
from krmfn.sdk.results import Results
from krmfn.yaml.io import dump_fast
from robustness.harness import Hang, output_problems, time_bound

TIME_BOUND = 2.0
SECONDS_PER_MB = 1.5  # ruamel, on the fidelity path, reads about 1 MB a second


def time_limit(data: bytes) -> float:
    return TIME_BOUND + SECONDS_PER_MB * len(data) / 1e6


@dataclass(frozen=True)
class NoConfig:
    """The parser target takes no configuration."""


def _parse_only(rl: Any, config: NoConfig) -> None:
    results: Results = rl.results
    results.info(f"parsed {len(rl.items)} item(s)")


PARSER = Function(name="parse", kind="Parse", config=NoConfig, transform=_parse_only, summary="parse only")


def targets() -> dict[str, Function[Any]]:
    return {"parser": PARSER, **{name: load(name) for name in CANONICAL_ORDER}}


def _pod_spec(image: str, config: str, secret: str) -> dict[str, Any]:
    return {
        "restartPolicy": "Never",
        "initContainers": [{"name": "init", "image": "busybox:1.36"}],
        "containers": [
            {
                "name": "main",
                "image": image,
                "env": [
                    {"name": "LEVEL", "valueFrom": {"configMapKeyRef": {"name": config, "key": "level"}}},
                    {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": secret, "key": "token"}}},
                    {"name": "TAG", "value": "<< inputs.tag >>"},
                ],
                "envFrom": [{"configMapRef": {"name": config}}],
            }
        ],
        "volumes": [
            {"name": "cfg", "configMap": {"name": config}},
            {"name": "sec", "secret": {"secretName": secret}},
        ],
    }


def seed_items() -> list[dict[str, Any]]:
    """One of each kind the functions care about, referencing each other."""
    kpt = {
        "config.kubernetes.io/index": "0",
        "internal.config.kubernetes.io/path": "app.yaml",
        "internal.config.kubernetes.io/seqindent": "compact",
    }
    meta = {"namespace": "apps", "labels": {"app": "demo"}}
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "settings", **meta, "annotations": dict(kpt)},
            "data": {"level": "info", "tag": "1.2.3", "app.yaml": "a: 1\nb: [x, y]\n"},
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "creds", **meta},
            "type": "Opaque",
            "data": {"token": "c2VjcmV0"},
            "stringData": {"password": "hunter2"},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", **meta, "annotations": {"krmfn.dev/step": "deploy"}},
            "spec": {
                "replicas": "<< inputs.replicas >>",
                "selector": {"matchLabels": {"app": "demo"}},
                "template": {
                    "metadata": {"labels": {"app": "demo"}},
                    "spec": {
                        **_pod_spec("ghcr.io/acme/app:1.0.0", "settings", "creds"),
                        "restartPolicy": "Always",
                    },
                },
            },
        },
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "db-migration", **meta},
            "spec": {"backoffLimit": 1, "template": {"spec": _pod_spec("nginx:1.25", "settings", "creds")}},
        },
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {
                "name": "nightly",
                **meta,
                "annotations": {"config.kubernetes.io/depends-on": "batch/namespaces/apps/Job/db-migration"},
            },
            "spec": {
                "schedule": "30 2 * * *",
                "timeZone": "Europe/Paris",
                "jobTemplate": {"spec": {"template": {"spec": _pod_spec("busybox", "settings", "creds")}}},
            },
        },
        {
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
            "kind": "Kustomization",
            "metadata": {"name": "apps", "namespace": "flux-system"},
            "spec": {"images": [{"name": "ghcr.io/acme/app", "newTag": "1.0.0"}], "path": "./apps"},
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "inputs", "annotations": {"config.kubernetes.io/local-config": "true"}},
            "data": {"tag": "2.0.0"},
        },
    ]


def seed_config(function: Function[Any]) -> Any:
    """The function's documented example config (every field exercised), for the function's own seeds."""
    from krmfn.yaml.io import load_all_fast

    if not function.example:
        return None
    return next(iter(load_all_fast(function.example)))


def seed_text(function: Function[Any]) -> str:
    root: dict[str, Any] = {
        "apiVersion": "config.kubernetes.io/v1",
        "kind": "ResourceList",
        "items": seed_items(),
    }
    config = seed_config(function)
    if config is not None:
        root["functionConfig"] = config
    return dump_fast(root)


# --- mutations: each takes (rnd, data) and returns new bytes ----------------------------------------------

Mutation = Callable[[random.Random, bytes], bytes]
WEIRD_VALUES: tuple[Any, ...] = (
    None,
    0,
    -1,
    2**70,
    1.5e308,
    float("inf"),
    True,
    "",
    "x" * 300,
    [],
    {},
    [None],
    {"": None},
    {"a": {"b": [1, {"c": None}]}},
    "<< inputs.tag >>",
    "<< inputs.nope >>",
    "sha256:",
    "UPPER_case name",
    "a" * 70,
    "../../etc/passwd",
)


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def truncate(rnd: random.Random, data: bytes) -> bytes:
    return data[: rnd.randrange(len(data) + 1)]


def flip_bytes(rnd: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rnd.randint(1, 8)):
        if out:
            out[rnd.randrange(len(out))] = rnd.randrange(256)
    return bytes(out)


def insert_bytes(rnd: random.Random, data: bytes) -> bytes:
    chunk = rnd.choice(
        (
            b"\xff\xfe",
            b"\xc3\x28",
            b"\xed\xa0\x80",
            b"\x00",
            b"\t",
            b"\xef\xbb\xbf",
            b"\r\n",
            b"\xc2\x85",
            b"\xe2\x80\xa8",
            b": ",
            b"- ",
            b"{",
            b"]",
            b"'",
            b'"',
            b"|",
            b"&a ",
            b"*a",
            b"!!binary ",
            b"? ",
            b"%YAML 1.1\n",
            b"\n---\n",
            b"\n...\n",
            b"#",
        )
    )
    at = rnd.randrange(len(data) + 1)
    return data[:at] + chunk + data[at:]


def duplicate_line(rnd: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    at = rnd.randrange(len(lines))
    return b"\n".join([*lines[: at + 1], lines[at], *lines[at + 1 :]])


def tabs_for_indent(rnd: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    at = rnd.randrange(len(lines))
    lines[at] = lines[at].replace(b"  ", b"\t", 1)
    return b"\n".join(lines)


def bom(rnd: random.Random, data: bytes) -> bytes:
    return b"\xef\xbb\xbf" + data if rnd.random() < 0.5 else data.replace(b"\n", b"\n\xef\xbb\xbf", 1)


def multiple_documents(rnd: random.Random, data: bytes) -> bytes:
    return data + rnd.choice((b"---\n", b"---\nkind: Other\n", b"...\n---\n", b"--- |\n  text\n")) + data


def crlf(rnd: random.Random, data: bytes) -> bytes:
    return data.replace(b"\n", b"\r\n")


def anchors(rnd: random.Random, data: bytes) -> bytes:
    """Anchor one value and alias it elsewhere, or splice a merge key."""
    lines = _lines(data)
    keyed = [i for i, line in enumerate(lines) if b": " in line and not line.rstrip().endswith(b":")]
    if len(keyed) < 2:
        return data
    first, second = sorted(rnd.sample(keyed, 2))
    key, _, value = lines[first].partition(b": ")
    lines[first] = key + b": &x " + value
    key2, _, _ = lines[second].partition(b": ")
    lines[second] = key2 + (b": *x" if rnd.random() < 0.8 else b": {<<: *x}")
    return b"\n".join(lines)


def billion_laughs(rnd: random.Random, data: bytes) -> bytes:
    levels = rnd.randint(4, 10)
    bomb = [b"bomb:", b"  l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    bomb += [f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]".encode() for i in range(1, levels)]
    return (
        data.replace(b"functionConfig:", b"\n".join(bomb) + b"\nfunctionConfig:", 1)
        if b"functionConfig:" in data
        else data + b"\n".join(bomb) + b"\n"
    )


def deep_nesting(rnd: random.Random, data: bytes) -> bytes:
    depth = rnd.choice((50, 99, 100, 101, 150, 1000, 5000))
    opener, closer = rnd.choice(((b"[", b"]"), (b"{a: ", b"}"), (b"[{a: ", b"}]")))
    return data + b"extra: " + opener * depth + b"1" + closer * depth + b"\n"


def huge_scalar(rnd: random.Random, data: bytes) -> bytes:
    size = rnd.choice((10_000, 300_000, 1_000_000))
    style = rnd.choice((b"", b'"', b"'"))
    return data + b"huge: " + style + b"x" * size + style + b"\n"


def odd_tags(rnd: random.Random, data: bytes) -> bytes:
    tag = rnd.choice(
        (
            b"!!binary",
            b"!!set",
            b"!!omap",
            b"!!python/object/apply:os.system",
            b"!custom",
            b"!!float",
            b"!!int",
            b"!!timestamp",
            b"!!str",
            b"!!map",
            b"!!seq",
            b"!<tag:yaml.org,2002:null>",
        )
    )
    lines = _lines(data)
    keyed = [i for i, line in enumerate(lines) if b": " in line]
    if not keyed:
        return data
    at = rnd.choice(keyed)
    key, _, value = lines[at].partition(b": ")
    lines[at] = key + b": " + tag + b" " + value
    return b"\n".join(lines)


def structural(rnd: random.Random, data: bytes) -> bytes:
    """Replace one node of the parsed document with a value of another type: what type confusion in a
    function looks like (``metadata: []``, ``containers: {}``, ``image: 5``, annotations with int keys)."""
    from krmfn.limits import Limits
    from krmfn.yaml.io import load as yaml_load

    try:
        doc = yaml_load(data.decode(), "fast", Limits())
    except Exception:
        return data
    nodes: list[tuple[Any, Any]] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, child in value.items():
                nodes.append((value, key))
                walk(child)
        elif isinstance(value, list):
            for index, child in enumerate(value):
                nodes.append((value, index))
                walk(child)

    walk(doc)
    for _ in range(rnd.randint(1, 3)):
        if not nodes:
            break
        parent, key = rnd.choice(nodes)
        choice = rnd.random()
        if choice < 0.7:
            parent[key] = rnd.choice(WEIRD_VALUES)
        elif choice < 0.85 and isinstance(parent, dict):
            parent[rnd.choice((1, None, True, 1.5, "metadata", "kind"))] = parent.pop(key)
        elif isinstance(parent, dict):
            del parent[key]
        nodes = []
        walk(doc)
    return dump_fast(doc).encode()


MUTATIONS: dict[str, Mutation] = {
    "truncate": truncate,
    "flip-bytes": flip_bytes,
    "insert-bytes": insert_bytes,
    "duplicate-line": duplicate_line,
    "tabs": tabs_for_indent,
    "bom": bom,
    "multi-doc": multiple_documents,
    "crlf": crlf,
    "anchors": anchors,
    "billion-laughs": billion_laughs,
    "deep-nesting": deep_nesting,
    "huge-scalar": huge_scalar,
    "tags": odd_tags,
    "structural": structural,
}


def mutate(rnd: random.Random, data: bytes, rounds: int = 0) -> tuple[bytes, list[str]]:
    applied = []
    for _ in range(rounds or rnd.choice((1, 1, 1, 2, 3))):
        name = rnd.choice(list(MUTATIONS))
        data = MUTATIONS[name](rnd, data)
        applied.append(name)
    return data, applied


# --- the oracle --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    target: str
    kind: str
    detail: str
    data: bytes


def check(
    target: str, function: Function[Any], data: bytes, mode: str | None = None, bounded: bool = True
) -> list[Finding]:
    """Run the pure core and the CLI edge on ``data`` (decoded as Python decodes stdin); list what broke.

    ``bounded=False`` leaves time bounds to the caller (libFuzzer's -timeout owns SIGALRM under atheris).
    """
    text = data.decode("utf-8", "surrogateescape")
    found: list[Finding] = []

    def finding(kind: str, detail: str) -> None:
        found.append(Finding(target, kind, detail[:2000], data))

    try:
        with time_bound(time_limit(data)) if bounded else nullcontext():
            out, code = function.process(text, mode)
    except Hang as err:
        finding("hang", str(err))
        return found
    except BaseException as err:
        finding("raised", f"{type(err).__name__}: {err}")
        return found
    # Written on the path chosen for the input, or on the fast path after an input error.
    problems = output_problems(out, code, "fast", text)
    if problems and choose_mode(text, mode) == "fidelity":
        problems = output_problems(out, code, "fidelity", text)
    for problem in problems:
        finding("bad-output", problem)
    stdout, stderr = io.StringIO(), io.StringIO()
    argv = ["--yaml", mode] if mode else []
    try:
        with time_bound(time_limit(data)) if bounded else nullcontext():
            cli_code = function.main(argv, io.StringIO(text), stdout, stderr)
    except Hang as err:
        finding("hang", f"CLI edge: {err}")
        return found
    except BaseException as err:
        finding("raised", f"CLI edge: {type(err).__name__}: {err}")
        return found
    if "Traceback" in stderr.getvalue():
        finding("traceback", stderr.getvalue())
    if (cli_code, stdout.getvalue()) != (code, out):
        finding("cli-differs", f"process() exit {code}, main() exit {cli_code}")
    if cli_code == 1 and not stderr.getvalue().strip():
        finding("silent-error", "exit code 1 with nothing on stderr")
    return found
