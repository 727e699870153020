"""The << ... >> expression engine: typing, filters, idempotence and the sandbox."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from krmfn.functions.render_inputs import FUNCTION
from krmfn.functions.render_inputs.engine import Scan, is_expression_source, render
from krmfn.functions.render_inputs.values import RenderError
from krmfn.yaml.io import _load_fast, dump_fast

INPUTS: dict[str, Any] = {
    "tag": "6.7.1",
    "replicas": 3,
    "ratio": 0.5,
    "enabled": True,
    "config": {"logLevel": "info", "features": ["a", "b"]},
    "branch": "Feature/JIRA-12_Fix Login",
    "count": "12",
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<< inputs.tag >>", "6.7.1"),
        ("<< inputs.replicas >>", 3),
        ("<< inputs.ratio >>", 0.5),
        ("<< inputs.enabled >>", True),
        ("<< inputs.config >>", {"logLevel": "info", "features": ["a", "b"]}),
        ("<< inputs.config.features >>", ["a", "b"]),
        ("<< inputs.config['logLevel'] >>", "info"),
        ("<< inputs.config.features[1] >>", "b"),
        ("<< inputs.replicas | quote >>", "3"),
        ("<< inputs.enabled | quote >>", "true"),
        ("<< inputs.count | int >>", 12),
        ("<< 'x7' | int >>", 0),
        ("<< inputs.missing | default('dev') >>", "dev"),
        ("<< inputs.missing | d(2) >>", 2),
        ("<< inputs.branch | slugify >>", "feature-jira-12-fix-login"),
        ("ghcr.io/acme/app:<< inputs.tag >>", "ghcr.io/acme/app:6.7.1"),
        ("db-migration-<< inputs.tag | slugify >>", "db-migration-6-7-1"),
        ("n=<< inputs.replicas >>, on=<< inputs.enabled >>", "n=3, on=true"),
        ("<< inputs.replicas * 2 >>", 6),
        ("<< inputs.tag ~ '-' ~ inputs.replicas >>", "6.7.1-3"),
        ("<< inputs.tag | upper | replace('.', '_') >>", "6_7_1"),
        ("<< inputs.config.features | join(',') >>", "a,b"),
        ("<< inputs.tag | b64enc >>", "Ni43LjE="),
        ("<< inputs.config | toJson >>", '{"features":["a","b"],"logLevel":"info"}'),
        ("<< inputs.config | toYaml >>", "features:\n- a\n- b\nlogLevel: info"),
        (" << inputs.tag >>", " 6.7.1"),
        ("cat <<EOF >> /tmp/log", "cat <<EOF >> /tmp/log"),
        ("cat << EOF >> /tmp/log", "cat << EOF >> /tmp/log"),
        ("cat << 'EOF' >> /tmp/log", "cat << 'EOF' >> /tmp/log"),
        ('cat << "END" >> /tmp/log << inputs.tag >>', 'cat << "END" >> /tmp/log 6.7.1'),
        ("echo $(( 1 << 2 >> 1 )) $(( a << b >> c ))", "echo $(( 1 << 2 >> 1 )) $(( a << b >> c ))"),
        ("<< inputs >>", INPUTS),
        ("<<inputs.tag>>", "<<inputs.tag>>"),
        ("a << b", "a << b"),
        ("<< '<<' ~ ' x' >>", "<< x"),
    ],
)
def test_render(text: str, expected: Any) -> None:
    result = render(text, INPUTS)
    assert result == expected and type(result) is type(expected)


def test_checksum_of_config_is_sha256_of_sorted_yaml() -> None:
    digest = render("<< inputs.config | toYaml | sha256sum >>", INPUTS)
    assert digest == hashlib.sha256(b"features:\n- a\n- b\nlogLevel: info").hexdigest()
    assert render("<< inputs.config | toYaml | sha256sum | quote >>", INPUTS) == digest


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("<< inputs.nope >>", "has no attribute 'nope'"),
        ("<< nope.x >>", "'nope' is undefined"),
        ("<< nope | upper >>", "'nope' is undefined"),
        ("x-<< inputs.config.nope >>", "has no attribute 'nope'"),
        ("<< inputs.tag | nofilter >>", "No filter named 'nofilter'"),
        ("<< inputs.tag + >>", "unexpected"),
        ("<< 1 / 0 >>", "ZeroDivisionError"),
    ],
)
def test_errors(text: str, reason: str) -> None:
    with pytest.raises(RenderError, match=reason):
        render(text, INPUTS)


ESCAPES = [
    "<< ''.__class__.__mro__ >>",
    "<< ''.__class__ >>",
    "<< inputs.__class__ >>",
    "<< inputs.__class__.__init__.__globals__ >>",
    "<< inputs.items() >>",
    "<< inputs.tag.upper() >>",
    "<< inputs.config.features.__len__ >>",
    "<< cycler.__init__.__globals__.os >>",
    "<< lipsum.__globals__['os'].popen('id').read() >>",
    "<< dict(a=1) >>",
    "<< self.__init__ >>",
    "<< self._TemplateReference__context >>",
    "<< range(10**9) >>",
    "<< range(10) >>",
    "<< 'x' * 10**9 >>",
    "<< [0] * 10**8 >>",
    "<< 7 ** 100000 >>",
    "<< (10 ** 100) ** 100 >>",
    "<< '%999999999d' % 1 >>",
    "<< '{:>999999999}'.format(1) >>",
    "<< (inputs.tag * 40000) | replace('', inputs.tag * 40000) >>",
    "<< (inputs.tag * 40000) | join(inputs.tag * 40000) >>",
    "<< inputs.tag | attr('__class__') >>",
    "<< inputs.tag | map('upper') | list >>",
    "<< inputs.tag | format(1) >>",
]


@pytest.mark.parametrize("text", ESCAPES)
def test_sandbox_refuses_escapes(text: str) -> None:
    # No wall-clock assertion (it failed on a loaded machine); tests/robustness/test_robust_templates.py
    # bounds the CPU time of each attempt, bench/hostile.py reports times.
    with pytest.raises(RenderError):
        render(text, INPUTS)


def test_no_files_or_environment_reachable() -> None:
    for name in ("environ", "os", "open", "__import__", "__builtins__", "cycler", "config"):
        with pytest.raises(RenderError, match="is undefined"):
            render(f"<< {name}.x ~ inputs.tag >>", INPUTS)


@pytest.mark.parametrize(
    "word", ["EOF", "'EOF'", '"END"', "2", "0x1f", "n", "cycler", "lipsum", "self", "config", "environ"]
)
def test_a_single_word_number_or_string_is_text_never_evaluated(word: str) -> None:
    # Heredocs and shifts in scripts: `cat << EOF >> log`, `$(( 1 << 2 >> 1 ))`.
    text = f"cat << {word} >> /var/log/x"
    assert not is_expression_source(f" {word} ")
    assert render(text, INPUTS) == text


_REFERENCE = re.compile(r"<<(\s[^\n]*?\s)>>")


@settings(max_examples=400)
@given(st.lists(st.sampled_from(["<", ">", "<<", ">>", " ", "\t", "\n", "\x85", "a", "inputs", "'", "|"])))
def test_the_scan_finds_what_the_reference_expression_finds(parts: list[str]) -> None:
    """The linear scan is the old regular expression, minus single words (heredocs, shifts)."""
    text = "".join(parts)
    expected = [m.span() for m in _REFERENCE.finditer(text) if is_expression_source(m.group(1))]
    assert Scan(text).spans() == expected


@pytest.mark.parametrize(
    "unit",
    ["<< ", "<<  ", "<< a", "<< x\n>> ", "<< <<  >> ", " >><< ", "<< '", "<<\n", "a << b >> "],
)
def test_the_scan_is_linear_in_the_text_length(unit: str) -> None:
    """Counted, not timed: the characters the scan examines grow with the text, not its square.
    (The regular expression it replaces took two minutes on 240 KB of `<< `; bench/hostile.py times
    1 MB.)"""
    for repeat in (1_000, 10_000, 100_000):
        text = unit * repeat
        scan = Scan(text)
        scan.spans()
        assert scan.steps <= 3 * len(text) + 3, (unit, repeat, scan.steps)


def test_block_and_comment_syntax_does_not_exist() -> None:
    assert render("<<% for x in inputs %>>", INPUTS) == "<<% for x in inputs %>>"
    assert render("{% for x in y %}{{ x }}{# c #}", INPUTS) == "{% for x in y %}{{ x }}{# c #}"
    with pytest.raises(RenderError):
        render("<< 1 %>> << 2 >>", INPUTS)


def _run(items: list[dict[str, Any]], inputs: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    rl = {
        "apiVersion": "config.kubernetes.io/v1",
        "kind": "ResourceList",
        "items": items,
        "functionConfig": {
            "apiVersion": "fn.krmfn.dev/v1alpha1",
            "kind": "RenderInputs",
            "metadata": {"name": "r"},
            "inputs": inputs,
        },
    }
    text, code = FUNCTION.process(dump_fast(rl), "fast")
    return code, _load_fast(text)


def test_rendering_rendered_output_changes_nothing() -> None:
    items = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "<< inputs.v >>"}}
    ]
    code, first = _run(items, {"v": "x"})
    code2, second = _run(first["items"], {"v": "changed"})
    assert (code, code2) == (0, 0)
    assert first["items"] == second["items"] == [{**items[0], "data": {"k": "x"}}]


def test_error_names_resource_and_field_path() -> None:
    items = [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "migrate", "namespace": "apps"},
            "spec": {"template": {"spec": {"containers": [{"name": "m", "image": "app:<< inputs.tagg >>"}]}}},
        }
    ]
    code, out = _run(items, {"tag": "1"})
    assert code == 1
    error = out["results"][0]
    assert error["resourceRef"] == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": "migrate",
        "namespace": "apps",
    }
    assert error["field"]["path"] == "spec.template.spec.containers[0].image"
    assert "<< inputs.tagg >>" in error["message"] and "has no attribute 'tagg'" in error["message"]
    assert out["items"][0]["spec"]["template"]["spec"]["containers"][0]["image"] == "app:<< inputs.tagg >>"


def test_jinja2_is_imported_only_when_an_expression_exists() -> None:
    probe = (
        "import sys; from krmfn.functions.render_inputs import FUNCTION; "
        "rl = 'apiVersion: config.kubernetes.io/v1\\nkind: ResourceList\\nitems:\\n"
        "- {apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {k: plain}}\\n'; "
        "FUNCTION.process(rl); print('jinja2' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


BIG = "a" * 200_000
HUGE_INPUTS: dict[str, Any] = {
    "big": BIG,
    "many": [BIG] * 2_000,  # 400 MB once written, one string in memory
    "deep": {"k": [BIG] * 2_000},
    "tag": "1.2.3",
}
FILTER_ARGUMENTS = {
    "trunc": "(5)",
    "replace": "('a', 'bb')",
    "join": "(',')",
    "default": "('x')",
    "d": "('x')",
}


def _bombs() -> list[str]:
    from krmfn.functions.render_inputs.filters import FILTERS

    # Every filter, as the sandbox knows it (a new filter is covered without editing this list).
    bombs = [
        f"<< inputs.{source} | {name}{FILTER_ARGUMENTS.get(name, '')} >>"
        for name in FILTERS
        for source in ("many", "deep")
    ]
    bombs += [
        "<< [inputs.big] * 1000 >>",
        "<< ([inputs.big] * 1000) | toJson >>",
        "<< [[inputs.big] * 1] * 1000 >>",
        "<< inputs.many + inputs.many >>",
        "<< inputs.many ~ '' >>",
        "<< inputs.tag ~ inputs.many >>",
        "<< inputs.big ~ inputs.big >>",
        "<< inputs.big + inputs.big >>",
        "<< inputs.many[1:] >>",
        "<< inputs.big * 2 >>",
        "x-<< inputs.many >>",
        "<< inputs.big | b64enc | b64enc >>",
        "<< inputs.big | replace('a', inputs.big) >>",
        "<< inputs.many | join(inputs.big) >>",
        "<< inputs.deep | toYaml | sha256sum >>",
        "<< " + " ~ ".join(["inputs.big"] * 40) + " >>",
    ]
    return bombs


@pytest.mark.parametrize("text", _bombs())
def test_no_filter_or_operator_builds_a_huge_value_before_refusing_it(text: str) -> None:
    """Each is refused (or gives a small value), having allocated a few MB at most: sizes are checked
    before values are built. (The inputs' own 200 KB are allocated before tracing starts.)"""
    import tracemalloc

    from krmfn.functions.render_inputs.values import MAX_STRING, size_of

    render("<< inputs.tag >>", INPUTS)  # Jinja imported and set up outside the measure
    tracemalloc.start()
    try:
        try:
            value = render(text, HUGE_INPUTS)
        except RenderError:
            value = None
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert value is None or size_of(value) <= MAX_STRING, text
    assert peak < 8 * MAX_STRING, f"{text}: peak {peak / 1e6:.1f} MB"


@pytest.mark.parametrize(
    ("text", "inputs"),
    [
        ("<< inputs.open ~ ' inputs.x ' ~ inputs.close >>", {"open": "<<", "close": ">>", "x": 1}),
        ("<< inputs.open >> inputs.x >>", {"open": "<<", "x": 1}),
        ("pre << inputs.open >> inputs.x >> post", {"open": "<<", "x": 1}),
        ("<< inputs.parts | join(' ') >>", {"parts": ["<<", "inputs.x", ">>"], "x": 1}),
        ("<< inputs.parts >>", {"parts": ["a", "<< inputs.x >>"], "x": 1}),
        ("<< inputs.a ~ inputs.b >>", {"a": "<< inpu", "b": "ts.x >>", "x": 1}),
    ],
)
def test_a_result_never_holds_an_expression_assembled_from_inputs(text: str, inputs: dict[str, Any]) -> None:
    with pytest.raises(RenderError, match="the result holds a << >> expression"):
        render(text, inputs)


def test_concatenation_writes_values_as_they_read_in_strings() -> None:
    # Jinja's own `~` wrote Python's repr: True, None, ['a'].
    assert render("<< inputs.tag ~ [1, true, none] ~ true ~ none >>", INPUTS) == "6.7.1[1,true,null]true"


@pytest.mark.parametrize(
    "text",
    [
        "<< " + "+".join(["1"] * 300) + " ~ inputs.tag >>",
        "<< " + "not " * 240 + "inputs.tag >>",
        "<< " + "(" * 300 + "inputs.tag" + ")" * 300 + " >>",
        "<< " + "[" * 300 + "inputs.tag" + "]" * 300 + " >>",
        "<< " + "-" * 900 + "inputs.replicas >>",
        "<< (2 ** 62) * 8 >>",
        "<< inputs.replicas * 9223372036854775807 * 4 >>",
    ],
)
def test_expressions_past_pythons_limits_are_clean_errors(text: str) -> None:
    # A long `1+1+...` was a SyntaxError from Python's compiler, an internal error.
    with pytest.raises(RenderError):
        render(text, INPUTS)


SECRET_CANARY = "CANARYsecretTok"
FAILING_IN_SECRETS = [
    "<< inputs.CANARY >>",
    "<< CANARY.x >>",
    "<< inputs.tag | CANARY >>",
    "<< inputs.tag | CANARY(1) >>",
    "<< 'CANARY' + 1 >>",
    "<< 'CANARY' ~ >>",
    "<< 'CANARY' * 100000 >>",
    "<< inputs.CANARY() >>",
    "<< inputs.tag[CANARY] >>",
    "<< {'CANARY': 1}.x.y >>",
    "<< 'CANARY' | int(inputs.CANARY) >>",
    "<< inputs.open ~ ' inputs.CANARY ' ~ inputs.close >>",
    "<< 1 / 0 if 'CANARY' else 2 >>",
    "prefix-CANARY-<< inputs.missing >>",
    "<< " + "(" * 300 + "'CANARY'" + ")" * 300 + " >>",
]


def _secret_run(values: list[str], config: dict[str, Any]) -> tuple[int, dict[str, Any], str]:
    import io

    from krmfn.yaml.io import dump_fast

    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "creds", "labels": {"tag": "<< inputs.tag >>"}},
        "stringData": {f"k{i}": v.replace("CANARY", SECRET_CANARY) for i, v in enumerate(values)},
        "data": {"token": "<< inputs.tag | b64enc >>"},
    }
    rl = {
        "apiVersion": "config.kubernetes.io/v1",
        "kind": "ResourceList",
        "items": [secret],
        "functionConfig": {
            "apiVersion": "fn.krmfn.dev/v1alpha1",
            "kind": "RenderInputs",
            "metadata": {"name": "r"},
            "inputs": {"tag": "1.2", "open": "<<", "close": ">>"},
            **config,
        },
    }
    stdout, stderr = io.StringIO(), io.StringIO()
    code = FUNCTION.main([], io.StringIO(dump_fast(rl)), stdout, stderr)
    return code, _load_fast(stdout.getvalue()), stderr.getvalue()


