# ruff: noqa: E501  (the package files are written as people write them, long flow lines included)
"""kpt packages as people have them, through the real kpt and through ``krmfn render --in-place``.

Issue 16 item 3: a package with a ``kustomization.yaml`` (also the short form without apiVersion and
kind) renders; krmfn leaves such documents untouched. Item 5: ``krmfn render --in-place`` writes the
same bytes as ``kpt fn render`` (flow style, ``0755``, dates, comments, quoting, both sequence indent
styles, subpackages), so the same Job gets the same hash.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from e2e import package_files, run, tool

from krmfn.functions.hash_job_names import FUNCTION as HASH_JOB_NAMES
from krmfn.yaml.io import dump_fast

pytestmark = pytest.mark.e2e

KPTFILE = """\
apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: {name}
pipeline:
  mutators:
  - exec: krmfn-set-config-checksum
  - exec: krmfn-hash-job-names
"""

JOB = """\
# the migration, run before each rollout
apiVersion: batch/v1
kind: Job
metadata:
  name: migrate{suffix}
  annotations:
    released: 2024-01-01
    quoted: "y"
    bare: n   # a YAML 1.1 boolean, a YAML 1.2 string: kept as written
    octal-text: '0755'
spec:
  backoffLimit: 0x2
  template:
    spec:
      restartPolicy: Never
      containers: [{name: m, image: "ghcr.io/acme/app:1.0", ports: [{containerPort: 80}], envFrom: [{configMapRef: {name: settings}}]}]
      volumes:
      - name: scripts
        configMap: {name: settings, defaultMode: 0755}
"""

WIDE_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web, tier: "1"}
spec:
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
        - name: web
          image: ghcr.io/acme/web:1.0
          args:
            - --when=2024-01-01T00:00:00Z
            - "--ratio=1e3"
          env:
            - {name: ON, value: "on"}
          envFrom:
            - configMapRef:
                name: settings
"""

CONFIG = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  mode: "0644"
  level: 'N'
  script: |
    #!/bin/sh
    echo ready
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: local-values
  annotations:
    config.kubernetes.io/local-config: "true"
