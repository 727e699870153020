"""``krmfn diff`` never prints a Secret's value, in whatever form another field holds it.

Masking once looked for each value in the annotations, verbatim: a JSON copy of the object (kapp's
``kapp.k14s.io/original``) escapes a value's ``\\n``, ``&`` or ``"``, and a value from a ``|`` block
(its trailing newline) is held without the newline, so both were printed in full. A Secret's annotations,
managedFields and every field but its identity are now masked whole. Here every value of a generated
Secret goes through every encoding (JSON, nested JSON strings, YAML, base64, with and without its trailing
newline, whole copies of the object) into annotations and managedFields, on the live side and on the
rendered side, and none of its forms may appear in the text, ``-o json`` or ``KRMFN_DIFF`` output.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import string
from pathlib import Path
from typing import Any

import pytest
from fake_kube import FakeApi
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from krmfn.cli import main as krmfn_main
from krmfn.runner.engine.diff import MASK
from krmfn.runner.engine.engine import Options, Runner
from krmfn.runner.plan import build_plan
from krmfn.yaml.io import dump_fast

MARK = "\u2603"
ALNUM = string.ascii_letters + string.digits
TAIL = st.sampled_from(["", "\n", "\n\n", '" & <b>\\', "\u00e9\u2028\t", " \u202e"])
# A value: a snowman, a core no field name or mask holds (what a search of the output finds), and a tail
# that JSON, YAML and a terminal each write differently. The core starts "Qz": Hypothesis also draws
# strings it finds in the code under test, and a core of "apiVersion" is in every output.
values = st.dictionaries(
    st.sampled_from(["password", "token", "tls.key", "a"]),
    st.builds(lambda core, tail: MARK + "Qz" + core + tail, st.text(ALNUM, min_size=8, max_size=14), TAIL),
    min_size=1, max_size=3,
)  # fmt: skip


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def encodings(value: str) -> dict[str, str]:
    """``value`` as the tools that copy it into an annotation write it."""
    forms: dict[str, str] = {}
    for name, text in (("", value), ("-stripped", value.rstrip("\n"))):
        forms.update({
            f"raw{name}": text, f"base64{name}": b64(text), f"json{name}": json.dumps(text),
            f"json-utf8{name}": json.dumps(text, ensure_ascii=False),
            f"nested{name}": json.dumps(json.dumps(text)), f"yaml{name}": dump_fast({"v": text}),
            f"base64-json{name}": b64(json.dumps({"v": text})),
        })  # fmt: skip
    return forms


def secret(data: dict[str, str], field: str, notes: dict[str, str] | None = None) -> dict[str, Any]:
    stored = {k: b64(v) for k, v in data.items()} if field == "data" else dict(data)
    meta: dict[str, Any] = {"name": "s", "namespace": "ns"}
    if notes:
        meta["annotations"] = notes
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": "Opaque", field: stored}


def annotations(data: dict[str, str], field: str) -> dict[str, str]:
    """Every value in every encoding, and the whole object as client-side kubectl apply and kapp keep it."""
    whole = json.dumps(secret(data, field))
    notes = {
        "kubectl.kubernetes.io/last-applied-configuration": whole,
        "kapp.k14s.io/original": json.dumps({**secret(data, "data"), "metadata": {"labels": {"c": whole}}}),
        "note.example.com/all": " ".join(v for v in data.values()),
    }  # fmt: skip
    for i, value in enumerate(data.values()):
        for name, text in encodings(value).items():
            notes[f"v{i}.example.com/{name}"] = text
    return notes


def managed_fields(data: dict[str, str]) -> list[dict[str, Any]]:
    """A field manager's record that holds values (a tool writing more than keys into fieldsV1)."""
    fields = {f"f:{k}": encodings(v) for k, v in data.items()}
    return [
        {
            "manager": "tool",
            "operation": "Update",
            "fieldsV1": {"f:data": fields, "f:raw": list(data.values())},
        }
    ]


class Api(FakeApi):
    def close(self) -> None:
        pass


