"""Helm charts through krmfn, with Helm itself (built from the Go module proxy into the cache by
tests/cluster/build-helm.sh; a missing Helm fails the test). The chart is tests/testdata/helm/shop,
written for these tests: a hook ServiceAccount and ConfigMap (weight -5), a pre-install/pre-upgrade
migration Job (weight 0), the release (ConfigMap, Deployment, Service, a plain Job), a post-install
warm-up Job (weight 5) and a test Pod.

- ``helm template | krmfn-render`` with set-steps' ``orderFrom: helm`` gives Helm's order as steps;
  without it, validate-jobs warns that the hook Jobs share the Deployment's step (issue 35).
- As a post-renderer, the functions change only what their jobs change, byte for byte: Helm 3 through
  ``--post-renderer krmfn-render`` (its hooks never reach a post-renderer: action.renderResources
  post-renders the release's manifests only), Helm 4 through the plugin in helm-plugin/krmfn/ (whose default
  post-render strategy sends the hooks too).
"""

from __future__ import annotations

import difflib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from e2e import ROOT, tool

from krmfn.yaml.io import load_all_fast

CHART = ROOT / "tests" / "testdata" / "helm" / "shop"
PLUGIN = ROOT / "helm-plugin" / "krmfn"
HELM_VERSIONS = {"helm3": "v3.21.4", "helm4": "v4.3.1"}
ORDERED = """\
apiVersion: fn.krmfn.dev/v1alpha1
kind: Render
metadata: {name: shop}
setConfigChecksum: {}
hashJobNames: {}
setSteps:
  orderFrom: helm
  defaultStep: deploy
  steps: [{name: deploy, timeout: 10m}]
validateJobs: {}
"""
POST_RENDER = """\
apiVersion: fn.krmfn.dev/v1alpha1
kind: Render
metadata: {name: shop}
setConfigChecksum: {}
hashJobNames: {}
validateJobs: {}
"""
BIN = Path(sys.executable).parent  # krmfn's console scripts, which Helm runs as post-renderers too
HASHED = re.compile(r"-[0-9a-f]{8}$")

pytestmark = pytest.mark.e2e


def helm(name: str) -> str:
    """The cached Helm, checked to be the version build-helm.sh pins."""
    path = tool(name)
    version = run([path, "version", "--template", "{{.Version}}"]).stdout
    assert version == HELM_VERSIONS[name], f"{path} is Helm {version}, not {HELM_VERSIONS[name]}"
    return path


def run(
    args: list[str], stdin: str | None = None, env: dict[str, str] | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        args, input=stdin, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", **(env or {})},
    )  # fmt: skip
    if check:
        assert proc.returncode == 0, f"{args} exited {proc.returncode}:\n{proc.stderr}"
    return proc


def steps_of(text: str) -> list[list[str]]:
    """Object names grouped by krmfn.dev/step-index, in step order."""
    groups: dict[int, list[str]] = {}
    for doc in load_all_fast(text):
        if doc:
            notes = doc["metadata"]["annotations"]
            groups.setdefault(int(notes["krmfn.dev/step-index"]), []).append(doc["metadata"]["name"])
    return [sorted(HASHED.sub("-<hash>", n) for n in groups[i]) for i in sorted(groups)]


def test_helm_template_through_order_from_helm_runs_the_hooks_in_helms_order(tmp_path: Path) -> None:
    config = tmp_path / "render.yaml"
    config.write_text(ORDERED)
    chart = run([helm("helm3"), "template", "shop", str(CHART)]).stdout
    out = run(["krmfn-render", "--fn-config", str(config)], stdin=chart)
    assert steps_of(out.stdout) == [
        ["shop-migrate", "shop-migration-config"],  # weight -5
        ["shop-db-migration-<hash>"],  # weight 0
        ["shop", "shop", "shop-config", "shop-reindex-<hash>"],  # the release
        ["shop-cache-warmup-<hash>"],  # post-install, weight 5
    ]
    assert "shop-test" not in out.stdout  # the test hook is left out
    assert "helm-hook-same-step" not in out.stderr
    plan = run(["krmfn", "plan", "-f", "-", "-n", "apps", "--applyset", "shop"], stdin=out.stdout).stdout
    headers = re.findall(r"^step \d+ (\S+) ", plan, re.MULTILINE)
    assert headers == ["helm-pre-minus5", "helm-pre-0", "deploy", "helm-post-5"], plan


