"""Differential test: set-image against the real kustomize ``images`` transformer.

Generated rule sets (deterministic seed) each get a sub-kustomization with many resources; one
``kustomize build`` renders them all, and set-image must produce exactly the same objects. tagSuffix is
left out of the random cases: kustomize appends it twice to pod-template containers, krmfn once (see
the README); the documented difference is asserted on its own below, as is literal name matching.
"""

from __future__ import annotations

import copy
import random
import subprocess
from pathlib import Path
from typing import Any

from set_image_support import kustomize, run_set_image, set_image_config

from krmfn.yaml.io import dump_fast, load_all_fast

SEED = 20240611
RULE_SETS = 24
IMAGES_PER_SET = 30
NAMES = [
    "nginx",
    "library/nginx",
    "docker.io/library/nginx",
    "app",
    "ghcr.io/acme/app",
    "ghcr.io/acme/app-worker",
    "localhost:5000/team/svc",
    "registry.example.com:8443/a/b/c",
    "quay.io/org/tool_x",
    "my-registry.local/ns/img",
]
NEW_NAMES = [*NAMES, "mirror.example.com/cache/nginx", "localhost:5000/app", "other"]
TAGS = ["1.0", "1.2.3", "v2", "latest", "{STABLE_GIT_COMMIT}", "1.2.3-rc.1", "x_y.z", ""]


def _digest(rng: random.Random) -> str:
    algorithm = rng.choice(["sha256", "sha512", "multihash+base58"])
    return f"{algorithm}:{''.join(rng.choice('0123456789abcdef') for _ in range(rng.choice([12, 64])))}"


def _reference(rng: random.Random, bases: list[str], digests: list[str]) -> str:
    name = rng.choice(bases) if rng.random() < 0.7 else rng.choice(NAMES)
    if rng.random() < 0.7:
        name += ":" + rng.choice(TAGS)
    if rng.random() < 0.3:
        name += "@" + rng.choice(digests)
    return name


def _rule(rng: random.Random, digests: list[str]) -> dict[str, str]:
    name = rng.choice(NAMES)
    narrowing = rng.random()
    if narrowing < 0.15:
        name += ":" + rng.choice(TAGS[:4])
    elif narrowing < 0.2:
        name += "@" + rng.choice(digests)
    rule = {"name": name}
    while len(rule) == 1:
        if rng.random() < 0.5:
            rule["newName"] = rng.choice(NEW_NAMES)
        if rng.random() < 0.5:
            rule["newTag"] = rng.choice([t for t in TAGS if t])
        if rng.random() < 0.4:
            rule["digest"] = rng.choice(digests)
    return rule


def _containers(images: list[str], prefix: str) -> list[dict[str, str]]:
    return [{"name": f"{prefix}{i}", "image": image} for i, image in enumerate(images)]


def _resources(images: list[str], set_name: str) -> list[dict[str, Any]]:
    """The images spread over every place both tools look: pod specs of several kinds, image volumes,
    and containers nested in a custom resource (kustomize finds ``containers`` at any depth)."""
    chunks = [images[i::6] for i in range(6)]
    pod_spec = {"containers": _containers(chunks[0], "c"), "initContainers": _containers(chunks[1], "i")}
    volumes = [{"name": f"v{i}", "image": {"reference": ref}} for i, ref in enumerate(chunks[5])]
    meta = lambda kind: {"name": f"{set_name}-{kind.lower()}"}  # noqa: E731
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": meta("Pod"),
            "spec": {**pod_spec, "volumes": copy.deepcopy(volumes)},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": meta("Deployment"),
            "spec": {"template": {"spec": {"containers": _containers(chunks[2], "c"), "volumes": volumes}}},
        },
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": meta("CronJob"),
            "spec": {
                "jobTemplate": {"spec": {"template": {"spec": {"containers": _containers(chunks[3], "c")}}}}
            },
        },
        {
            "apiVersion": "example.com/v1",
            "kind": "Pipeline",
            "metadata": meta("Pipeline"),
            "spec": {"stages": [{"run": {"containers": _containers(chunks[4], "s")}}]},
        },
    ]


def _generate(rng: random.Random) -> list[tuple[list[dict[str, str]], list[dict[str, Any]], int]]:
    sets = []
    for index in range(RULE_SETS):
        digests = [_digest(rng) for _ in range(3)]
        rules = [_rule(rng, digests) for _ in range(rng.randint(1, 3))]
        bases = [
            r["name"].split("@")[0].rsplit(":", 1)[0] if "/" not in r["name"] else r["name"] for r in rules
        ]
        bases += [r.get("newName", r["name"]) for r in rules]
        images = [_reference(rng, bases, digests) for _ in range(IMAGES_PER_SET)]
        images += [r["name"] for r in rules]  # the rule's own name, tag or digest included, must match
        sets.append((rules, _resources(images, f"set{index}"), len(images) + len(images[5::6])))
    return sets


