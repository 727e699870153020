"""The README's five-minute guide, followed word for word on the control plane (issue 34).

Every file the guide shows (a line naming it in backquotes, then its YAML block) is written where it
says, and every line of its ``sh`` blocks runs in order, in that directory, with krmfn, kustomize and
kubectl on PATH and the test cluster as the kubeconfig: its exit code is 0 unless a ``# exit N`` comment
says otherwise. What the guide says the output holds is checked against the output. Nothing comes from
anywhere but the README, so the guide cannot drift from what krmfn does.
"""

from __future__ import annotations

import os
import re
import subprocess
import textwrap
from dataclasses import dataclass
from pathlib import Path

from e2e import ROOT, env, tool

from krmfn.cli import USAGE
from krmfn.yaml.io import load_all_fast

SECTION = "## From kustomize to krmfn apply in five minutes"
FILE = re.compile(r"`([\w./-]+)`:\n\n( *)```yaml\n(.*?)\n\2```", re.DOTALL)
SHELL = re.compile(r"^( *)```sh\n(.*?)\n\1```", re.DOTALL | re.MULTILINE)
EXIT = re.compile(r"\s+# exit (\d+)\b.*$")


def guide() -> str:
    text = (ROOT / "README.md").read_text()
    return text.split(SECTION, 1)[1].split("\n## ", 1)[0]


def files(text: str) -> dict[str, str]:
    return {path: textwrap.dedent(body) + "\n" for path, _, body in FILE.findall(text)}


def commands(text: str) -> list[tuple[str, int]]:
    found = []
    for _, block in SHELL.findall(text):
        for line in textwrap.dedent(block).splitlines():
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            code = EXIT.search(line)
            found.append((EXIT.sub("", line), int(code.group(1)) if code else 0))
    return found


@dataclass
class Ran:
    command: str
    code: int
    out: str
    err: str


def follow(workdir: Path, kubeconfig: Path) -> list[Ran]:
    for path, content in files(guide()).items():
        (workdir / path).parent.mkdir(parents=True, exist_ok=True)
        (workdir / path).write_text(content)
    tools = {str(Path(tool(name)).parent) for name in ("kustomize", "kubectl")}
    environment = {**env(), "KUBECONFIG": str(kubeconfig)}
    environment["PATH"] = os.pathsep.join([environment["PATH"], *sorted(tools)])
    ran = []
    for command, expected in commands(guide()):
        done = subprocess.run(["bash", "-c", command], cwd=workdir, env=environment, capture_output=True,
                              text=True, timeout=300, check=False)  # fmt: skip
        ran.append(Ran(command, done.returncode, done.stdout, done.stderr))
        assert done.returncode == expected, f"{command}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return ran


def test_the_guide_names_its_files_and_commands() -> None:
    text = guide()
    assert sorted(files(text)) == [
        "base/app.yaml", "base/kustomization.yaml", "overlays/prod/fn-render.yaml",
        "overlays/prod/kustomization.yaml",
    ]  # fmt: skip
    for content in files(text).values():
        assert list(load_all_fast(content)), content
    used = [command.split()[0:2] for command, _ in commands(text)]
    assert ["krmfn", "diff"] in used and ["krmfn", "status"] in used
    assert "setConfigChecksum" in files(text)["overlays/prod/fn-render.yaml"], "a config change must roll"
    # The place kept for tearing down: once `krmfn delete` exists, the guide must run it.
    assert "<!-- krmfn delete:" in text
    if re.search(r"^\s+delete\s", USAGE, flags=re.MULTILINE):  # the day the command lands
        assert ["krmfn", "delete"] in used, "krmfn delete exists: write the guide's last step"


def test_the_guide_word_for_word(kubeconfig: Path, tmp_path: Path) -> None:
    runs = follow(tmp_path, kubeconfig)
    plan = next(r for r in runs if r.command.startswith("krmfn plan"))
    steps = plan.out.split("step 1 ")
    assert "step 0 pre-deploy" in steps[0] and "ConfigMap prod/prod-app-config-" in steps[0], plan.out
    assert "Job.batch prod/prod-db-migration-" in steps[0], plan.out
    assert "Deployment.apps prod/prod-web" in steps[1], plan.out

    applies = [r for r in runs if r.command.startswith("krmfn apply")]
    assert len(applies) == 2
    quoted = re.search(r"The first line says which inventory the run uses:\s+`([^`]+)`", guide())
    assert quoted, "the guide quotes the first line"
    assert applies[0].out.splitlines()[0] == quoted.group(1).replace("\n   ", " ")

    diff = next(r for r in runs if r.command.startswith("krmfn diff"))
    headers = re.findall(r"^# (\S+ prod/\S+): (\w+)", diff.out, flags=re.MULTILINE)
    kinds = sorted((name.split()[0], action) for name, action in headers)
    assert kinds == [
        ("ConfigMap", "create"), ("ConfigMap", "delete"), ("Deployment.apps", "update"),
        ("Job.batch", "create"), ("Job.batch", "delete"),
    ], diff.out  # fmt: skip
    assert re.search(r"^-\s+krmfn.dev/config-checksum: ", diff.out, flags=re.MULTILINE), diff.out
    assert re.search(r"^\+\s+krmfn.dev/config-checksum: ", diff.out, flags=re.MULTILINE), diff.out

    second = applies[1].out.splitlines()
    new_job = next(name for name, action in headers if name.startswith("Job.batch") and action == "create")
    done = next(i for i, line in enumerate(second) if f"{new_job}: current: " in line)
    rollout = next(i for i, line in enumerate(second) if line.startswith("step 1 deploy"))
    assert done < rollout, "\n".join(second)
    status = next(r for r in runs if r.command.startswith("krmfn status"))
    assert "succeeded" in status.out, status.out

    # The teardown: the dry run lists the deploy step before pre-deploy, the delete follows it, status
    # then finds no inventory and a second delete nothing to delete.
    dry, real, again = [r for r in runs if r.command.startswith("krmfn delete")]
    listed = [line for line in dry.out.splitlines() if line.startswith("step ")]
    assert listed[0].startswith("step 0 deploy: Deployment.apps prod/prod-web: would delete"), dry.out
    assert [line.split(":")[0] for line in listed[1:]] == ["step 1 pre-deploy"] * 2, dry.out
    assert real.out.splitlines()[-1].startswith(
        "deleted 3 object(s) in 2 step(s), then the inventory prod/shop"
    )
    assert real.out.index("Deployment.apps prod/prod-web: deleted") < real.out.index("step 1 pre-deploy")
    gone = [r for r in runs if r.command.startswith("krmfn status")][-1]
    assert "no inventory" in gone.err, gone.err
    assert again.out.startswith("nothing to delete: namespace prod has no inventory Secret shop"), again.out
