"""`krmfn plan` and the parts of `krmfn apply` that need no cluster: input, flags, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from e2e import tool

from krmfn.cli import main as krmfn_main
from krmfn.runner.commands.cli import main, parser

STAGED = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations: {krmfn.dev/step: deploy, krmfn.dev/step-index: "1", krmfn.dev/step-timeout: 10m}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: db-migration
  annotations: {krmfn.dev/step: pre-deploy, krmfn.dev/step-index: "0", krmfn.dev/step-timeout: 5m}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
  annotations: {krmfn.dev/step: deploy, krmfn.dev/step-index: "1"}
"""

PLAN_TEXT = """\
step 0 pre-deploy (timeout 5m0s, waits for health)
  1. Job.batch apps/db-migration
step 1 deploy (timeout 10m0s, does not wait)
  1. ConfigMap apps/web-config
  2. Deployment.apps apps/web
"""


@pytest.fixture
def staged(tmp_path: Path) -> Path:
    path = tmp_path / "staged.yaml"
    path.write_text(STAGED)
    return path


def test_plan_prints_steps_in_order(staged: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "-f", str(staged), "-n", "apps"]) == 0
    assert capsys.readouterr().out == PLAN_TEXT


def test_krmfn_plan_and_client_dry_run_print_the_same_plan(
    staged: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert krmfn_main(["plan", "-f", str(staged), "-n", "apps"]) == 0
    assert krmfn_main(["apply", "--dry-run=client", "-f", str(staged), "-n", "apps"]) == 0
    assert capsys.readouterr().out == PLAN_TEXT * 2


def test_plan_as_json(staged: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["plan", "-f", str(staged), "-n", "apps", "-o", "json", "--wait", "--step-timeout", "90s"]) == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert [(s["name"], s["timeout"], s["wait"]) for s in data["steps"]] == [
        ("pre-deploy", 300.0, True),
        ("deploy", 600.0, True),
    ]


def test_directory_and_stdin_inputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "b.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n")
    (tmp_path / "a.yml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
    (tmp_path / "notes.txt").write_text("not a manifest")
    monkeypatch.setattr(
        "sys.stdin", __import__("io").StringIO("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n")
    )
    assert main(["plan", "-f", str(tmp_path), "-f", "-", "-n", "x"]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == [
        "  1. ConfigMap x/a",
        "  2. ConfigMap x/b",
        "  3. Secret x/s",
    ]


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "-f", "-", "--health-checks", "-"],
        ["plan", "-f", "-", "-f", "-"],
        ["apply", "-f", "-", "--health-checks", "-", "--applyset", "app"],
        ["apply", "-f", "-", "-f", "-", "--applyset", "app"],
        ["diff", "-f", "-", "-f", "-", "--applyset", "app"],
    ],
    ids=" ".join,
)
def test_standard_input_read_twice_is_a_usage_error(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stream = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO(stream))
    assert main([*argv, "-n", "x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"krmfn {argv[0]}: standard input can be read only once: ")
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param(None, "no such file or directory", id="missing-file"),
        pytest.param("a: [unclosed\n", "line 2", id="broken-yaml-names-the-line"),
        pytest.param(
            "kind: ConfigMap\nmetadata: {name: a}\n", "document 1: missing apiVersion", id="no-api-version"
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, content: str | None, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "in.yaml"
    if content is not None:
        path.write_text(content)
    for command in ("plan", "apply"):
        assert main([command, "-f", str(path)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"krmfn {command}: ")
        assert message in err
        assert len(err.splitlines()) == 1


@pytest.mark.e2e
def test_kustomize_build_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "staged.yaml").write_text(STAGED)
    (tmp_path / "kustomization.yaml").write_text("resources: [staged.yaml]\nnamespace: shop\n")
    monkeypatch.setenv("KRMFN_KUSTOMIZE", tool("kustomize"))
    assert main(["plan", "-k", str(tmp_path)]) == 0
    assert capsys.readouterr().out == PLAN_TEXT.replace("apps/", "shop/")


def test_kustomize_failure_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = tmp_path / "kustomize"
    fake.write_text("#!/bin/sh\necho 'Error: accumulating resources: missing.yaml' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("KRMFN_KUSTOMIZE", str(fake))
    assert main(["plan", "-k", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"krmfn plan: kustomize build {tmp_path} failed (exit 1): "
        "Error: accumulating resources: missing.yaml\n"
    )


def test_bad_timeout_flag_is_a_usage_error(staged: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["plan", "-f", str(staged), "--step-timeout", "soon"])
    assert exit_info.value.code == 2
    assert 'time: invalid duration "soon"' in capsys.readouterr().err


def test_plan_needs_no_cluster_but_apply_says_what_is_missing(
    staged: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(staged.parent))
    assert main(["plan", "-f", str(staged)]) == 0
    assert "Job.batch default/db-migration" in capsys.readouterr().out
    assert main(["apply", "-f", str(staged), "--applyset", "web"]) == 1
    assert capsys.readouterr().err == (
        "krmfn apply: no kubeconfig: pass --kubeconfig or set KUBECONFIG (and not running in a pod)\n"
    )


def test_plan_of_a_package_directory_skips_its_kustomization(capsys: pytest.CaptureFixture[str]) -> None:
    package = Path(__file__).resolve().parent.parent / "examples" / "staged-deploy"
    assert (package / "kustomization.yaml").exists()
    assert main(["plan", "-f", str(package)]) == 0
    out = capsys.readouterr().out
    assert "step 0 pre-deploy" in out
    assert "Kustomization" not in out


def test_pruning_without_an_inventory_name_is_refused_before_connecting(
    staged: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_cluster(args: object) -> object:
        raise AssertionError("must not connect")

    assert main(["apply", "-f", str(staged), "-n", "apps"], api_factory=no_cluster) == 2  # type: ignore[arg-type]
    assert capsys.readouterr().err == (
        "krmfn apply: pruning needs to know which app this is, so that it never deletes another app's "
        "objects: pass --applyset NAME, set app: NAME in set-steps' config (it writes krmfn.dev/app), or "
        "apply a kpt package (its Kptfile names it); --no-prune applies without pruning\n"
    )


APP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, annotations: {{krmfn.dev/app: {app}}}}}\n"


@pytest.mark.parametrize(
    ("files", "flags", "expected"),
    [
        pytest.param({"a.yaml": APP.format(name="a", app="shop")}, [], ("shop", "krmfn.dev/app"), id="app"),
        pytest.param(
            {"a.yaml": APP.format(name="a", app="shop")}, ["--applyset", "cart"], ("cart", "--applyset"),
            id="flag-wins",
        ),
        pytest.param(
            {"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: billing}\n",
             "a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"},
            [], ("billing", "the name in {dir}/Kptfile"), id="kptfile-in-the-directory",
        ),
        pytest.param(
            {"a.yaml": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: billing, annotations: "
                       "{config.kubernetes.io/local-config: 'true'}}\n---\n"
                       "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"},
            [], ("billing", "the Kptfile's name"), id="kptfile-in-the-stream",
        ),
        pytest.param(
            {"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"}, ["--no-prune"],
            ("krmfn", "the default, shared by every app that names none (--no-prune)"),
            id="no-prune-fallback",
        ),
    ],
)  # fmt: skip
def test_the_inventory_is_named_after_the_app(
    tmp_path: Path, files: dict[str, str], flags: list[str], expected: tuple[str, str]
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    from krmfn.runner.inventory.identity import identify
    from krmfn.runner.source import read_files

    parsed = parser("apply").parse_args(["-f", str(tmp_path), *flags])
    found = identify(read_files([str(tmp_path)]), parsed.applyset, [str(tmp_path)], parsed.prune)
    assert (found.name, found.source) == (expected[0], expected[1].format(dir=tmp_path))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(APP.format(name="a", app="shop") + "---\n" + APP.format(name="b", app="cart"),
                     "the objects name more than one app in krmfn.dev/app (cart, shop); apply each app on "
                     "its own, or pass --applyset NAME", id="two-apps"),
        pytest.param(APP.format(name="a", app="Shop!"),
                     "krmfn.dev/app 'Shop!' cannot name the inventory Secret: ",
                     id="not-a-secret-name"),
    ],
)  # fmt: skip
def test_an_app_name_that_cannot_name_one_inventory_is_a_usage_error(
    tmp_path: Path, text: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.yaml").write_text(text)
    assert main(["apply", "-f", str(tmp_path / "a.yaml"), "-n", "apps"]) == 2
    assert capsys.readouterr().err.startswith(f"krmfn apply: {message}")


# --- -k: kustomize plugins and exec functions are opt-in (issue 15, item 14) --------------------------------


def recording_kustomize(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A kustomize that records its arguments, one a line, and builds one ConfigMap."""
    record = tmp_path / "argv"
    fake = tmp_path / "kustomize"
    fake.write_text(
        f'#!/bin/sh\nfor a in "$@"; do echo "$a"; done > {record}\n'
        "echo 'apiVersion: v1'; echo 'kind: ConfigMap'; echo 'metadata: {name: c}'\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("KRMFN_KUSTOMIZE", str(fake))
    return record


@pytest.mark.parametrize(
    ("flags", "kustomize_flags"),
    [
        pytest.param([], [], id="default: builtins only"),
        pytest.param(["--enable-alpha-plugins"], ["--enable-alpha-plugins"], id="plugins"),
        pytest.param(["--enable-exec"], ["--enable-alpha-plugins", "--enable-exec"], id="exec"),
    ],
)
def test_kustomize_runs_exec_functions_only_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flags: list[str], kustomize_flags: list[str]
) -> None:
    record = recording_kustomize(tmp_path, monkeypatch)
    directory = tmp_path / "-o-evil"  # a name that reads as a flag: it comes after --
    directory.mkdir()
    assert main(["plan", "-k", str(directory), *flags]) == 0
    assert record.read_text().splitlines() == ["build", *kustomize_flags, "--", str(directory)]


def test_exec_flags_belong_to_k(staged: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "-f", str(staged), "--enable-exec"]) == 2
    err = capsys.readouterr().err
    assert err == "krmfn plan: --enable-alpha-plugins and --enable-exec apply to -k only\n"


EXEC_TRANSFORMER = """\
apiVersion: example.com/v1
kind: Marker
metadata:
  name: marker
  annotations:
    config.kubernetes.io/function: |
      exec:
        path: ./mark.sh
"""


@pytest.mark.e2e
def test_real_kustomize_runs_a_kustomizations_binary_only_with_enable_exec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """What a hostile overlay can do in CI: name a binary of its own as a transformer."""
    marker = tmp_path / "ran"
    (tmp_path / "mark.sh").write_text(f"#!/bin/sh\ntouch {marker}\ncat\n")
    (tmp_path / "mark.sh").chmod(0o755)
    (tmp_path / "marker.yaml").write_text(EXEC_TRANSFORMER)
    (tmp_path / "staged.yaml").write_text(STAGED)
    (tmp_path / "kustomization.yaml").write_text("resources: [staged.yaml]\ntransformers: [marker.yaml]\n")
    monkeypatch.setenv("KRMFN_KUSTOMIZE", tool("kustomize"))
    assert main(["plan", "-k", str(tmp_path), "-n", "apps"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"krmfn plan: kustomize build {tmp_path} failed") and len(err.splitlines()) == 1
    assert err.endswith("(krmfn runs kustomize without plugins: pass --enable-exec to run exec functions)\n")
    assert not marker.exists()
    assert main(["plan", "-k", str(tmp_path), "-n", "apps", "--enable-exec"]) == 0
    assert capsys.readouterr().out == PLAN_TEXT
    assert marker.exists()
