"""The function images, built (scripts/build-image.sh) and run under podman by kpt and kustomize.

Each test runs the same input through the exec functions (the console scripts of this checkout) and
through the images built from it, and the outputs must be the same bytes: the image is the function,
not a second implementation. kpt runs images with ``KPT_FN_RUNTIME=podman`` (``--network none --user
nobody``, its defaults); kustomize runs them with ``docker``, here Debian's podman-docker.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from container_support import configs_to_containers, engine_env, images, kptfile_to_images, run
from e2e import ROOT, derive_source, package_files, tool
from fixture_harness import Case, discover, load_function, resource_list_text

from krmfn.yaml.io import dump_fast, load_all_fast

# The first test builds the images when scripts/test.sh has not (a fresh base takes minutes on 2 cores).
pytestmark = [pytest.mark.e2e, pytest.mark.container, pytest.mark.timeout(1800)]

EXAMPLE = ROOT / "examples" / "staged-deploy"
RESULT_KEYS = ("message", "severity", "resourceRef", "field", "file", "tags")


def _source_pair(tmp_path: Path, engine: str) -> tuple[Path, Path]:
    """The staged-deploy source twice: as committed (exec functions), and rewritten to run the images:
    its Kptfile for ``kpt``, its function configs (their annotations) for ``kustomize``."""
    exec_pkg = derive_source(EXAMPLE, tmp_path / "exec")
    image_pkg = tmp_path / "image" / EXAMPLE.name
    shutil.copytree(exec_pkg, image_pkg)
    if engine == "kpt":
        kptfile_to_images(image_pkg, images())
        text = (image_pkg / "Kptfile").read_text()
        assert "image: localhost/" in text and "exec:" not in text
    else:
        kustomization = next(load_all_fast((image_pkg / "kustomization.yaml").read_text()))
        configs = [*kustomization["transformers"], *kustomization["validators"]]
        assert sorted(configs_to_containers(image_pkg, images())) == sorted(configs)
    return exec_pkg, image_pkg


def _without_kptfile(package: Path) -> dict[str, bytes]:
    return {name: data for name, data in package_files(package).items() if name != "Kptfile"}


def _results(results_dir: Path) -> list[dict[str, Any]]:
    doc = next(load_all_fast((results_dir / "results.yaml").read_text()))
    return [
        {k: r[k] for k in RESULT_KEYS if k in r}
        for item in doc.get("items") or []
        for r in item.get("results") or []
    ]


def test_kpt_fn_render_with_images_writes_the_bytes_exec_writes(tmp_path: Path) -> None:
    kpt = tool("kpt")
    exec_pkg, image_pkg = _source_pair(tmp_path, "kpt")

    run([kpt, "fn", "render", "--allow-exec", "--results-dir", str(tmp_path / "r-exec"), "."], exec_pkg)
    run([kpt, "fn", "render", "--results-dir", str(tmp_path / "r-image"), "."], image_pkg)

    assert _without_kptfile(image_pkg) == _without_kptfile(exec_pkg)
    assert _without_kptfile(exec_pkg) == _without_kptfile(EXAMPLE), "the exec render is the committed one"
    assert _results(tmp_path / "r-image") == _results(tmp_path / "r-exec")


def test_kpt_fn_eval_image_takes_key_value_config(tmp_path: Path) -> None:
    kpt = tool("kpt")
    refs = images()
    by_exec, by_image = tmp_path / "exec", tmp_path / "image"
    for target in (by_exec, by_image):
        shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns(".expected"))
    config = ["--", "name=curlimages/curl", "newTag=8.12.0"]
    run([kpt, "fn", "eval", ".", "--exec", "krmfn-set-image", *config], by_exec)
    proc = run([kpt, "fn", "eval", ".", "--image", refs["set-image"], *config], by_image)

    assert "updated 1 image(s) in 1 resource(s)" in proc.stderr + proc.stdout
    assert "image: curlimages/curl:8.12.0" in (by_image / "cache-warmup.yaml").read_text()
    assert package_files(by_image) == package_files(by_exec)


def test_kustomize_runs_container_transformers_and_validator(tmp_path: Path) -> None:
    kustomize = tool("kustomize")
    exec_pkg, image_pkg = _source_pair(tmp_path, "kustomize")
    by_exec = run([kustomize, "build", "--enable-alpha-plugins", "--enable-exec", "."], exec_pkg)
    # No --enable-exec: every function of this build runs in a container.
    by_image = run([kustomize, "build", "--enable-alpha-plugins", "."], image_pkg)
    assert by_image.stdout == by_exec.stdout
    assert "name: db-migration-" in by_image.stdout and "krmfn.dev/step-index" in by_image.stdout


def _break_the_migration_job(package: Path) -> None:
    """restartPolicy Always on a Job: validate-jobs reports it as an error naming the resource and field."""
    path = package / "db-migration.yaml"
    text = path.read_text()
    assert "restartPolicy: Never" in text
    path.write_text(text.replace("restartPolicy: Never", "restartPolicy: Always"))


def test_an_error_result_in_the_container_fails_kpt_and_kustomize_with_its_message(tmp_path: Path) -> None:
    kpt, kustomize = tool("kpt"), tool("kustomize")
    exec_pkg, image_pkg = _source_pair(tmp_path / "kpt", "kpt")
    for package in (exec_pkg, image_pkg):
        _break_the_migration_job(package)
    before = package_files(image_pkg)

    by_exec = run([kpt, "fn", "render", "--allow-exec", "."], exec_pkg, check=False)
    by_image = run([kpt, "fn", "render", "."], image_pkg, check=False)
    assert by_exec.returncode != 0 and by_image.returncode == by_exec.returncode
    message = re.search(r"\[error\] (.*restartPolicy.*)", by_exec.stderr + by_exec.stdout)
    assert message, by_exec.stderr
    assert message.group(1) in by_image.stderr + by_image.stdout
    assert package_files(image_pkg) == before, "a failed render must leave the package as it was"

    exec_pkg, container_pkg = _source_pair(tmp_path / "kustomize", "kustomize")
    for package in (exec_pkg, container_pkg):
        _break_the_migration_job(package)
    by_exec = run([kustomize, "build", "--enable-alpha-plugins", "--enable-exec", "."], exec_pkg, check=False)
    by_image = run([kustomize, "build", "--enable-alpha-plugins", "."], container_pkg, check=False)
    assert by_image.returncode != 0 and by_image.stdout == ""
    assert (by_image.returncode, by_image.stderr) == (by_exec.returncode, by_exec.stderr)
    assert "krmfn-validate-jobs: error: Job apps/db-migration-" in by_image.stderr
    assert "spec.template.spec.restartPolicy" in by_image.stderr


def test_the_image_runs_as_nobody_without_network_as_kpt_starts_it(tmp_path: Path) -> None:
    kpt = tool("kpt")
    ref = images()["set-image"]
    inspected = json.loads(run(["podman", "image", "inspect", ref], tmp_path).stdout)[0]
    assert inspected["Config"]["User"] == "65534:65534"
    assert inspected["Config"]["Entrypoint"] == ["/usr/local/bin/krmfn-function"]

    # What kpt passes to podman, recorded by a wrapper first on PATH.
    shim = tmp_path / "bin"
    shim.mkdir()
    log = tmp_path / "podman-args"
    podman = shutil.which("podman")
    (shim / "podman").write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {log}\nexec {podman} "$@"\n')
    (shim / "podman").chmod(0o755)
    package = tmp_path / "pkg"
    shutil.copytree(EXAMPLE, package, ignore=shutil.ignore_patterns(".expected"))
    config = ["--", "name=ghcr.io/stefanprodan/podinfo", "newTag=6.8.0"]
    run([kpt, "fn", "eval", ".", "--image", ref, *config], package, PATH=f"{shim}:{engine_env()['PATH']}")
    assert "podinfo:6.8.0" in (package / "deployment.yaml").read_text()
    started = [line for line in log.read_text().splitlines() if line.startswith("run ")]
    assert started and all("--network none" in line and "--user nobody" in line for line in started)

    # Stricter still than kpt: read-only root, no capabilities; the function works and sees only lo.
    strict = ["--network", "none", "--user", "nobody", "--read-only", "--cap-drop", "ALL"]
    probe = "import os, socket; print(os.getuid(), [n for _, n in socket.if_nameindex()])"
    seen = run(["podman", "run", "--rm", *strict, "--entrypoint", "python3", ref, "-c", probe], tmp_path)
    assert seen.stdout.split(None, 1) == ["65534", "['lo']\n"]
    resource_list = dump_fast(
        {
            "apiVersion": "config.kubernetes.io/v1",
            "kind": "ResourceList",
            "items": [d for d in load_all_fast((EXAMPLE / "deployment.yaml").read_text()) if d],
            "functionConfig": {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "c"},
                "data": {"name": "ghcr.io/stefanprodan/podinfo", "newTag": "6.8.0"},
            },
        }
    )
    as_image = run(["podman", "run", "--rm", "-i", *strict, ref], tmp_path, stdin=resource_list)
    as_exec = run(["krmfn-set-image"], tmp_path, stdin=resource_list)
    assert as_image.stdout == as_exec.stdout and "podinfo:6.8.0" in as_image.stdout


# example-annotate is the SDK's test function: it has no console script and no image.
IMAGED = {c.function for c in discover()} - {"example-annotate"}
ERROR_CASES = [c for c in discover() if c.function in IMAGED and (c.path / "errors.txt").exists()]

# One container per function runs the image's entrypoint once per case, as a separate process with the
# case on stdin: the same program kpt starts, without paying podman's start-up per case.
DRIVER = """
import json, pathlib, subprocess
found = {}
for case in sorted(pathlib.Path("/cases").glob("*.yaml")):
    with case.open("rb") as stdin:
        proc = subprocess.run(["/usr/local/bin/krmfn-function"], stdin=stdin, capture_output=True)
    found[case.stem] = [proc.returncode, proc.stdout.decode(), proc.stderr.decode()]
