"""The test chart tests/testdata/helm/shop, two ways onto the test control plane: through krmfn
(``helm template`` into ``krmfn-render`` with set-steps' ``orderFrom: helm``, then ``krmfn apply``) and
through Helm itself (``helm upgrade --install --wait``), so the tests can set one beside the other."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from e2e import ROOT, tool

from krmfn.yaml.io import load_all_fast

CHART = ROOT / "tests" / "testdata" / "helm" / "shop"
HOOK_JOBS = ("db-migration", "cache-warmup")
"""The chart's hook Jobs, by the name after the release's ``<release>-``."""
FAIL_MIGRATION = ("--set-string", r"migrationPodLabels.test\.krmfn\.dev/fail=3")
"""Values that make the migration's pod exit 3 on kwok (tests/cluster/stages.yaml, ``pod-fail``)."""
RENDER = """\
apiVersion: fn.krmfn.dev/v1alpha1
kind: Render
metadata: {name: shop}
setConfigChecksum: {}
hashJobNames: {}
setSteps:
  orderFrom: helm
  defaultStep: deploy
  steps: [{name: deploy, timeout: 60s}]
"""


def rendered(tmp_path: Path, image: str, *values: str, release: str = "shop") -> list[dict[str, Any]]:
    """The chart as ``krmfn apply`` takes it: ``helm template`` through ``krmfn-render``."""
    chart = subprocess.run(
        [tool("helm3"), "template", release, str(CHART), "--set", f"image={image}", *values],
        capture_output=True, text=True, check=True, timeout=120,
    ).stdout  # fmt: skip
    config = tmp_path / "render.yaml"
    config.write_text(RENDER)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    out = subprocess.run(
        ["krmfn-render", "--fn-config", str(config)], input=chart, capture_output=True, text=True,
        check=True, timeout=120, env=env,
    ).stdout  # fmt: skip
    return [doc for doc in load_all_fast(out) if doc]


def helm_upgrade_args(
    kubeconfig: Path, namespace: str, image: str, *values: str, release: str = "shop"
) -> list[str]:
    """The command line of ``helm upgrade --install --wait`` of the chart (hooks run by Helm)."""
    return [tool("helm3"), "upgrade", "--install", release, str(CHART), "--namespace", namespace,
            "--kubeconfig", str(kubeconfig), "--wait", "--timeout", "120s", "--set", f"image={image}",
            *values]  # fmt: skip


def helm_upgrade(
    kubeconfig: Path, namespace: str, image: str, *values: str, release: str = "shop"
) -> subprocess.CompletedProcess[str]:
    """``helm upgrade --install --wait`` of the chart, as a Helm user deploys it (hooks run by Helm)."""
    return subprocess.run(
        helm_upgrade_args(kubeconfig, namespace, image, *values, release=release),
        check=False, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def helm_status(kubeconfig: Path, namespace: str, release: str = "shop") -> str:
    """The release's status as ``helm status`` reports it (``deployed``, ``failed``, ``pending-upgrade``)."""
    done = subprocess.run(
        [tool("helm3"), "status", release, "--namespace", namespace, "--kubeconfig", str(kubeconfig),
         "-o", "json"], check=True, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    status: str = json.loads(done.stdout)["info"]["status"]
    return status
