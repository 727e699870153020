"""``krmfn render`` stays inside the package (docs/security.md, functions' promise 5), as a property.

Generated packages hold symlinks (to files and directories, to ``..``, absolute, dangling, loops, a
symlinked ``.krmignore`` or nested ``Kptfile``), a FIFO, and files and nested packages whose names are
``<< >>`` templates, so render-inputs renders their path annotations (``config.kubernetes.io/path``,
``internal.config.kubernetes.io/path``, ``internal.config.kubernetes.io/package-path``) into generated
paths with ``..``, ``.``, empty components, absolute parts and symlinked directories. A second property
sets those annotations (and the namespace, and the legacy ``config.k8s.io/path`` krmfn does not read)
directly before a write. Each run is watched by the kernel (inotify on the directories around the
package): nothing outside the package may be opened, read, written, created or removed; a refused
target is one clean line, exit 1, and nothing written at all.

``krmfn render --in-place`` once checked ``normpath(root / path)`` and opened ``root / path``: with
``link -> ..``, ``link/../pwned.yaml`` was checked as inside and written beside the package.
"""

from __future__ import annotations

import io
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from fswatch import Watch
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from krmfn.errors import PipelineError
from krmfn.kpt import package as pkg
from krmfn.render import main as render_main
from krmfn.terminal import safe_line

CANARY = "CANARYoutside42"
SECRET = f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: outside\nstringData:\n  password: {CANARY}\n"
KPTFILE = """\
apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: pkg
pipeline:
  mutators:
  - exec: krmfn-render-inputs
    configPath: fn.yaml
"""
FN = """\
apiVersion: fn.krmfn.dev/v1alpha1
kind: RenderInputs
metadata:
  name: r
  annotations:
    config.kubernetes.io/local-config: "true"
inputsFrom:
- name: vals
"""
CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  a: b\n"

# Symlinks a package may hold: name -> target ({OUT} is the directory beside the package).
LINKS = {
    "link": "..",
    "uplink": "../outside",
    "outlink": "{OUT}",
    "self": ".",
    "loop": "loop",
    "loopa": "loopb",
    "loopb": "loopa",
    "filelink.yaml": "{OUT}/secret.yaml",
    "rel.yml": "../outside/ci.yml",
    "dangling.yaml": "nowhere/x.yaml",
    "sub/up": "../..",
    "sub/out.yaml": "../../outside/secret.yaml",
    ".krmignore": "{OUT}/secret.yaml",
    "nested/Kptfile": "{OUT}/secret.yaml",
}
COMPONENTS = ("link", "uplink", "outlink", "self", "loop", "loopa", "sub", "up", "new", "..", ".", "",
              ".git", "outside", "filelink.yaml", "{OUT}", "{PKG}")  # fmt: skip
paths = st.builds(
    lambda parts, last: "/".join([*parts, last]),
    st.lists(st.sampled_from(COMPONENTS), max_size=4),
    st.sampled_from(("pwned", "secret", "ci", "x", "Kptfile")),
)


@dataclass(frozen=True)
class Tree:
    links: frozenset[str]
    file: str
    """The value of inputs.f: the file ``<< inputs.f >>.yaml`` is rendered to ``<file>.yaml``."""
    nested: str | None
    """The value of inputs.p, when a nested package named ``<< inputs.p >>`` is present."""
    fifo: bool = False


trees = st.builds(
    Tree, st.frozensets(st.sampled_from(sorted(LINKS)), max_size=6), paths, st.one_of(st.none(), paths)
)


@contextmanager
def layout(tree: Tree) -> Iterator[tuple[Path, Path]]:
    """(base, package): base/outside holds the canaries, base/pkg the generated package."""
    base = Path(tempfile.mkdtemp(prefix="krmfn-paths-"))
    try:
        outside, root = base / "outside", base / "pkg"
        (outside / "dir").mkdir(parents=True)
        (outside / "secret.yaml").write_text(SECRET)
        (outside / "ci.yml").write_text("on: push\n")
        (outside / "dir" / "more.yaml").write_text(SECRET.replace("name: outside", "name: more"))
        (root / "sub").mkdir(parents=True)
        (root / "nested").mkdir()
        (root / "Kptfile").write_text(KPTFILE)
        (root / "fn.yaml").write_text(FN)
        values = {"f": _fill(tree.file, base, root), "p": _fill(tree.nested or "", base, root)}
        data = "".join(f"  {k}: {v!r}\n" for k, v in values.items())
        (root / "vals.yaml").write_text(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: vals\n  annotations:\n"
            f'    config.kubernetes.io/local-config: "true"\ndata:\n{data}'
        )
        (root / "<< inputs.f >>.yaml").write_text(CONFIGMAP.format(name="x"))
        (root / "sub" / "real.yaml").write_text(CONFIGMAP.format(name="real"))
        if tree.nested is not None:
            nested = root / "<< inputs.p >>"
            nested.mkdir()
            (nested / "Kptfile").write_text(KPTFILE.replace("name: pkg", "name: n").split("pipeline:")[0])
            (nested / "a.yaml").write_text(CONFIGMAP.format(name="nested-a"))
        for name in tree.links:
            (root / name).symlink_to(LINKS[name].replace("{OUT}", str(outside)))
        if tree.fifo:
            os.mkfifo(root / "fifo.yaml")
        yield base, root
    finally:
        shutil.rmtree(base)


