"""The ResourceSet export agrees with the operator: its CRD's limits, and its Go templating."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from e2e import resourceset_crd

from krmfn.export import resourceset
from krmfn.k8s.step_grouping import Step

# What the operator does to every embedded resource (internal/builder/resourceset.go, BuildResource):
# the object is written as YAML, then run through text/template with the delimiters << and >>.
GO_TEMPLATE = """
package main

import (
	"encoding/json"
	"os"
	"strings"
	"text/template"
)

func main() {
	var docs []string
	if err := json.NewDecoder(os.Stdin).Decode(&docs); err != nil {
		panic(err)
	}
	out := []map[string]string{}
	for _, doc := range docs {
		tp, err := template.New("resourceset").Delims("<<", ">>").Option("missingkey=error").
			Funcs(template.FuncMap{"inputs": func() any { return nil }}).Parse(doc)
		if err != nil {
			out = append(out, map[string]string{"error": err.Error()})
			continue
		}
		b := &strings.Builder{}
		if err := tp.Execute(b, nil); err != nil {
			out = append(out, map[string]string{"error": err.Error()})
			continue
		}
		out = append(out, map[string]string{"text": b.String()})
	}
	json.NewEncoder(os.Stdout).Encode(out)
}
"""

TRICKY = [
    "cat <<EOF > /tmp/urls\n/healthz\nEOF\n",
    "<<<",
    "<<>>",
    "a <<- b",
    "x<<-y >> z",
    "<< inputs.tag >>",
    "`<<`",
    "echo 'quoted <<' \"and <<\" \\ back",
    "long line " * 12 + "<< in the middle of a folded scalar " * 3,
]
# Go's YAML writer is a port of libyaml, like PyYAML's, and may pick any scalar style.
STYLES = [None, '"', "'", "|"]


def _spec_schema() -> dict[str, Any]:
    docs = [d for d in yaml.safe_load_all(resourceset_crd().read_text()) if d]
    [version] = docs[0]["spec"]["versions"]
    spec: dict[str, Any] = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    return spec


def test_step_limit_is_the_crds_max_items() -> None:
    assert _spec_schema()["properties"]["steps"]["maxItems"] == resourceset.MAX_STEPS == 20


def test_timeout_and_step_name_patterns_are_the_crds() -> None:
    step = _spec_schema()["properties"]["steps"]["items"]["properties"]
    assert step["timeout"]["pattern"] == resourceset._TIMEOUT.pattern
    assert step["name"]["pattern"] == resourceset._DNS_LABEL.pattern
    assert step["name"]["maxLength"] == 63


def test_literal_delimiters_survive_the_operators_go_templating(tmp_path: Path) -> None:
    go = shutil.which("go") or "/usr/local/go/bin/go"
    program = tmp_path / "main.go"
    program.write_text(GO_TEMPLATE)
    cases = [(text, style) for text in TRICKY for style in STYLES]
    docs = [
        yaml.safe_dump({"data": {"v": resourceset.escape_templates(text)}}, default_style=style, width=40)
        for text, style in cases
    ]
    # Not escaped, the heredoc is a template syntax error for the operator: the reason to escape.
    docs.append(yaml.safe_dump({"data": {"v": TRICKY[0]}}))
    run = subprocess.run(
        [go, "run", str(program)], input=json.dumps(docs), capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stderr
    *results, unescaped = json.loads(run.stdout)
    assert unescaped["error"] == 'template: resourceset:2: function "EOF" not defined'
    assert len(results) == len(cases)
    for (text, style), result in zip(cases, results, strict=True):
        assert "error" not in result, f"{text!r} in style {style!r}: {result['error']}"
        assert yaml.safe_load(result["text"]) == {"data": {"v": text}}, f"{text!r} in style {style!r}"


def test_escaping_reaches_keys_and_nested_values_and_leaves_other_scalars() -> None:
    escaped = resourceset.escape_templates({"cat <<EOF": ["<<", {"k": "v<<"}], "n": 1, "b": True})
    assert escaped == {"cat <<`<<`>>EOF": ["<<`<<`>>", {"k": "v<<`<<`>>"}], "n": 1, "b": True}


@pytest.mark.parametrize(
    ("written", "exported"),
    [("5m0s", "5m0s"), ("90s", "90s"), ("1500us", "1.5ms"), ("2h", "2h")],
    ids=["go-string-form-kept", "seconds-kept", "microseconds-rewritten-as-ms", "hours-kept"],
)
def test_step_timeout_is_written_in_the_crds_units(written: str, exported: str) -> None:
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}
    step = Step(0, "only", written, [configmap])
    assert resourceset._step(step)["timeout"] == exported