def _live(api: Api, data: dict[str, str], keep: dict[str, Any]) -> None:
    """The Secret as krmfn apply left it, then annotated and given managedFields by other tools."""
    result = Runner(api, Options(namespace="ns", applyset="app"), lambda e: None).run(
        build_plan([secret(data, "data"), keep], namespace="ns", default_timeout=5)
    )
    assert result.ok, result.error
    api.annotate("v1", "Secret", "ns", "s", annotations(data, "data"))
    with api._lock:  # other managers' records, which FakeApi does not keep on its own
        stored = next(obj for key, obj in api._objects.items() if key.kind == "Secret" and key.name == "s")
        stored["metadata"]["managedFields"] = managed_fields(data)


def _outputs(tmp: Path, docs: list[dict[str, Any]]) -> str:
    (tmp / "stream.yaml").write_text("\n---\n".join(json.dumps(d) for d in docs))
    shown = []
    for extra, env in (
        ([], None),
        (["-o", "json"], None),
        ([], f'sh -c \'cat "$0"/* "$1"/* > {tmp}/files 2>/dev/null\''),
    ):
        out, err = io.StringIO(), io.StringIO()
        with (
            pytest.MonkeyPatch.context() as mp,
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
        ):
            if env is not None:
                mp.setenv("KRMFN_DIFF", env)
            code = krmfn_main(
                ["diff", "-f", str(tmp / "stream.yaml"), "-n", "ns", "--applyset", "app", *extra]
            )
        assert code in (0, 1), err.getvalue()
        shown += [out.getvalue(), err.getvalue()]
        if env is not None and (tmp / "files").exists():
            shown.append((tmp / "files").read_text())
            (tmp / "files").unlink()
    return "\n".join(shown)


def _leaks(shown: str, data: dict[str, str]) -> list[str]:
    found = []
    for value in data.values():
        core = value[1:].rstrip(string.whitespace + '"&<>\\\u00e9\u2028\u202e')[:10]
        forms = {core, b64(value), b64(value.rstrip("\n")), b64(value)[:-4], b64(value.rstrip("\n"))[:-4]}
        found += [form for form in forms if len(form) >= 8 and form in shown]
    return found


KEEP = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "keep", "namespace": "ns"},
    "data": {"k": "v"},
}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(old=values, new=values, field=st.sampled_from(["data", "stringData"]),
       scenario=st.sampled_from(["update", "create", "delete"]))  # fmt: skip
def test_no_form_of_a_secret_value_reaches_any_diff_output(
    old: dict[str, str],
    new: dict[str, str],
    field: str,
    scenario: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    tmp = tmp_path_factory.mktemp("diff")
    api = Api("ns")
    with pytest.MonkeyPatch.context() as mp:
        import krmfn.runner.cluster.kube

        mp.setattr(krmfn.runner.cluster.kube, "connect", lambda *a, **k: api)
        if scenario == "create":
            Runner(api, Options(namespace="ns", applyset="app"), lambda e: None).run(
                build_plan([KEEP], namespace="ns", default_timeout=5)
            )
        else:
            _live(api, old, KEEP)
        rendered = secret(new, field, {**annotations(new, field), "rendered.example.com/only": "1"})
        rendered["metadata"]["managedFields"] = managed_fields(new)  # a rendered object may carry anything
        shown = _outputs(tmp, [KEEP] if scenario == "delete" else [rendered, KEEP])
    assert MASK in shown
    assert _leaks(shown, old if scenario != "create" else {}) == [] and _leaks(shown, new) == []


def test_a_kapp_copy_and_a_block_value_without_its_newline_are_masked(tmp_path: Path) -> None:
    """The two cases the outside review found, spelled out."""
    api = Api("ns")
    key = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"
    with pytest.MonkeyPatch.context() as mp:
        import krmfn.runner.cluster.kube

        mp.setattr(krmfn.runner.cluster.kube, "connect", lambda *a, **k: api)
        _live(api, {"tls.key": key}, KEEP)
        api.annotate("v1", "Secret", "ns", "s", {
            "kapp.k14s.io/original": json.dumps(secret({"tls.key": key}, "stringData")),
            "note.example.com/key": key.rstrip("\n"),
        })  # fmt: skip
        shown = _outputs(tmp_path, [secret({"tls.key": key + "x"}, "stringData"), KEEP])
    assert "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" not in shown
    assert "-    kapp.k14s.io/original: '***'" in shown  # its key is shown: which annotation goes
