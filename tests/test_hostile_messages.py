"""A hostile name through every message of every command: the bytes on stderr (and text stdout) are inert.

The name holds what a terminal or a CI runner acts on: an OSC title change and a screen clear (ESC),
BEL, a C1 CSI, a carriage return and newlines that would forge a line of krmfn's own, ``::add-mask::``
and ``::stop-commands::`` (GitHub Actions), ``##vso[...]`` (Azure Pipelines), bidi overrides and
isolates, a zero-width space, NEL and a line separator. Each scenario puts it where one message of a
command quotes input (a resource's name, a config field, a path, a flag, a step annotation, a pipeline
entry), runs the command, and checks every line written for a person: no control, format or separator
character, no ``::`` or ``##``, the expected number of lines (no line was forged), and the name's
marker is there (the message did quote it, escaped). ``krmfn export``'s TTL warning and the functions'
results once wrote it raw (docs/security.md R5).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cli_run import krmfn_cli
from robustness.harness import inert

from krmfn.registry import CANONICAL_ORDER, load
from krmfn.yaml.io import dump_fast

NAME = (
    "j\x1b]0;PWNED\x07\x1b[2J\r\nstep 1 deploy: ok\n::add-mask::PWNED\n::stop-commands::t0k\n"
    "##vso[task.setvariable variable=a]b\u202eevil\u2066x\u200b\x9b31m\x85\u2028PWNED"
)
MARKER = "PWNED"
API = "fn.krmfn.dev/v1alpha1"


def fn_config(kind: str, **body: Any) -> dict[str, Any]:
    return {"apiVersion": API, "kind": kind, "metadata": {"name": "f"}, **body}


def resource_list(items: list[Any], config: Any) -> str:
    rl = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": items}
    return dump_fast({**rl, "functionConfig": config} if config is not None else rl)


def job(name: str = NAME, **spec: Any) -> dict[str, Any]:
    pod = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"template": {"spec": pod}, **spec}}  # fmt: skip


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str


def function(name: str, text: str, *args: str) -> Callable[[Path], Ran]:
    def run(tmp: Path) -> Ran:
        out, err = io.StringIO(), io.StringIO()
        code = load(name).main(list(args), io.StringIO(text), out, err)
        return Ran(code, out.getvalue(), err.getvalue())

    return run


def command(argv: list[str]) -> Callable[[Path], Ran]:
    """``krmfn ARGV`` in-process, through the top-level CLI, its sys streams captured."""

    def run(tmp: Path) -> Ran:
        return Ran(*krmfn_cli([a.replace("{TMP}", str(tmp)) for a in argv]))

    return run


def in_file(name: str, text: str, run: Callable[[Path], Ran]) -> Callable[[Path], Ran]:
    def with_file(tmp: Path) -> Ran:
        path = tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return run(tmp)

    return with_file


def with_input(name: str, text: str, argv: list[str]) -> Callable[[Path], Ran]:
    return in_file(name, text, command(argv))


def package(files: dict[str, str], argv: list[str]) -> Callable[[Path], Ran]:
    def run(tmp: Path) -> Ran:
        for name, text in files.items():
            (tmp / "pkg" / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp / "pkg" / name).write_text(text)
        return command(["render", "{TMP}/pkg", *argv])(tmp)

    return run


KPTFILE = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\npipeline:\n  validators:\n{entries}"
VALIDATE = "  - exec: krmfn-validate-jobs\n"
CONFIG_KINDS = {name: "".join(p.capitalize() for p in name.split("-")) for name in CANONICAL_ORDER}


@dataclass(frozen=True)
class Scenario:
    id: str
    run: Callable[[Path], Ran]
    prefix: str
    """How each line of the command's messages starts: a line holding the name's marker must."""
    quotes: bool = True
    """Whether a message quotes the name (the marker must be there, escaped)."""
    text_stdout: bool = False
    """Whether stdout is text for a person too (a plan, the version), not YAML or JSON."""


def configmap(name: str = "c", **notes: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "n"}
    if notes:
        meta["annotations"] = notes
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


def restart_always() -> dict[str, Any]:
    found = job()
    found["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    return found


def deployment() -> dict[str, Any]:
    container = {"name": "c", "image": "i", "envFrom": [{"configMapRef": {"name": NAME}}]}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": NAME},
            "spec": {"template": {"spec": {"containers": [container]}}}}  # fmt: skip


def scenarios() -> list[Scenario]:
    found: list[Scenario] = []
    missing = f"/nonexistent/{NAME}"
    duplicate = f"kind: ConfigMap\nmetadata: {{name: a}}\n{json.dumps(NAME)}: 1\n{json.dumps(NAME)}: 2\n"
    for fn in CANONICAL_ORDER:
        prefix = f"krmfn-{fn}: "
        unknown_field = resource_list([], fn_config(CONFIG_KINDS[fn], **{NAME: 1}))
        found += [
            Scenario(f"{fn}: an unknown config field", function(fn, unknown_field), prefix),
            Scenario(f"{fn}: a usage error", function(fn, "", f"--{NAME}"), prefix),
            Scenario(f"{fn}: --fn-config", function(fn, "", "--fn-config", missing), prefix),
            Scenario(f"{fn}: FILE", function(fn, "", missing), prefix),
            Scenario(f"{fn}: a duplicate key", function(fn, duplicate), prefix),
            Scenario(f"krmfn fn {fn}: a usage error", command(["fn", fn, f"--{NAME}"]), prefix),
        ]
    steps = fn_config("SetSteps", steps=[{"name": "a", "selectors": [{"kind": "Pod"}]}])
    undefined = {**configmap(NAME), "data": {"a": "<< inputs.no >>"}}
    pipeline = {"Kptfile": KPTFILE.format(entries=f"  - exec: {json.dumps(NAME)}\n")}
    validated = {"Kptfile": KPTFILE.format(entries=VALIDATE), "job.yaml": dump_fast(restart_always())}
    unreadable = {"Kptfile": KPTFILE.format(entries=VALIDATE), f"{NAME}.yaml": "a: [\n"}
    ttl = dump_fast(job(ttlSecondsAfterFinished=60))
    export = ["export", "argocd", "-f"]
    step_index = dump_fast(configmap(**{"krmfn.dev/step-index": NAME}))
    step = dump_fast(configmap(**{"krmfn.dev/step": NAME, "krmfn.dev/step-index": "0"}))
    plain = dump_fast(configmap())
    kube = ["-n", "n", "--applyset", "a", "--kubeconfig", missing]
    found += [
        Scenario("validate-jobs: the Job in a result (finding 13)",
                 function("validate-jobs", resource_list([restart_always()], None)), "krmfn-validate-jobs: "),
        Scenario("validate-jobs: a plain stream", function("validate-jobs", dump_fast(restart_always())),
                 "krmfn-validate-jobs: "),
        Scenario("hash-job-names: a Job name", function("hash-job-names", resource_list([job()], None)),
                 "krmfn-hash-job-names: "),
        Scenario("set-steps: a resource in no step", function("set-steps", resource_list([job()], steps)),
                 "krmfn-set-steps: "),
        Scenario("set-config-checksum: a missing ConfigMap", function("set-config-checksum", resource_list(
            [deployment()], fn_config("SetConfigChecksum", strict=True))), "krmfn-set-config-checksum: "),
        Scenario("render-inputs: an undefined input", function("render-inputs", resource_list(
            [undefined], fn_config("RenderInputs", inputs={}))), "krmfn-render-inputs: "),
        Scenario("krmfn: an unknown command", command([NAME]), "krmfn: "),
        Scenario("krmfn: an unknown function", command(["fn", NAME]), "krmfn: "),
        Scenario("krmfn version", command(["version"]), "krmfn ", quotes=False, text_stdout=True),
        Scenario("render: no package", command(["render", missing]), "krmfn render: "),
        Scenario("render: a usage error", command(["render", f"--{NAME}"]), "krmfn render: "),
        Scenario("render: a pipeline entry", package(pipeline, []), "krmfn render: "),
        Scenario("render: a validator's results", package(validated, []), "krmfn render: "),
        Scenario("render: a file name", package(unreadable, []), "krmfn render: "),
        Scenario("export: the TTL warning (finding 5)",
                 with_input("job.yaml", ttl, [*export, "{TMP}/job.yaml"]), "krmfn export argocd: "),
        Scenario("export: a step index", with_input("cm.yaml", step_index, [*export, "{TMP}/cm.yaml"]),
                 "krmfn export argocd: "),
        Scenario("export: an unknown engine", command(["export", NAME]), "krmfn export: "),
        Scenario("export: a missing file", command([*export, missing]), "krmfn export argocd: "),
        Scenario("export: an unwritable output",
                 with_input("cm.yaml", plain, [*export, "{TMP}/cm.yaml", "-o", missing]),
                 "krmfn export argocd: "),
        Scenario("plan: the plan's lines", with_input("s.yaml", step, ["plan", "-f", "{TMP}/s.yaml"]),
                 "step 0 ", text_stdout=True),
        Scenario("plan: an invalid name", with_input("s.yaml", dump_fast(configmap(NAME)),
                                                     ["plan", "-f", "{TMP}/s.yaml"]), "krmfn plan: "),
        Scenario("plan: a usage error", command(["plan", "-f", "-", f"--{NAME}"]), "krmfn plan: "),
        Scenario("apply: a kubeconfig path",
                 with_input("s.yaml", plain, ["apply", "-f", "{TMP}/s.yaml", *kube]), "krmfn apply: "),
        Scenario("diff: a kubeconfig path",
                 with_input("s.yaml", plain, ["diff", "-f", "{TMP}/s.yaml", *kube]), "krmfn diff: "),
        Scenario("status: an ApplySet name", command(["status", "-n", "n", "--applyset", NAME]),
                 "krmfn status: "),
        Scenario("status: a kubeconfig path", command(["status", *kube]), "krmfn status: "),
    ]  # fmt: skip
    return found


SCENARIOS = scenarios()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_a_hostile_name_reaches_no_terminal_raw(scenario: Scenario, tmp_path: Path) -> None:
    ran = scenario.run(tmp_path)
    inert(ran.err, "stderr")
    text = ran.err + (ran.out if scenario.text_stdout else "")
    if scenario.text_stdout:
        inert(ran.out, "stdout")
    assert "Traceback" not in ran.err and "internal error" not in ran.err, ran.err
    quoting = [line for line in text.split("\n") if MARKER in line]
    if scenario.quotes:
        assert quoting, f"no message quoted the name (escaped): {ran.err}"
    for line in quoting:  # a line the name forged would start with the name's own text
        assert line.startswith(scenario.prefix), line