print(json.dumps(found))
"""


def _as_exec(function: str, text: str) -> tuple[int, str, str]:
    """What ``krmfn-<function>`` does with ``text`` on stdin, without an interpreter start per case: its
    console script is ``FUNCTION.main()`` (tests/test_dockerfile.py checks each one)."""
    out, err = io.StringIO(), io.StringIO()
    code = load_function(function).main([], io.StringIO(text), out, err)
    return code, out.getvalue(), err.getvalue()


def test_fixture_error_cases_are_refused_alike_by_the_image(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert len(ERROR_CASES) > 40 and len({c.function for c in ERROR_CASES}) == 7, [c.id for c in ERROR_CASES]
    for name in [k for k in os.environ if k.startswith("KRMFN_")]:
        monkeypatch.delenv(name)  # the container sees none of them either
    refs = images()
    mismatches: list[str] = []
    for function in sorted({c.function for c in ERROR_CASES}):
        cases: dict[str, Case] = {c.name: c for c in ERROR_CASES if c.function == function}
        folder = tmp_path / function
        folder.mkdir()
        for name, case in cases.items():
            (folder / f"{name}.yaml").write_text(resource_list_text(case))
        mount = ["-v", f"{folder}:/cases:ro", "--entrypoint", "python3"]
        driver = ["podman", "run", "--rm", "--network", "none", "--user", "nobody", *mount]
        in_image = json.loads(run([*driver, refs[function], "-c", DRIVER], tmp_path).stdout)
        assert in_image.keys() == cases.keys()
        for name in cases:
            host = _as_exec(function, (folder / f"{name}.yaml").read_text())
            if host[0] != 1:
                mismatches.append(f"{function}/{name}: the exec function exited {host[0]}, not 1")
            if tuple(in_image[name]) != host:
                code, stdout, stderr = in_image[name]
                mismatches.append(
                    f"{function}/{name}: image exited {code} (exec {host[0]})\n"
                    f"image stdout/stderr:\n{stdout}{stderr}\nexec stdout/stderr:\n{host[1]}{host[2]}"
                )
    assert not mismatches, "\n".join(mismatches)


def test_the_images_the_function_metadata_promises_are_this_build(tmp_path: Path) -> None:
    refs = images()
    promised = [
        next(load_all_fast(p.read_text()))["image"] for p in ROOT.glob("krmfn/functions/*/metadata.yaml")
    ]
    assert len(promised) == 7 and {p.split(":")[0].removeprefix("krmfn-") for p in promised} == refs.keys()
    for image in promised:
        name = image.split(":")[0].removeprefix("krmfn-")
        ids = run(
            ["podman", "image", "inspect", "--format", "{{.Id}}", f"localhost/{image}", refs[name]], tmp_path
        )
        first, second = ids.stdout.split()
        assert first == second, f"localhost/{image} is not {refs[name]}"


HASH_SOURCES = """
import hashlib, json, pathlib, krmfn
root = pathlib.Path(krmfn.__file__).parent
print(json.dumps({str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
                  for p in sorted(root.rglob("*.py"))}))
"""


def test_every_image_holds_this_checkouts_sources(tmp_path: Path) -> None:
    """The build cache must follow the sources: a layer reused after a change would run old code."""
    local = {
        str(p.relative_to(ROOT / "krmfn")): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((ROOT / "krmfn").rglob("*.py"))
        if "examples" not in p.relative_to(ROOT / "krmfn").parts
    }
    for name, ref in images().items():
        python = ["podman", "run", "--rm", "--network", "none", "--entrypoint", "/opt/krmfn/bin/python"]
        in_image = json.loads(run([*python, ref, "-c", HASH_SOURCES], tmp_path).stdout)
        assert in_image == local, f"{ref} was built from other sources than this checkout ({name})"
