"""What ``-f PATH`` is, said in every message (krmfn/k8s/manifest_files.py, for ``krmfn plan|apply|diff`` and
``krmfn export``): a path of every kind, through both commands. ``-f /dev/null`` said ``no such file or
directory`` (issue 34); a broken link or an unreadable subdirectory inside a directory was left out without a
word, so its objects would have been pruned.

A named pipe and a character device are read once, as a stream (process substitution ``-f <(kustomize
build .)``, ``/dev/stdin``), at most to the input limit; ``/dev/null`` is then an empty input.
"""

from __future__ import annotations

import os
import socket
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from krmfn.export import main as export_main
from krmfn.k8s import manifest_files as stream
from krmfn.runner.commands.cli import main as runner_main
from krmfn.yaml.io import dump_fast

ROOT = os.geteuid() == 0
CONFIGMAP = dump_fast({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "a"}})


def _file(path: Path, text: str = CONFIGMAP) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _unreadable(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Takes read permission away; root ignores permissions, so for root the OS's answer is injected."""
    if not ROOT:
        path.chmod(0)
        return
    real_open, real_walk = Path.open, os.walk

    def refuse_open(self: Path, *args: object, **kwargs: object) -> object:
        if self == path:
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)  # type: ignore[call-overload]

    def refuse_walk(
        top: object, onerror: Callable[[OSError], None] | None = None, **kwargs: object
    ) -> Iterator[object]:
        for entry in real_walk(top, onerror=onerror, **kwargs):  # type: ignore[call-overload]
            if Path(entry[0]) == path and onerror is not None:
                onerror(PermissionError(13, "Permission denied", str(path)))
                continue
            yield entry

    monkeypatch.setattr(Path, "open", refuse_open)
    monkeypatch.setattr(os, "walk", refuse_walk)


def _fifo(path: Path, text: str) -> Path:
    os.mkfifo(path)
    threading.Thread(target=lambda: path.write_text(text), daemon=True).start()
    return path


def _socket(path: Path) -> Path:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    return path


def _link(path: Path, target: Path) -> Path:
    path.symlink_to(target)
    return path


def _bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _then(
    path: Path, monkeypatch: pytest.MonkeyPatch, step: Callable[[Path, pytest.MonkeyPatch], None]
) -> Path:
    step(path, monkeypatch)
    return path