def _build(tmp: Path, sets: list[tuple[list[dict[str, str]], list[dict[str, Any]], int]]) -> list[Any]:
    for index, (rules, resources, _) in enumerate(sets):
        directory = tmp / f"set{index}"
        directory.mkdir()
        (directory / "resources.yaml").write_text("---\n".join(dump_fast(r) for r in resources))
        (directory / "kustomization.yaml").write_text(
            dump_fast({"resources": ["resources.yaml"], "images": rules})
        )
    (tmp / "kustomization.yaml").write_text(dump_fast({"resources": [f"set{i}" for i in range(len(sets))]}))
    proc = subprocess.run([kustomize(), "build", str(tmp)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return [d for d in load_all_fast(proc.stdout) if d]


def _images(value: Any, path: str = "") -> dict[str, str]:
    found: dict[str, str] = {}
    if isinstance(value, dict):
        for key, child in value.items():
            here = f"{path}.{key}"
            if key in ("image", "reference") and isinstance(child, str):
                found[here] = child
            found.update(_images(child, here))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found.update(_images(child, f"{path}[{index}]"))
    return found


def test_set_image_equals_kustomize_on_generated_cases(tmp_path: Path) -> None:
    sets = _generate(random.Random(SEED))
    built = {o["metadata"]["name"]: o for o in _build(tmp_path, sets)}
    compared = changed = 0
    mismatches = []
    for rules, resources, _ in sets:
        before = {r["metadata"]["name"]: _images(r) for r in resources}
        items, _ = run_set_image(resources, set_image_config(rules))
        for item in items:
            name = item["metadata"]["name"]
            ours, theirs = _images(item), _images(built[name])
            assert ours.keys() == theirs.keys()
            for path, value in ours.items():
                compared += 1
                changed += value != before[name][path]
                if value != theirs[path]:
                    mismatches.append(
                        f"{rules} {before[name][path]!r}: krmfn {value!r}, kustomize {theirs[path]!r}"
                    )
            assert item == built[name], f"{name}: objects differ beyond images"
    assert not mismatches, f"{len(mismatches)} of {compared} differ:\n" + "\n".join(mismatches[:20])
    print(f"{compared} images compared, {changed} changed")
    assert compared >= 500
    assert changed >= compared // 5, f"only {changed} of {compared} images changed: the generator is too tame"


def _kustomize_build(tmp: Path, rules: list[dict[str, str]], resources: list[dict[str, Any]]) -> list[Any]:
    (tmp / "resources.yaml").write_text("---\n".join(dump_fast(r) for r in resources))
    (tmp / "kustomization.yaml").write_text(dump_fast({"resources": ["resources.yaml"], "images": rules}))
    proc = subprocess.run([kustomize(), "build", str(tmp)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return [o for o in load_all_fast(proc.stdout) if o]


# kustomize's legacy walk and its image fieldSpecs both cover these, so it applies each rule twice there.
TWO_PASSES = (
    "suffix-pod.spec.containers",
    "suffix-pod.spec.initContainers",
    "suffix-deployment.spec.template.spec.containers",
)


def test_tag_suffix_is_appended_once_where_kustomize_appends_twice(tmp_path: Path) -> None:
    rules = [{"name": "nginx", "tagSuffix": "-alpine"}, {"name": "ghcr.io/acme/app", "tagSuffix": "-debug"}]
    images = ["nginx:1.2.3", "ghcr.io/acme/app:v1@sha256:abc", "nginx", "busybox:1", "nginx:2-alpine"]
    resources = _resources(images * 6, "suffix")
    theirs = {o["metadata"]["name"]: _images(o) for o in _kustomize_build(tmp_path, rules, resources)}
    items, _ = run_set_image(resources, set_image_config(rules))
    once = {
        "nginx:1.2.3": "nginx:1.2.3-alpine",
        "ghcr.io/acme/app:v1@sha256:abc": "ghcr.io/acme/app:v1-debug",
        "nginx": "nginx:-alpine",
        "busybox:1": "busybox:1",
        "nginx:2-alpine": "nginx:2-alpine",  # already suffixed: krmfn leaves it, so a re-render is a no-op
    }
    before = {r["metadata"]["name"]: _images(r) for r in resources}
    doubled = 0
    for item in items:
        name = item["metadata"]["name"]
        for path, value in _images(item).items():
            original = before[name][path]
            assert value == once[original], (name, path)
            suffix = "-alpine" if original.startswith("nginx") else "-debug"
            if original == "busybox:1":
                expected = original
            elif (name + path).startswith(TWO_PASSES):
                expected = value + suffix if original != "nginx:2-alpine" else original + suffix + suffix
                doubled += 1
            else:
                expected = value if original != "nginx:2-alpine" else original + suffix
            assert theirs[name][path] == expected, (name, path, original)
    assert doubled >= 10


def test_name_is_matched_literally_where_kustomize_reads_a_regexp(tmp_path: Path) -> None:
    rules = [{"name": "my.app", "newTag": "9"}]
    resources = _resources(["myxapp:1", "my.app:1"] * 6, "literal")
    theirs = {v for o in _kustomize_build(tmp_path, rules, resources) for v in _images(o).values()}
    items, _ = run_set_image(resources, set_image_config(rules))
    ours = {v for o in items for v in _images(o).values()}
    assert theirs == {"myxapp:9", "my.app:9"}
    assert ours == {"myxapp:1", "my.app:9"}