def test_without_order_from_validate_jobs_warns_about_each_hook_job() -> None:
    chart = run([helm("helm3"), "template", "shop", str(CHART)]).stdout
    out = run(["krmfn-validate-jobs"], stdin=chart)
    warned = re.findall(r"warning: Job (\S+): metadata\.annotations\.helm\.sh/hook: a Helm hook", out.stderr)
    assert warned == ["shop-db-migration", "shop-cache-warmup"]
    assert "with Deployment shop" in out.stderr and "orderFrom: helm" in out.stderr


def function_changes_only(before: str, after: str) -> set[str]:
    """Assert that ``after`` is ``before`` with only lines the functions write: krmfn.dev/ annotations
    (with the ``annotations:`` and a pod template's ``metadata:`` keys that hold them), and a Job's
    ``name:`` with hash-job-names' hash. The names of the Jobs renamed, returned."""
    old, new = before.splitlines(), after.splitlines()
    renamed: set[str] = set()
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        removed, added = old[i1:i2], new[j1:j2]
        bases = {line.strip().removeprefix("name: ") for line in removed}
        assert all(line.strip().startswith("name: ") for line in removed), (op, removed, added)
        for line in added:
            text = line.strip()
            if text.startswith("name: ") and HASHED.sub("", text.removeprefix("name: ")) in bases:
                renamed.add(HASHED.sub("", text.removeprefix("name: ")))
                continue
            assert text in ("metadata:", "annotations:") or text.startswith("krmfn.dev/"), (
                op,
                removed,
                added,
            )
    return renamed


def test_helm3_post_renderer_changes_only_what_the_functions_change_and_never_sees_hooks(
    tmp_path: Path,
) -> None:
    config = tmp_path / "render.yaml"
    config.write_text(POST_RENDER)
    helm3 = helm("helm3")
    plain = run([helm3, "template", "shop", str(CHART)]).stdout
    post = run([helm3, "template", "shop", str(CHART), "--post-renderer", "krmfn-render",
                "--post-renderer-args", f"--fn-config={config}"]).stdout  # fmt: skip
    assert function_changes_only(plain, post) == {"shop-reindex"}  # the release's Job, not the hooks
    assert "krmfn.dev/config-checksum: sha256:" in post
    hooks = plain[plain.index("# Source: shop/templates/hook-serviceaccount.yaml") :]
    assert post.endswith(hooks), "Helm 3 printed the hooks as the chart rendered them: never post-rendered"


def test_helm4_plugin_post_renders_the_hooks_too(tmp_path: Path) -> None:
    """Helm 4 re-serializes what a post-renderer returns (kyaml, its own list indentation), so the bytes
    are compared with a post-renderer that changes nothing: a plugin running ``cat``."""
    helm4 = helm("helm4")
    env = {f"HELM_{k}_HOME": str(tmp_path / k.lower()) for k in ("CONFIG", "DATA", "CACHE")}
    identity = tmp_path / "identity"
    identity.mkdir()
    (identity / "plugin.yaml").write_text(
        "apiVersion: v1\ntype: postrenderer/v1\nname: identity\nversion: 0.0.1\nruntime: subprocess\n"
        "runtimeConfig:\n  platformCommand:\n    - command: cat\n"
    )
    for plugin in (PLUGIN, identity):
        run([helm4, "plugin", "install", str(plugin)], env=env)
    listed = run([helm4, "plugin", "list"], env=env).stdout
    assert re.search(r"^krmfn\s+0\.1\.0\s+postrenderer/v1", listed, re.MULTILINE), listed
    config = tmp_path / "render.yaml"
    config.write_text(POST_RENDER)
    template = [helm4, "template", "shop", str(CHART), "--post-renderer"]
    same = run([*template, "identity"], env=env).stdout
    post = run([*template, "krmfn", "--post-renderer-args", f"--fn-config={config}"], env=env).stdout
    assert function_changes_only(same, post) == {"shop-reindex", "shop-db-migration", "shop-cache-warmup"}
    assert "postrenderer.helm.sh" not in post  # Helm's bookkeeping annotation: kept by krmfn, removed by Helm


def test_the_plugin_manifest_names_the_package_version() -> None:
    manifest = next(load_all_fast((PLUGIN / "plugin.yaml").read_text()))
    project = (ROOT / "pyproject.toml").read_text()
    assert f'version = "{manifest["version"]}"' in project
    assert manifest["runtimeConfig"]["platformCommand"] == [{"command": "krmfn-render"}]
    assert "krmfn-render" in project  # the console script the plugin runs
