"""A document the faithful writer cannot edit is written anew, and that is never silent (issue 30).

render-inputs renders mapping keys, so an input can make a key only YAML's explicit ``? key`` form
holds (over 1,000 characters), which the splicer does not write: that object is written whole by the
fast dumper. Each path says so, naming the object and why: a warning result in the ResourceList (which
kpt prints), a line on stderr for a plain stream and for ``krmfn render``; the other objects keep their
text byte for byte.
"""

from __future__ import annotations

import io
from pathlib import Path

from krmfn.functions.render_inputs import FUNCTION as RENDER_INPUTS
from krmfn.render import main as render_main
from krmfn.yaml.io import _load_fast

LONG = "k" * 1001
WHY = "written anew, its comments and styles lost: a key that needs an explicit-key entry"
OBJECTS = """\
- # the first, rendered
  apiVersion: v1
  kind: ConfigMap  # kept? no: written anew
  metadata:
    name: a
    annotations:
      config.kubernetes.io/path: 'a.yaml'
  data:
    << inputs.key >>: x
- # the second, untouched
  apiVersion: v1
  kind: ConfigMap  # kept
  metadata: {name: b}
  data: {k: "v"}
"""
CONFIG = (
    f"functionConfig:\n  apiVersion: fn.krmfn.dev/v1alpha1\n  kind: RenderInputs\n  inputs: {{key: {LONG}}}\n"
)


def test_a_resource_list_carries_a_warning_naming_the_object() -> None:
    text = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n" + OBJECTS + CONFIG
    out, code = RENDER_INPUTS.process(text)
    assert code == 0
    warnings = [r for r in _load_fast(out)["results"] if r["severity"] == "warning"]
    assert warnings == [
        {
            "message": WHY,
            "severity": "warning",
            "resourceRef": {"apiVersion": "v1", "kind": "ConfigMap", "name": "a"},
            "file": {"path": "a.yaml"},
        }
    ]
    assert "- # the second, untouched\n  apiVersion: v1\n  kind: ConfigMap  # kept\n" in out
    assert '  metadata: {name: b}\n  data: {k: "v"}\n' in out
    assert "- # the first, rendered\n" in out and f"? {LONG}" in out


def test_a_stream_warns_on_stderr(tmp_path: Path) -> None:
    stream = OBJECTS.replace("\n  ", "\n").replace("- # the second", "---\n# the second")[2:]
    config = tmp_path / "fn-config.yaml"
    config.write_text(CONFIG.replace("functionConfig:\n", "").replace("\n  ", "\n").lstrip())
    stdout, stderr = io.StringIO(), io.StringIO()
    code = RENDER_INPUTS.main(["--fn-config", str(config)], io.StringIO(stream), stdout, stderr)
    assert code == 0
    assert stderr.getvalue() == f"krmfn-render-inputs: warning: ConfigMap a: {WHY}\n"
    assert "# the second, untouched\napiVersion: v1\nkind: ConfigMap  # kept\n" in stdout.getvalue()


def test_krmfn_render_warns_on_stderr_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "Kptfile").write_text(
        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\npipeline:\n  mutators:\n"
        f"  - exec: krmfn-render-inputs\n    configMap:\n      key: {LONG}\n"
    )
    (tmp_path / "a.yaml").write_text(
        "# the first\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  << inputs.key >>: x\n"
    )
    untouched = '# the second\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata: {k: "v"}\n'
    (tmp_path / "b.yaml").write_text(untouched)
    for args in ([], ["--in-place"]):
        out, err = io.StringIO(), io.StringIO()
        assert render_main(["render", str(tmp_path), *args], stdout=out, stderr=err) == 0
        assert err.getvalue() == f"krmfn render: warning: {'a.yaml: ' if args else ''}ConfigMap a: {WHY}\n"
        assert (tmp_path / "b.yaml").read_text() == untouched