data: {ports: "[{a: 1}]", flag: "yes"}
"""

SHORT_KUSTOMIZATION = "resources:\n- job.yaml\nnamePrefix: prod-\n"
FULL_KUSTOMIZATION = (
    "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [deployment.yaml]\n"
)


def package(root: Path, name: str, variant: int) -> Path:
    """One package of the corpus; ``variant`` picks which of the awkward parts it has."""
    directory = root / name
    directory.mkdir(parents=True)
    (directory / "Kptfile").write_text(KPTFILE.format(name=name))
    (directory / "job.yaml").write_text(JOB.replace("{suffix}", "" if variant % 2 else "-1234abcd"))
    (directory / "config.yaml").write_text(CONFIG)
    if variant % 3 != 1:
        (directory / "deployment.yaml").write_text(WIDE_DEPLOYMENT)
    if variant % 2 == 0:
        (directory / "kustomization.yaml").write_text(SHORT_KUSTOMIZATION)
    if variant % 3 == 0:
        (directory / "overlay").mkdir()
        (directory / "overlay" / "kustomization.yaml").write_text(FULL_KUSTOMIZATION)
    if variant >= 2:
        sub = directory / "sub"
        sub.mkdir()
        (sub / "Kptfile").write_text(KPTFILE.format(name=f"{name}-sub"))
        (sub / "job.yaml").write_text(JOB.replace("{suffix}", "-sub"))
        (sub / "config.yaml").write_text(CONFIG.replace("echo ready", "echo sub"))
    return directory


# Quick profile: three packages that between them hold every awkward part; KRMFN_CONFORMANCE=full: all.
VARIANTS = list(range(12)) if os.environ.get("KRMFN_CONFORMANCE") == "full" else [0, 2, 5]


@pytest.mark.parametrize("variant", VARIANTS)
def test_render_in_place_writes_what_kpt_writes(tmp_path: Path, variant: int) -> None:
    by_kpt = package(tmp_path / "kpt", "pkg", variant)
    by_krmfn = package(tmp_path / "krmfn", "pkg", variant)
    source = package_files(by_kpt)
    run([tool("kpt"), "fn", "render", "--allow-exec", str(by_kpt)], tmp_path)
    done = run(["krmfn", "render", "--in-place", str(by_krmfn)], tmp_path)
    assert done.stderr == ""
    rendered = package_files(by_kpt)
    assert rendered != source, "the pipeline changed nothing: the test would prove nothing"
    mine = package_files(by_krmfn)
    for name in sorted(rendered.keys() | mine.keys()):
        assert mine.get(name) == rendered.get(name), f"{name} differs from kpt's:\n{mine.get(name)!r}"
    for name, data in source.items():  # kustomizations and local config are never touched
        if "kustomization" in name:
            assert rendered[name] == data, name
    # A second render changes nothing, under either.
    run([tool("kpt"), "fn", "render", "--allow-exec", str(by_kpt)], tmp_path)
    run(["krmfn", "render", "--in-place", str(by_krmfn)], tmp_path)
    assert package_files(by_kpt) == rendered == package_files(by_krmfn)


# Layout kpt normalizes in every file it writes, untouched ones too (go-yaml v3 re-emits each document):
# the spacing before a line comment after a scalar, a flow collection, a key with a block value and a
# sequence entry, and the spacing after a sequence dash.
LAYOUTS = {
    "scalar-comment": "  name: c{gap}# the name\n",
    "flow-comment": "  labels: {{a: b}}{gap}# flow\n",
    "key-comment": "  annotations:{gap}# block value follows\n    x: y\n",
    "dash-spacing": "  finalizers:\n  -{gap}example.com/keep{gap}# item\n",
}


@pytest.mark.parametrize("gap", ["   ", "      "], ids=["3", "6"])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_in_place_lays_out_untouched_files_as_kpt_does(tmp_path: Path, layout: str, gap: str) -> None:
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n" + LAYOUTS[layout].format(gap=gap)
    if "name: c" not in text:
        text = text.replace("metadata:\n", "metadata:\n  name: c\n")
    written = {}
    for who in ("kpt", "krmfn"):
        directory = tmp_path / who
        directory.mkdir()
        (directory / "Kptfile").write_text(KPTFILE.format(name=who))
        (directory / "cm.yaml").write_text(text)
        if who == "kpt":
            run([tool("kpt"), "fn", "render", "--allow-exec", str(directory)], tmp_path)
        else:
            run(["krmfn", "render", "--in-place", str(directory)], tmp_path)
        written[who] = (directory / "cm.yaml").read_text()
    assert written["kpt"] != text, "kpt changed nothing: the case would prove nothing"
    assert written["krmfn"] == written["kpt"]


def test_in_place_keeps_a_document_the_kpt_layout_cannot_read(tmp_path: Path) -> None:
    """A tab before a comment is valid YAML that the round-trip emitter refuses: the file is written
    with its content and its own layout, never a traceback."""
    (tmp_path / "Kptfile").write_text(KPTFILE.format(name="tabs"))
    text = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: "v"\t\t# tab\n'
    (tmp_path / "cm.yaml").write_text(text)
    done = run(["krmfn", "render", "--in-place", str(tmp_path)], tmp_path)
    assert done.stderr == ""
    assert (tmp_path / "cm.yaml").read_text() == text


def test_render_to_stdout_gives_the_job_the_in_place_hash(tmp_path: Path) -> None:
    directory = package(tmp_path, "pkg", 1)
    streamed = run(["krmfn", "render", str(directory)], tmp_path).stdout
    run(["krmfn", "render", "--in-place", str(directory)], tmp_path)
    hashed = next(
        line for line in (directory / "job.yaml").read_text().splitlines() if "name: migrate-" in line
    )
    assert hashed.strip() in streamed
    assert "kustomization" not in streamed.lower() and "namePrefix" not in streamed


def test_kustomization_documents_pass_through_a_function_untouched() -> None:
    """kpt hands functions kustomization files, also the short form: they pass through as they are."""
    short = {
        "resources": ["job.yaml"],
        "namePrefix": "prod-",
        "metadata": {"annotations": {"config.kubernetes.io/path": "kustomization.yaml"}},
    }
    full = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": ["a.yaml"]}
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "migrate"},
        "spec": {
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "m", "image": "x"}]}}
        },
    }
    text = dump_fast(
        {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [short, full, job]}
    )
    for mode in ("fast", "fidelity"):
        out, code = HASH_JOB_NAMES.process(text, mode)
        assert code == 0, out
        assert dump_fast(short) in out.replace("\n  ", "\n") or "namePrefix: prod-" in out
        assert "name: migrate-" in out


def test_the_corpus_holds_what_it_claims(tmp_path: Path) -> None:
    """Guards against a silently easier corpus: the quick profile has every awkward part."""
    text = ""
    for variant in VARIANTS:
        directory = package(tmp_path, f"pkg{variant}", variant)
        text += "".join(
            f"{p.relative_to(directory)}\n{p.read_text()}"
            for p in sorted(directory.rglob("*"))
            if p.is_file()
        )
    for part in (
        "[{containerPort: 80}]",
        "defaultMode: 0755",
        "2024-01-01",
        "bare: n",
        "    - name: web",  # a wide sequence
        "sub/Kptfile",
        "overlay/kustomization.yaml\napiVersion: kustomize",
        "kustomization.yaml\nresources:",
        "name: migrate-1234abcd",  # hashed before
        "name: migrate\n",
    ):
        assert part in text, part
