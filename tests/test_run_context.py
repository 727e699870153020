"""``krmfn plan`` reads the kubeconfig's namespace without lightkube (cluster/kubeconfig_file.py), apply
and diff through lightkube (cluster/kubeconfig.py): both must find the same file and the same namespace,
or a plan would show objects in a namespace the apply then does not use.

The oracle is lightkube's own reading (``load_config``), over kubeconfigs generated across what the
lookup decides: which file (``--kubeconfig``, ``$KUBECONFIG`` with several paths, ``~/.kube/config``),
which context (current, ``--context``), and whether it names a namespace.
"""

from __future__ import annotations

import argparse
import itertools
import os
from pathlib import Path

import pytest

from krmfn.runner.cluster.kubeconfig import load_config
from krmfn.runner.cluster.kubeconfig_file import context_namespace
from krmfn.runner.commands.context import RunContext
from krmfn.runner.errors import KubeconfigError


def _kubeconfig(namespaces: dict[str, str | None], current: str) -> str:
    contexts = "".join(
        f"- name: {name}\n  context:\n    cluster: c\n    user: u\n"
        + (f"    namespace: {ns}\n" if ns else "")
        for name, ns in namespaces.items()
    )
    return (
        "apiVersion: v1\nkind: Config\n"
        "clusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:6443\n"
        "users:\n- name: u\n  user:\n    token: t\n"
        f"contexts:\n{contexts}current-context: {current}\n"
    )


WHERE = ("flag", "env-first", "env-second-path", "home")
CONTEXT = (None, "other")
NAMESPACE = ("team-a", None)


@pytest.mark.parametrize(
    ("where", "context", "namespace"), list(itertools.product(WHERE, CONTEXT, NAMESPACE))
)
def test_plan_finds_the_namespace_apply_finds(
    where: str, context: str | None, namespace: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    text = _kubeconfig({"main": namespace, "other": "team-b" if namespace else None}, "main")
    decoy = _kubeconfig({"main": "decoy", "other": "decoy"}, "main")
    flag = None
    if where == "flag":
        flag = str(tmp_path / "given")
        Path(flag).write_text(text)
        (home / ".kube" / "config").write_text(decoy)
        monkeypatch.setenv("KUBECONFIG", str(tmp_path / "decoy"))
        (tmp_path / "decoy").write_text(decoy)
    elif where.startswith("env"):
        first, second = tmp_path / "first", tmp_path / "second"
        first.write_text(text if where == "env-first" else decoy)
        second.write_text(decoy if where == "env-first" else text)
        paths = [first, second] if where == "env-first" else [second, first]
        monkeypatch.setenv("KUBECONFIG", os.pathsep.join(map(str, paths)))
        (home / ".kube" / "config").write_text(decoy)
    else:
        (home / ".kube" / "config").write_text(text)
    expected = load_config(flag, context).namespace
    assert expected != "decoy"
    assert context_namespace(flag, context) == expected
    args = argparse.Namespace(
        namespace=None, kubeconfig=flag, context=context, step_timeout=300.0, wait=None, allow_empty=True,
        command="plan", kustomize=None, filename=["-"],
    )  # fmt: skip
    run = RunContext(args, [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}])
    run.offline()
    assert run.namespace == expected
    assert [item.key.namespace for item in run.plan.items] == [expected]


@pytest.mark.parametrize(
    "text", ["{not yaml", "- a list\n", "apiVersion: v1\nkind: Config\ncontexts: []\ncurrent-context: gone\n"]
)
def test_a_kubeconfig_apply_refuses_plans_in_default(text: str, tmp_path: Path) -> None:
    """A plan needs no cluster, so it never fails on the kubeconfig; apply names what is wrong."""
    path = tmp_path / "config"
    path.write_text(text)
    assert context_namespace(str(path), None) == "default"
    with pytest.raises(KubeconfigError):
        load_config(str(path), None)
