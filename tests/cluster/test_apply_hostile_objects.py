"""Hostile objects that really live in the cluster (issue 29): a custom resource whose status a controller
nests deeper than krmfn reads, and a Secret whose annotations hold its key in the forms other tools write
(kapp's JSON copy of the object, a value without its trailing newline).

The API server stores both; krmfn reads them through its own edge. The deep status is one line naming
the object and the limit in ``krmfn apply`` (its answer, and a watch event while it waits), ``krmfn diff``
and ``krmfn status``, with their documented exit codes; the Secret's key is in no output of ``krmfn diff``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_run import krmfn_cli
from lightkube import Client
from lightkube.generic_resource import create_namespaced_resource
from lightkube.resources.core_v1 import Secret
from lightkube.types import PatchType

from krmfn.runner.cluster.api import MAX_DEPTH
from krmfn.yaml.io import dump_all_fast

from .crds import controller as controller_of
from .crds import install, open_crd
from .patience import STEP_TIMEOUT

Doc = dict[str, Any]
GROUP = "hostile.test.krmfn.dev"
Gadget = create_namespaced_resource(GROUP, "v1", "Gadget", "gadgets")
CRD = open_crd(GROUP, "Gadget", "gadgets")
LIMIT = f"nests deeper than {MAX_DEPTH} levels"
KEY_CORE = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"
KEY = f"-----BEGIN PRIVATE KEY-----\n{KEY_CORE}\n-----END PRIVATE KEY-----\n"


def deep(levels: int) -> Any:
    value: Any = "bottom"
    for _ in range(levels):
        value = [value]
    return value


@pytest.fixture(scope="module")
def gadgets(kube_client: Client) -> None:
    install(kube_client, CRD, Gadget)


Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def krmfn(kubeconfig: Path, namespace: str, tmp_path: Path) -> Run:
    """``krmfn(command, docs | None, *flags)`` in this process, the inventory ``hostile`` in the test's
    namespace; no traceback, whatever it prints."""
    counter = iter(range(1000))

    def run(command: str, docs: list[Doc] | None, *flags: str) -> tuple[int, str, str]:
        argv = [command, "-n", namespace, "--kubeconfig", str(kubeconfig), "--applyset", "hostile", *flags]
        if docs is not None:
            path = tmp_path / f"input-{next(counter)}.yaml"
            path.write_text(dump_all_fast(docs))
            argv += ["-f", str(path)]
        code, out, err = krmfn_cli(argv)
        assert "RecursionError" not in out + err, (out + err)[-3000:]
        return code, out, err

    return run


def gadget(name: str) -> Doc:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Gadget", "metadata": {"name": name}, "spec": {"size": 1}}


def last_line(text: str, *words: str) -> str:
    line = text.strip().splitlines()[-1]
    assert len(line) < 1000 and all(word in line for word in words), line
    return line


@pytest.fixture
def controller(kube_client: Client, namespace: str) -> Iterator[Callable[[str, Doc], None]]:
    """``controller(name, status)``: writes ``status`` on the Gadget ``name`` once it exists."""
    with controller_of(kube_client, namespace, Gadget) as drive:
        yield lambda name, status: drive(name, 0.5, status)  # 0.5 s: the run is watching by then


@pytest.mark.usefixtures("gadgets")
def test_a_custom_resource_whose_status_nests_too_deep(
    krmfn: Run, kube_client: Client, namespace: str, controller: Callable[[str, Doc], None], tmp_path: Path
) -> None:
    docs = [gadget("g")]
    code, out, err = krmfn("apply", docs)
    assert code == 0, out + err
    status = {"ready": True, "deep": deep(MAX_DEPTH + 50)}
    kube_client.patch(Gadget.Status, "g", {"status": status}, namespace=namespace, patch_type=PatchType.MERGE)
    stored = kube_client.get(Gadget, "g", namespace=namespace)
    assert stored.status is not None  # the API server keeps it

    code, out, err = krmfn("status", None)
    assert code == 1 and out == "", out + err
    last_line(err, "Gadget", LIMIT)
    for flags in ((), ("-o", "json")):
        code, out, err = krmfn("diff", docs, *flags)
        assert code == 2, out + err  # an error, never 1 ("changes found")
        last_line(err, "Gadget", LIMIT)
    code, out, err = krmfn("apply", docs)  # the apply's answer holds the status
    assert code == 1, out + err
    last_line(out, "Gadget.hostile.test.krmfn.dev", LIMIT)

    # While a run waits on a CEL check: the status arrives in a watch event.
    checks = tmp_path / "checks.yaml"
    checks.write_text(
        json.dumps([{"apiVersion": f"{GROUP}/v1", "kind": "Gadget", "current": "status.ready"}])
    )
    controller("waited", status)
    code, out, err = krmfn("apply", [*docs, gadget("waited")], "--wait", "--step-timeout", STEP_TIMEOUT,
                           "--health-checks", str(checks), "-o", "json")  # fmt: skip
    assert code == 1, out + err
    result = json.loads(out.splitlines()[-1])
    assert result["type"] == "result" and LIMIT in result["error"], result


def test_a_secret_whose_annotations_hold_its_key_in_other_forms(
    krmfn: Run, kube_client: Client, namespace: str
) -> None:  # fmt: skip
    doc: Doc = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "tls"},
        "stringData": {"tls.key": KEY},
    }
    code, out, err = krmfn("apply", [doc])
    assert code == 0, out + err
    copy = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "tls", "namespace": namespace},
            "stringData": {"tls.key": KEY}}  # fmt: skip
    notes = {
        "kapp.k14s.io/original": json.dumps(copy),  # kapp's copy of the object: the key JSON-escaped
        "example.com/key": KEY.rstrip("\n"),  # a | block's value, held without its newline
        "example.com/key-base64": base64.b64encode(KEY.encode()).decode(),
    }
    kube_client.patch(Secret, "tls", {"metadata": {"annotations": notes}}, namespace=namespace)
    changed = {**doc, "stringData": {"tls.key": KEY.replace("QC7", "QC8")}}
    changed["metadata"] = {
        "name": "tls",
        "annotations": {"example.com/rendered": KEY},
    }  # the rendered side too
    for flags in ((), ("-o", "json")):
        code, out, err = krmfn("diff", [changed], *flags)
        assert code == 1, out + err
        shown = out + err
        assert KEY_CORE[:40] not in shown and base64.b64encode(KEY.encode()).decode()[:40] not in shown
        assert "kapp.k14s.io/original" in shown or flags  # the annotations are shown, masked
        assert "example.com/rendered" in shown or "example.com~1rendered" in shown  # a JSON Pointer