def _sub(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    _file(tmp / "d" / "a.yaml")
    _unreadable(_file(tmp / "d" / "sub" / "b.yaml").parent, monkeypatch)
    return tmp / "d"


# kind -> (makes the path under tmp_path, the message expected, or None when the path is read)
Maker = Callable[[Path, pytest.MonkeyPatch], Path]
EMPTY = "is empty: it has no objects to deploy"
KINDS: dict[str, tuple[Maker, str | None]] = {
    "regular-file": (lambda t, m: _file(t / "a.yaml"), None),
    "directory": (lambda t, m: _file(t / "d" / "sub" / "a.yaml").parent.parent, None),
    "fifo": (lambda t, m: _fifo(t / "p", CONFIGMAP), None),
    "symlink-to-a-file": (lambda t, m: _link(t / "l.yaml", _file(t / "a.yaml")), None),
    "empty-file": (lambda t, m: _file(t / "a.yaml", ""), f"the input ({{path}}) {EMPTY}"),
    "character-device": (lambda t, m: Path("/dev/null"),
                         f"the input (/dev/null, a character device) {EMPTY}"),
    "empty-fifo": (lambda t, m: _fifo(t / "p", ""), f"the input ({{path}}, a named pipe (FIFO)) {EMPTY}"),
    "missing": (lambda t, m: t / "nope.yaml", "{path}: no such file or directory"),
    "broken-symlink": (lambda t, m: _link(t / "l.yaml", t / "nowhere"),
                       "{path}: a symbolic link to '{tmp}/nowhere', which does not exist"),
    "symlink-loop": (lambda t, m: _link(t / "l.yaml", t / "l.yaml"),
                     "{path}: not reachable: too many levels of symbolic links"),
    "through-a-file": (lambda t, m: _file(t / "a.yaml") / "x.yaml",
                       "{path}: no such file or directory (a part of the path before the last is not a "
                       "directory)"),
    "socket": (lambda t, m: _socket(t / "s"), "{path}: a socket, not a file or directory of manifests"),
    "directory-without-manifests": (lambda t, m: _file(t / "d" / "notes.txt").parent,
                                    "{path}: no .yaml, .yml or .json files in the directory"),
    "not-utf8": (lambda t, m: _bytes(t / "a.yaml", b"\xff\xfe"), "{path}: not UTF-8 text"),
    "unreadable-file": (lambda t, m: _then(_file(t / "a.yaml"), m, _unreadable),
                        "{path}: cannot read: permission denied"),
    "unreadable-directory": (lambda t, m: _then(_file(t / "d" / "a.yaml").parent, m, _unreadable),
                             "{path}: cannot list the directory: permission denied"),
    "unreadable-subdirectory": (_sub, "{path}/sub: cannot list the directory: permission denied"),
    "broken-symlink-in-a-directory": (
        lambda t, m: _link(_file(t / "d" / "a.yaml").parent / "b.yaml", t / "nowhere").parent,
        "{path}/b.yaml: a symbolic link to '{tmp}/nowhere', which does not exist, not a manifest file"),
    "fifo-in-a-directory": (lambda t, m: _fifo(_file(t / "d" / "a.yaml").parent / "p.yaml", "").parent,
                            "{path}/p.yaml: a named pipe (FIFO), not a manifest file"),
}  # fmt: skip


@pytest.mark.parametrize("command", ["plan", "export"])
@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_of_path_is_read_or_named_for_what_it_is(
    kind: str,
    command: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    make, expected = KINDS[kind]
    path = make(tmp_path, monkeypatch)
    if command == "plan":
        code, prefix = runner_main(["plan", "-f", str(path), "-n", "a"]), "krmfn plan: "
    else:
        code, prefix = export_main(["export", "argocd", "-f", str(path)]), "krmfn export argocd: "
    out, err = capsys.readouterr()
    if expected is None:
        assert (code, err) == (0, ""), err
        assert "ConfigMap a/c" in out or "name: c" in out, out
        return
    assert code == (2 if command == "plan" else 1), (out, err)
    message = expected.format(path=path, tmp=tmp_path)
    assert err.startswith(prefix + message), err
    assert err.count("\n") == 1, err


@pytest.mark.parametrize(
    ("mode", "words"),
    [
        (stat.S_IFREG, "a regular file"),
        (stat.S_IFDIR, "a directory"),
        (stat.S_IFIFO, "a named pipe (FIFO)"),
        (stat.S_IFCHR, "a character device"),
        (stat.S_IFBLK, "a block device"),
        (stat.S_IFSOCK, "a socket"),
        (0, "not a regular file"),
    ],
)
def test_path_kind_names_every_file_type(mode: int, words: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every type stat can report, a block device included (making one needs root)."""
    monkeypatch.setattr(stream.os, "stat", lambda path: os.stat_result((mode, 0, 0, 1, 0, 0, 0, 0, 0, 0)))
    assert stream.path_kind(Path("x")) == words


def test_a_device_that_never_ends_is_read_only_to_the_input_limit(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KRMFN_MAX_INPUT_BYTES", "4096")
    assert runner_main(["plan", "-f", "/dev/zero"]) == 2
    assert "/dev/zero: over the limit of 4096 bytes (KRMFN_MAX_INPUT_BYTES)" in capsys.readouterr().err


def test_k_names_what_its_path_is(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for path, words in ((_file(tmp_path / "a.yaml"), "a regular file, not the directory of a kustomization"),
                        (tmp_path / "nope", "no such file or directory")):  # fmt: skip
        assert runner_main(["plan", "-k", str(path)]) == 2
        assert f"krmfn plan: {path}: {words}\n" == capsys.readouterr().err