def test_secret_payloads_are_not_rendered_unless_the_config_opts_in() -> None:
    code, out, stderr = _secret_run(["<< inputs.tag >>", "cat << EOF >> /etc/x"], {})
    secret = out["items"][0]
    assert code == 0
    assert secret["metadata"]["labels"] == {"tag": "1.2"}  # the rest of a Secret is rendered
    assert secret["stringData"] == {"k0": "<< inputs.tag >>", "k1": "cat << EOF >> /etc/x"}
    assert secret["data"] == {"token": "<< inputs.tag | b64enc >>"}
    (warning,) = [r for r in out["results"] if r["severity"] == "warning"]
    assert warning["field"]["path"] == "data.token" and "renderSecrets: true" in warning["message"]
    assert warning["message"].startswith("2 << >> expression(s) in the Secret's payload left unrendered")
    assert "inputs.tag" not in warning["message"] + stderr

    code, out, _ = _secret_run(["<< inputs.tag >>", "cat << EOF >> /etc/x"], {"renderSecrets": True})
    assert code == 0
    assert out["items"][0]["stringData"] == {"k0": "1.2", "k1": "cat << EOF >> /etc/x"}
    assert out["items"][0]["data"] == {"token": "MS4y"}


@pytest.mark.parametrize("value", FAILING_IN_SECRETS)
def test_no_error_quotes_a_secrets_value(value: str) -> None:
    code, out, stderr = _secret_run([value], {"renderSecrets": True})
    assert code == 1
    errors = [r for r in out["results"] if r["severity"] == "error"]
    assert [r["field"]["path"] for r in errors] == ["stringData.k0"]
    assert "a Secret's value is never quoted" in errors[0]["message"]
    for text in (str(out["results"]), stderr):
        assert SECRET_CANARY not in text and "inputs." not in text, text
    assert out["items"][0]["stringData"]["k0"] == value.replace("CANARY", SECRET_CANARY)