def _fill(path: str, base: Path, root: Path) -> str:
    return path.replace("{OUT}", str(base / "outside")).replace("{PKG}", str(root))


def snapshot(directory: Path) -> dict[str, tuple[str, bytes]]:
    """Every entry below ``directory`` (symlinks not followed): its kind and bytes or target."""
    found: dict[str, tuple[str, bytes]] = {}
    for top, dirs, names in os.walk(directory):
        for name in dirs + names:
            path = Path(top, name)
            relative = str(path.relative_to(directory))
            if path.is_symlink():
                found[relative] = ("link", os.readlink(path).encode())
            elif path.is_dir():
                found[relative] = ("dir", b"")
            elif path.is_file():
                found[relative] = ("file", path.read_bytes())
            else:
                found[relative] = ("other", b"")
    return found


def safe_target(root: Path, relative: str) -> bool:
    """The oracle: a relative path with no ``..``, whose every existing component is a real directory
    (the last a regular file or absent), a file the reader reads, outside .git."""
    parts = [p for p in relative.split("/") if p not in ("", ".")]
    if relative.startswith("/") or ".." in parts or ".git" in parts or not parts:
        return False
    if parts[-1] != "Kptfile" and not parts[-1].endswith((".yaml", ".yml")):
        return False
    for depth in range(1, len(parts) + 1):
        path = root.joinpath(*parts[:depth])
        if path.is_symlink():
            return False
        if not path.exists():
            return True
        if depth < len(parts) and not path.is_dir():
            return False
    return path.is_file()


def outside_events(watch: Watch, base: Path) -> list[tuple[Path, str, str]]:
    """Everything the kernel saw outside the package: ``base/pkg`` itself opened is the package."""
    return [e for e in watch.events() if not (e[0] == base and e[1] == "pkg")]


