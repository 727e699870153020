"""``krmfn render`` against ``kpt fn render``: same files byte for byte, same objects, same exit code.

The example packages are committed rendered, so both render the source derived from each package's
``.expected/diff.patch`` (see test_examples.py); a failing pipeline and kpt's refusal of a scalar
rendered into a mapping are small packages built here, since neither can be an example under the root.
"""

from __future__ import annotations

import io
import textwrap
from pathlib import Path

import pytest
from e2e import ROOT, by_identity, derive_source, package_files, run, tool
from test_examples_rendered import objects, package_objects

from krmfn.render import main as render_main
from krmfn.yaml.io import load_all_fast

PATTERNS = ("examples/*/Kptfile", "krmfn/functions/*/examples/*/Kptfile")
PACKAGES = sorted(p.parent for pattern in PATTERNS for p in ROOT.glob(pattern))
IDS = [str(p.relative_to(ROOT)) for p in PACKAGES]


def render(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = render_main(["render", *args], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def files(directory: Path) -> dict[str, bytes]:
    found = sorted(p for p in directory.rglob("*") if p.is_file())
    return {str(p.relative_to(directory)): p.read_bytes() for p in found}


def two_sources(package: Path, tmp_path: Path) -> tuple[Path, Path]:
    """Two copies of the package's source, derived from the committed rendered package."""
    by_kpt = derive_source(package, tmp_path / "kpt")
    by_krmfn = derive_source(package, tmp_path / "krmfn")
    return by_kpt, by_krmfn


@pytest.mark.e2e
@pytest.mark.parametrize("package", PACKAGES, ids=IDS)
def test_in_place_writes_the_same_bytes_as_kpt(package: Path, tmp_path: Path) -> None:
    by_kpt, by_krmfn = two_sources(package, tmp_path)
    run([tool("kpt"), "fn", "render", "--allow-exec", str(by_kpt)], tmp_path)
    code, _, err = render(str(by_krmfn), "--in-place")
    assert code == 0, err
    assert files(by_krmfn) == files(by_kpt)
    assert package_files(by_krmfn) == package_files(package), "the committed package is not this render"


@pytest.mark.e2e
@pytest.mark.parametrize("package", PACKAGES, ids=IDS)
def test_stdout_has_the_objects_kpt_writes(package: Path, tmp_path: Path) -> None:
    by_kpt, source = two_sources(package, tmp_path)
    run([tool("kpt"), "fn", "render", "--allow-exec", str(by_kpt)], tmp_path)
    before = files(source)
    code, out, err = render(str(source))
    assert code == 0, err
    assert objects(out) == package_objects(by_kpt)
    assert files(source) == before, "without --in-place the package is left alone"


def _package(tmp_path: Path, kptfile: str, **files: str) -> Path:
    root = tmp_path / "pkg"
    root.mkdir()
    (root / "Kptfile").write_text(textwrap.dedent(kptfile))
    for name, text in files.items():
        path = root / name.replace("__", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def _hash_job_package(tmp_path: Path, job: str, wide: bool = False) -> Path:
    """A package of one Job whose pipeline only hashes Job names; ``wide``: the Kptfile's sequence is
    indented under its key (kpt's write-back must keep it so)."""
    dash = "  - " if wide else "- "
    kptfile = f"""\
        apiVersion: kpt.dev/v1
        kind: Kptfile
        metadata: {{name: pkg}}
        pipeline:
          mutators:
          {dash}exec: krmfn-hash-job-names
        """
    return _package(tmp_path, kptfile, **{"job.yaml": job})


JOB = """\
    apiVersion: batch/v1
    kind: Job
    metadata:
      name: migrate
    spec:
      backoffLimit: 1
      template:
        spec:
          restartPolicy: Never
          containers:
          - name: app
            image: app:1
    """


WIDE_JOB = """\
    apiVersion: batch/v1
    kind: Job
    metadata:
      name: 'migrate' # renamed
    spec:
      template:
        spec:
          containers:
            - name: app
              image: "app:1"
    """


def test_other_functions_are_refused_with_a_pointer_to_kpt(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        """\
        apiVersion: kpt.dev/v1
        kind: Kptfile
        metadata: {name: pkg}
        pipeline:
          mutators:
          - image: ghcr.io/kptdev/krm-functions-catalog/set-namespace:v0.4
        """,
        **{"job.yaml": JOB},
    )
    code, out, err = render(str(root))
    assert (code, out) == (1, "")
    assert "pipeline.mutators[0]" in err and "is not a krmfn function" in err and "kpt fn render" in err


def test_krmfn_images_and_exec_paths_run_in_process(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        """\
        apiVersion: kpt.dev/v1
        kind: Kptfile
        metadata: {name: pkg}
        pipeline:
          mutators:
          - image: ghcr.io/example/krmfn-hash-job-names:v0.1.0
          validators:
          - exec: /usr/local/bin/krmfn-validate-jobs
        """,
        **{"job.yaml": JOB},
    )
    code, out, err = render(str(root))
    assert code == 0, err
    (job,) = [o for o in load_all_fast(out) if o]
    assert job["metadata"]["name"].startswith("migrate-")


def test_nested_packages_render_first_and_krmignore_is_honoured(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        """\
        apiVersion: kpt.dev/v1
        kind: Kptfile
        metadata: {name: pkg}
        pipeline:
          validators:
          - exec: krmfn-validate-jobs
        """,
        **{
            ".krmignore": "ignored/\n",
            "ignored__broken.yaml": "not: [a, resource\n",
            "sub__Kptfile": """\
                apiVersion: kpt.dev/v1
                kind: Kptfile
                metadata: {name: sub}
                pipeline:
                  mutators:
                  - exec: krmfn-hash-job-names
                """,
            "sub__job.yaml": JOB,
            "job.yaml": JOB,
        },
    )
    code, out, err = render(str(root), "--results-dir", str(tmp_path / "results"))
    assert code == 0, err
    names = sorted(o["metadata"]["name"] for o in load_all_fast(out) if o)
    assert names[0] == "migrate" and names[1].startswith("migrate-"), "only the subpackage hashes names"
    results = next(load_all_fast((tmp_path / "results" / "results.yaml").read_text()))
    assert [i.get("exec") for i in results["items"]] == ["krmfn-hash-job-names", "krmfn-validate-jobs"]
    assert results["exitCode"] == 0


def test_in_place_keeps_comments_quotes_and_wide_sequences(tmp_path: Path) -> None:
    root = _hash_job_package(tmp_path, WIDE_JOB, wide=True)
    code, _, err = render(str(root), "--in-place")
    assert code == 0, err
    text = (root / "job.yaml").read_text()
    assert "  name: 'migrate-" in text and "# renamed" in text
    assert "\n        - name: app" in text, "a wide sequence stays wide"
    assert "    - exec: krmfn-hash-job-names" in (root / "Kptfile").read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "the package directory is required"),
        (["a", "b"], "one package directory expected"),
        (["a", "--yaml", "slow"], "expected fast or fidelity"),
        (["a", "--in-place", "--yaml", "fast"], "needs --yaml fidelity"),
        (["a", "--bogus"], "unknown argument"),
    ],
)
def test_usage_errors(args: list[str], message: str) -> None:
    code, _, err = render(*args)
    assert code == 2 and message in err


