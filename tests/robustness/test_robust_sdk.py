"""Regression tests for SDK bugs the robustness suite found."""

from __future__ import annotations

import json
import time
import warnings

import pytest

from krmfn.errors import DuplicateKeyError, LimitExceededError, YAMLSyntaxError
from krmfn.limits import Limits
from krmfn.yaml.io import Mode, dump, load, plain
from robustness.fuzzing import PARSER


@pytest.mark.parametrize(
    "text", ["x: -1.879604605013197e+16\n", "x: 123456789.123456789\n", "x: 0.30000000000000004\n"]
)
def test_fidelity_path_never_changes_an_untouched_float(text: str) -> None:
    # ruamel truncated the mantissa when re-creating the text: -1.879604605013197e+16 came back ...196e+16.
    doc = load(text, "fidelity", Limits())
    again = load(dump(doc, "fidelity"), "fidelity", Limits())
    assert float(again["x"]) == float(doc["x"]) == float(load(text, "fast", Limits())["x"])


def test_fidelity_path_keeps_the_text_of_ordinary_floats() -> None:
    text = "a: 0.1\nb: 3.0e+5\nc: 1.\nd: .5\ne: -.inf\n"
    assert dump(load(text, "fidelity", Limits()), "fidelity") == text


@pytest.mark.parametrize(
    "nest", ["[" * 1000 + "]" * 1000, "[a, " * 1000 + "1" + "]" * 1000, "[{a: " * 600 + "1" + "}]" * 600]
)
def test_deep_flow_nesting_is_refused_fast_on_the_fidelity_path(nest: str) -> None:
    # ruamel's scanner is quadratic in flow depth: 1000 brackets took 1.5 s, 100 000 took 3 s.
    text = f"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nfunctionConfig: {nest}\n"
    started = time.process_time()  # CPU of this process: a busy machine's wait is not counted
    with pytest.raises(LimitExceededError, match="KRMFN_MAX_DEPTH"):
        load(text, "fidelity", Limits())
    assert time.process_time() - started < 0.2


@pytest.mark.parametrize("mode", ["fast", "fidelity"])
def test_depth_at_the_limit_is_still_accepted_on_both_paths(mode: Mode) -> None:
    nest = "[" * 100 + "]" * 100  # the innermost list is empty, so the height is 99
    assert load(f"x: {nest}\n", mode, Limits())["x"] == load(f"x: {nest}\n", "fast", Limits())["x"]


@pytest.mark.parametrize("mode", ["fast", "fidelity"])
def test_non_utf8_input_names_the_byte_and_its_position(mode: Mode) -> None:
    raw = b'apiVersion: v1\nkind: ResourceList\nitems:\n- name: "a\xff"\n'
    text = raw.decode("utf-8", "surrogateescape")  # how Python reads such bytes on stdin
    with pytest.raises(YAMLSyntaxError, match=r"not valid UTF-8: byte 0xff at line 4, column 11"):
        load(text, mode, Limits())


@pytest.mark.parametrize("metadata", ["5", "[a]", "x", "null"])
def test_an_item_whose_metadata_is_not_a_mapping_is_an_error_result(metadata: str) -> None:
    # ref_of() called .get() on the value while describing the item: an AttributeError traceback.
    text = (
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
        f"- {{apiVersion: v1, kind: ConfigMap, metadata: {metadata}}}\n"
    )
    out, code = PARSER.process(text)
    assert code == 1
    assert "items[0] (ConfigMap" in out
    assert "metadata is required and must be a mapping" in out


def test_fidelity_path_writes_no_warning_that_quotes_the_input() -> None:
    # ruamel's ReusedAnchorWarning printed the input lines around the anchor (a Secret value) on stderr.
    text = "a: &x CANARY-one\nb: &x CANARY-two\nc: *x\n"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        doc = load(text, "fidelity", Limits())
    assert doc["c"] == "CANARY-two"
    assert not caught


@pytest.mark.parametrize(
    ("mode", "value"),
    [
        ("fast", "!!binary aGVsbG8="),
        ("fidelity", "!!binary aGVsbG8="),
        ("fast", "!!set {b, a}"),
        ("fidelity", "!!set {b, a}"),
        ("fidelity", "!custom x"),
    ],
)
def test_plain_turns_tagged_values_into_json_data(mode: Mode, value: str) -> None:
    # set-config-checksum hashed plain(data) with json: bytes, sets and ruamel's TaggedScalar were
    # "internal error: TypeError: Object of type ... is not JSON serializable".
    found = plain(load(f"k: {value}\n", mode, Limits()))
    assert json.loads(json.dumps(found)) == found


def test_tagged_binary_secret_data_hashes_like_its_text() -> None:
    from krmfn.functions.set_config_checksum import FUNCTION

    def checksum(data: str) -> str:
        text = (
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
            f"- {{apiVersion: v1, kind: Secret, metadata: {{name: s}}, data: {{k: {data}}}}}\n"
            "- {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: "
            "[{name: c, image: i, envFrom: [{secretRef: {name: s}}]}]}}\n"
        )
        out, code = FUNCTION.process(text)
        assert code == 0, out
        return out.split("krmfn.dev/config-checksum: ")[1].split()[0]

    assert checksum("!!binary aGVsbG8=") == checksum("aGVsbG8=")


@pytest.mark.parametrize("value", [":8080", "?x", "::a", ":-", "a:?"])
def test_fidelity_path_quotes_flow_scalars_go_yaml_cannot_read(value: str) -> None:
    # ruamel wrote {port: :8080}, which kpt (go-yaml) and libyaml refuse: "did not find expected node".
    doc = load("m: {port: x, other: 1}\ns: [x, 1]\nblock: :keep\n", "fidelity", Limits())
    doc["m"]["port"] = value
    doc["s"][0] = value
    text = dump(doc, "fidelity")
    again = load(text, "fast", Limits())
    assert (again["m"]["port"], again["s"][0], again["block"]) == (value, value, ":keep")
    assert "block: :keep\n" in text  # block context needs no quotes: untouched text stays as it was


def test_a_duplicate_key_holding_an_alias_bomb_is_described_quickly() -> None:
    # ruamel str()ed the duplicate's value to quote it: 16 s and 3.5 GB for a 6 KB input (atheris found it).
    levels = ["  l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    levels += [f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 7)]
    bomb = "bomb:\n" + "\n".join(levels) + "\n"
    started = time.process_time()  # CPU of this process: a busy machine's wait is not counted
    with pytest.raises(DuplicateKeyError, match=r"duplicate key 'bomb' at line 9, column 1"):
        load(bomb + "bomb: *l6\n", "fidelity", Limits())
    assert time.process_time() - started < 1