def test_inputs_configmap_values_must_be_strings() -> None:
    inputs_cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "in", "annotations": {"config.kubernetes.io/local-config": "true"}},
        "data": {"n": 3, "on": True, "list": ["a"], "none": None, "ok": "x"},
    }
    target = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "t"},
        "data": {"k": "<< inputs.ok >>"},
    }
    rl = {
        "apiVersion": "config.kubernetes.io/v1",
        "kind": "ResourceList",
        "items": [inputs_cm, target],
        "functionConfig": {
            "apiVersion": "fn.krmfn.dev/v1alpha1",
            "kind": "RenderInputs",
            "metadata": {"name": "r"},
            "inputsFrom": [{"name": "in"}],
        },
    }
    text, code = FUNCTION.process(dump_fast(rl), "fast")
    out = _load_fast(text)
    errors = [
        (r["resourceRef"]["name"], r["field"]["path"]) for r in out["results"] if r["severity"] == "error"
    ]
    assert code == 1
    assert errors == [("in", "data.n"), ("in", "data.on"), ("in", "data.list"), ("in", "data.none")]
    assert out["items"][1]["data"] == {"k": "<< inputs.ok >>"}  # nothing rendered from a bad source
    # The ConfigMap form of the functionConfig (`kpt fn eval -- tag=1`) holds strings the same way.
    rl["functionConfig"] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "f"},
        "data": {"ok": 1},
    }
    text, code = FUNCTION.process(dump_fast(rl), "fast")
    assert code == 1 and "functionConfig.data.ok" in text