def test_a_directory_without_kptfile_is_an_error(tmp_path: Path) -> None:
    code, _, err = render(str(tmp_path))
    assert code == 1 and "no Kptfile" in err


def test_same_objects_as_kpt_with_the_combined_function(tmp_path: Path) -> None:
    example = ROOT / "examples" / "config-rollout"
    code, out, err = render(str(derive_source(example, tmp_path)))
    assert code == 0, err
    assert by_identity([o for o in load_all_fast(out) if o]) == package_objects(example)


BROKEN_CRONJOB = """\
    apiVersion: batch/v1
    kind: CronJob
    metadata:
      name: nightly-backup
    spec:
      schedule: "CRON_TZ=Europe/Paris 30 2 * * 7"
      jobTemplate:
        spec:
          template:
            spec:
              containers:
              - name: backup
                image: busybox:1.37
    """


@pytest.mark.e2e
def test_a_failing_pipeline_prints_nothing_and_writes_nothing_like_kpt(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        """\
        apiVersion: kpt.dev/v1
        kind: Kptfile
        metadata: {name: pkg}
        pipeline:
          mutators:
          - exec: krmfn-hash-job-names
          validators:
          - exec: krmfn-validate-jobs
        """,
        **{"cronjob.yaml": BROKEN_CRONJOB, "job.yaml": JOB},
    )
    before = files(root)
    kpt = run([tool("kpt"), "fn", "render", "--allow-exec", str(root)], tmp_path, check=False)
    assert kpt.returncode == 1 and "cannot use TZ or CRON_TZ" in kpt.stderr
    assert files(root) == before, "kpt wrote a package whose pipeline failed"
    for flags in ((), ("--in-place",)):
        code, out, err = render(str(root), *flags)
        assert (code, out) == (1, ""), f"krmfn render {flags} must fail and print nothing"
        assert "cannot use TZ or CRON_TZ" in err
        assert files(root) == before


MAPPING_INPUT = """\
    apiVersion: fn.krmfn.dev/v1alpha1
    kind: RenderInputs
    metadata:
      name: sizing
      annotations:
        config.kubernetes.io/local-config: "true"
    inputs:
      resources:
        requests: {memory: 128Mi}
    """

SCALAR_BECOMES_MAPPING = """\
    apiVersion: v1
    kind: Pod
    metadata:
      name: worker
    spec:
      containers:
      - name: worker
        image: app:1
        resources: << inputs.resources >>
    """