def render(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = render_main(["render", *args], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def check_clean_error(code: int, err: str) -> None:
    assert code == 1, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("krmfn render: "), err
    assert lines[0] == safe_line(lines[0]) and "Traceback" not in err


ESCAPES = [
    Tree(frozenset({"link"}), "link/../pwned", None),  # the finding: checked as root/pwned.yaml
    Tree(frozenset({"uplink"}), "uplink/../outside/secret", None),  # read, then overwritten
    Tree(frozenset({"outlink"}), "outlink/dir/more", None),
    Tree(frozenset(), "{OUT}/pwned", None),
    Tree(frozenset(), "../outside/pwned", None),
    Tree(frozenset({"sub/up"}), "sub/up/outside/ci", None),
    Tree(frozenset({"self"}), "self/x", None),
    Tree(frozenset(), "sub/x", "{PKG}/../outside"),  # a nested package's package-path rendered outside
    Tree(frozenset({"loop"}), "loop/x", None),
]


@settings(max_examples=60, derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
@given(trees, st.booleans())
@example(ESCAPES[0], True)
@example(ESCAPES[1], True)
@example(ESCAPES[2], True)
@example(ESCAPES[3], True)
@example(ESCAPES[4], True)
@example(ESCAPES[5], True)
@example(ESCAPES[6], True)
@example(ESCAPES[7], True)
@example(ESCAPES[8], True)
@example(Tree(frozenset(LINKS), "sub/new/x", None), True)
def test_render_reads_and_writes_nothing_outside_the_package(tree: Tree, in_place: bool) -> None:
    with layout(tree) as (base, root):
        outside_before = snapshot(base / "outside")
        package_before = snapshot(root)
        with Watch([base, base / "outside", base / "outside" / "dir"]) as watch:
            code, out, err = render(str(root), *(["--in-place"] if in_place else []))
            seen = outside_events(watch, base)
        assert seen == [], f"the render touched files outside the package: {seen}"
        assert snapshot(base / "outside") == outside_before
        assert sorted(p.name for p in base.iterdir()) == ["outside", "pkg"]
        assert CANARY not in out + err
        assert "Traceback" not in err
        if code:
            check_clean_error(code, err)
            assert snapshot(root) == package_before, "a failed render wrote something"
        if not in_place:
            return
        target = _fill(tree.file, base, root) + ".yaml"
        nested = _fill(tree.nested, base, root) if tree.nested is not None else None
        # The nested package's package-path is "<root>/<< inputs.p >>": rendered, "<root>/" + p.
        refused_nested = nested is not None and not safe_target(root, f"{nested}/a.yaml")
        if not safe_target(root, target) or refused_nested:
            check_clean_error(code, err)
            assert "refused" in err
            return
        assert code == 0, err
        written = root.joinpath(*[p for p in target.split("/") if p not in ("", ".")])
        assert "name: x" in written.read_text()


ANNOTATIONS = (
    "config.kubernetes.io/path",
    "internal.config.kubernetes.io/path",
    "internal.config.kubernetes.io/package-path",
    "metadata.namespace",
    "config.k8s.io/path",  # not a path annotation: kept as an ordinary annotation, the file unchanged
)


@settings(max_examples=80, derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
@given(st.frozensets(st.sampled_from(sorted(LINKS)), max_size=6), st.sampled_from(ANNOTATIONS), paths)
@example(frozenset({"link"}), "config.kubernetes.io/path", "link/../pwned.yaml")
@example(frozenset({"link"}), "internal.config.kubernetes.io/path", "link/../pwned.yaml")
@example(frozenset({"uplink"}), "internal.config.kubernetes.io/package-path", "{PKG}/uplink/..")
@example(frozenset(), "metadata.namespace", "..")
def test_a_write_goes_only_where_the_checked_path_says(
    links: frozenset[str], annotation: str, value: str
) -> None:
    """Whatever a function leaves in the path annotations (or the namespace of an object without
    them), the write lands inside the package at exactly the path that was checked, or nowhere."""
    with layout(Tree(links, "x", None)) as (base, root):
        package = pkg.read(root, "fast")
        obj = next(o for o in package.items if o["metadata"]["name"] == "x")
        notes = obj["metadata"]["annotations"]
        own = notes["config.kubernetes.io/path"]
        filled = _fill(value, base, root)
        if annotation == "metadata.namespace":
            for key in ("config.kubernetes.io/path", "internal.config.kubernetes.io/path"):
                notes.pop(key)
            obj["metadata"]["namespace"] = filled
            target = f"{filled}/configmap_x.yaml"
        elif annotation == "internal.config.kubernetes.io/package-path":
            notes[annotation] = filled
            if filled == str(root):
                target = own
            elif filled.startswith(str(root) + "/"):
                target = f"{filled.removeprefix(str(root) + '/')}/{own}"
            else:
                target = "/outside"  # relative, or not below the package
        else:
            notes[annotation] = filled
            if annotation == "internal.config.kubernetes.io/path":
                notes.pop("config.kubernetes.io/path")  # the legacy annotation wins when both are there
            target = filled if annotation != "config.k8s.io/path" else own
        outside_before, package_before = snapshot(base / "outside"), snapshot(root)
        with Watch([base, base / "outside", base / "outside" / "dir"]) as watch:
            try:
                pkg.write(package, package.items, "fast")
                refused = None
            except PipelineError as err:
                refused = err
            seen = outside_events(watch, base)
        assert seen == [], f"the write touched files outside the package: {seen}"
        assert snapshot(base / "outside") == outside_before
        assert sorted(p.name for p in base.iterdir()) == ["outside", "pkg"]
        if not safe_target(root, target):
            assert refused is not None, f"{annotation}={filled!r} was written"
            assert "refused" in str(refused) and str(refused) == safe_line(str(refused))
            assert snapshot(root) == package_before
        else:
            assert refused is None, refused
            written = root.joinpath(*[p for p in target.split("/") if p not in ("", ".")])
            assert "name: x" in written.read_text()


@pytest.mark.parametrize("in_place", [False, True])
def test_a_fifo_in_the_package_is_an_error_not_a_hang(in_place: bool) -> None:
    """A FIFO named like a resource file blocked the reader forever. A writer thread waits on it, so that
    code that opens it to read gets an empty file at once instead of hanging the test; after the render
    the test holds it open for reading until the writer is done."""
    with layout(Tree(frozenset(), "x", None, fifo=True)) as (_, root):
        fifo = root / "fifo.yaml"
        writer = threading.Thread(target=lambda: os.close(os.open(fifo, os.O_WRONLY)))
        writer.start()
        code, _, err = render(str(root), *(["--in-place"] if in_place else []))
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # the writer's open returns, now or when it runs
        writer.join()
        os.close(reader)
    check_clean_error(code, err)
    assert "not a regular file" in err


@pytest.mark.parametrize("name", ["link/../pwned", "uplink/../outside/secret"])
def test_the_finding_through_the_cli(name: str) -> None:
    """The report's case end to end: exit 1, one line naming the object, nothing outside touched."""
    with layout(Tree(frozenset({"link", "uplink"}), name, None)) as (base, root):
        before = snapshot(base)
        code, _, err = render(str(root), "--in-place")
        check_clean_error(code, err)
        assert "ConfigMap x" in err and "refused" in err
        assert snapshot(base) == before