@pytest.mark.e2e
def test_a_scalar_rendered_into_a_mapping_is_written_where_kpt_refuses(tmp_path: Path) -> None:
    # kpt's write-back copies comments node by node and fails when a scalar became a mapping
    kptfile = """\
        apiVersion: kpt.dev/v1
        kind: Kptfile
        metadata: {name: pkg}
        pipeline:
          mutators:
          - exec: krmfn-render-inputs
            configPath: fn-config.yaml
        """
    root = _package(
        tmp_path, kptfile, **{"fn-config.yaml": MAPPING_INPUT, "pod.yaml": SCALAR_BECOMES_MAPPING}
    )
    before = files(root)
    kpt = run([tool("kpt"), "fn", "render", "--allow-exec", str(root)], tmp_path, check=False)
    assert kpt.returncode and "wrong node kind" in kpt.stderr, kpt.stderr
    assert files(root) == before
    code, _, err = render(str(root), "--in-place")
    assert code == 0, err
    (pod,) = load_all_fast((root / "pod.yaml").read_text())
    assert pod["spec"]["containers"][0]["resources"] == {"requests": {"memory": "128Mi"}}


CANARY_SECRET = """\
    apiVersion: v1
    kind: Secret
    metadata:
      name: outside
    stringData:
      password: CANARYoutside42
    """


def _symlinked_package(tmp_path: Path) -> tuple[Path, Path]:
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "secret.yaml").write_text(textwrap.dedent(CANARY_SECRET))
    (outside / "dir" / "more.yaml").write_text(textwrap.dedent(CANARY_SECRET).replace("outside", "more"))
    root = _hash_job_package(tmp_path, JOB)
    (root / "secret.yaml").symlink_to(outside / "secret.yaml")
    (root / "linked").symlink_to(outside / "dir", target_is_directory=True)
    (root / ".krmignore").symlink_to(outside / "secret.yaml")
    return root, outside


def _tree(directory: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(directory.rglob("*")) if p.is_file()
    }


def test_symlinks_are_skipped_as_kpt_skips_them(tmp_path: Path) -> None:
    root, outside = _symlinked_package(tmp_path)
    before = _tree(outside)
    code, out, err = render(str(root))
    assert code == 0, err
    assert "CANARY" not in out + err
    assert sorted(o["kind"] for o in load_all_fast(out) if o) == ["Job"]
    code, _, err = render(str(root), "--in-place")
    assert code == 0, err
    assert _tree(outside) == before
    assert (root / "secret.yaml").is_symlink() and (root / "linked").is_symlink()


@pytest.mark.e2e
def test_kpt_skips_symlinked_directories_and_follows_symlinked_files(tmp_path: Path) -> None:
    """Pins kpt's own behaviour (1.0.0-beta.56), which krmfn diverges from on purpose for files: kpt
    reads a symlinked file (printing a Secret from outside the package) and writes through it in place;
    krmfn skips it, as kpt skips a symlinked directory (docs/security.md)."""
    root, _ = _symlinked_package(tmp_path / "a")
    kpt_root, _ = _symlinked_package(tmp_path / "b")
    _, out, _ = render(str(root))
    proc = run(
        [tool("kpt"), "fn", "render", str(kpt_root), "--allow-exec", "-o", "stdout"], tmp_path, check=False
    )
    assert proc.returncode == 0, proc.stderr
    (listed,) = [o for o in load_all_fast(proc.stdout) if o]
    by_kpt = sorted((o["kind"], o["metadata"]["name"]) for o in listed["items"] if o["kind"] != "Job")
    assert by_kpt == [("Kptfile", "pkg"), ("Secret", "outside")]  # the symlinked directory's "more": no
    assert sorted(o["kind"] for o in load_all_fast(out) if o) == ["Job"]


@pytest.mark.parametrize(
    ("annotation", "value"),
    [
        ("config.kubernetes.io/path", "../escaped.yaml"),
        ("config.kubernetes.io/path", "OUTSIDE/escaped.yaml"),  # an absolute path outside the package
        ("internal.config.kubernetes.io/path", "sub/../../escaped.yaml"),
        ("internal.config.kubernetes.io/package-path", "/tmp"),
        ("config.kubernetes.io/path", "linked/escaped.yaml"),
    ],
)
def test_in_place_never_writes_outside_the_package_or_through_a_symlink(
    tmp_path: Path, annotation: str, value: str
) -> None:
    from krmfn.errors import PipelineError
    from krmfn.kpt import package as pkg

    root, _ = _symlinked_package(tmp_path)
    package = pkg.read(root, "fast")
    job = next(o for o in package.items if o["kind"] == "Job")
    notes = job["metadata"]["annotations"]
    if annotation == "config.kubernetes.io/path":
        notes.pop("internal.config.kubernetes.io/path")
    if annotation == "internal.config.kubernetes.io/path":
        notes.pop("config.kubernetes.io/path")  # the legacy annotation wins when both are there
    # outside the package, and unique to this test so that no other run's leftovers can mask a write
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    notes[annotation] = value.replace("OUTSIDE", str(outside))
    before = _tree(tmp_path)
    with pytest.raises(PipelineError, match="krmfn render writes only inside the package"):
        pkg.write(package, package.items, "fast")
    assert _tree(tmp_path) == before
    assert not outside.exists()
