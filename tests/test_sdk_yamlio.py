"""The two YAML paths: scalar typing, safety checks and fidelity."""

from __future__ import annotations

from typing import Any

import pytest

from krmfn.errors import DuplicateKeyError, LimitExceededError, YAMLSyntaxError
from krmfn.limits import Limits
from krmfn.yaml.io import dump, dump_fast, load, plain

MODES = ["fast", "fidelity"]
BOMB = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("v: yes", "yes"),
        ("v: on", "on"),
        ("v: 2024-01-01", "2024-01-01"),
        ("v: 1_000", 1000),
        ("v: true", True),
        ("v: ~", None),
        ("v: 42", 42),
        ("v: 0x1f", 31),
        ("v: 1.5", 1.5),
    ],
    ids=[
        "yes-stays-string",
        "on-stays-string",
        "date-stays-string",
        "underscore-int-as-go-yaml-reads-it",
        "true-is-bool",
        "tilde-is-null",
        "decimal-int",
        "hex-int",
        "float",
    ],
)
def test_scalars_follow_yaml_1_2_core_schema(mode: str, text: str, expected: object) -> None:
    assert plain(load(text, mode, Limits()))["v"] == expected  # type: ignore[arg-type]


def test_leading_zero_int_is_octal_as_kubernetes_reads_it() -> None:
    assert load("defaultMode: 0644", "fast", Limits())["defaultMode"] == 0o644


@pytest.mark.parametrize("value", ["yes", "on", "2024-01-01", "0755", "true", "null", "1e3", "1_000", "0o17"])
def test_fast_dump_quotes_strings_a_yaml_1_1_reader_would_misread(value: str) -> None:
    text = dump_fast({"v": value})
    assert text.strip() in (f"v: '{value}'", f'v: "{value}"')


def test_multiline_strings_dump_as_literal_blocks() -> None:
    assert dump_fast({"script": "set -e\nmigrate up\n"}) == "script: |\n  set -e\n  migrate up\n"


@pytest.mark.parametrize("mode", MODES)
def test_duplicate_keys_are_errors_with_a_line_number(mode: str) -> None:
    with pytest.raises(DuplicateKeyError, match="line 3"):
        load("a: 1\nb: 2\na: 3\n", mode, Limits())


def test_merge_keys_are_not_duplicates() -> None:
    doc = load("base: &b {x: 1, y: 2}\nderived:\n  <<: *b\n  y: 3\n", "fast", Limits())
    assert doc["derived"] == {"x": 1, "y": 3}


@pytest.mark.parametrize("mode", MODES)
def test_billion_laughs_is_refused_quickly(mode: str) -> None:
    with pytest.raises(LimitExceededError, match="KRMFN_MAX_NODES"):
        load(BOMB, mode, Limits(max_nodes=1_000_000))


def test_recursive_alias_is_refused() -> None:
    with pytest.raises(LimitExceededError, match="recursive"):
        load("a: &a [*a]", "fast", Limits())


def test_recursive_alias_on_the_fidelity_path_stays_finite() -> None:
    assert plain(load("a: &a [*a]", "fidelity", Limits())) == {"a": [None]}


@pytest.mark.parametrize("mode", MODES)
def test_depth_limit(mode: str) -> None:
    deep = "v: " + "[" * 30 + "]" * 30
    with pytest.raises(LimitExceededError, match="KRMFN_MAX_DEPTH"):
        load(deep, mode, Limits(max_depth=20))
    assert load(deep, mode, Limits(max_depth=40))


def test_size_limit() -> None:
    with pytest.raises(LimitExceededError, match="KRMFN_MAX_INPUT_BYTES"):
        load("a: " + "x" * 100, "fast", Limits(max_bytes=50))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("text", ["a: [", "a: b: c", "- a\nb: c", "a: 'unterminated"])
def test_malformed_yaml_is_a_syntax_error_with_position(mode: str, text: str) -> None:
    with pytest.raises(YAMLSyntaxError, match=r"line \d+"):
        load(text, mode, Limits())


def test_fidelity_path_keeps_comments_quotes_and_flow_style() -> None:
    text = "a: 'single' # note\nb: \"double\"\nc: [1, 2]\nd:\n- x\n"
    doc = load(text, "fidelity", Limits())
    doc["e"] = "new"
    assert dump(doc, "fidelity") == text + "e: new\n"


def test_limits_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KRMFN_MAX_ITEMS", "7")
    assert Limits.from_env().max_items == 7
    monkeypatch.setenv("KRMFN_MAX_ITEMS", "lots")
    with pytest.raises(LimitExceededError, match="KRMFN_MAX_ITEMS"):
        Limits.from_env()


@pytest.mark.parametrize("mode", MODES)
def test_leading_zero_octal_reads_the_same_on_both_paths(mode: str) -> None:
    assert plain(load("a: 0644\nb: -0755\nc: 08\nd: 0\n", mode, Limits())) == {
        "a": 420,
        "b": -493,
        "c": 8,
        "d": 0,
    }


def test_fidelity_path_writes_octal_back_as_written() -> None:
    text = "defaultMode: 0644\n"
    assert dump(load(text, "fidelity", Limits()), "fidelity") == text


def test_comments_heading_resource_list_items_stay_after_the_dash() -> None:
    # kpt sends a file's leading comment this way; moving it above the dash leaks it into the previous file.
    text = (
        "items:\n- # first\n  apiVersion: v1\n  kind: A\n- # second\n  # more\n  apiVersion: v1\n  kind: B\n"
        "  metadata:\n    name: b # trailing\n"
    )
    doc = load(text, "fidelity", Limits())
    assert dump(doc, "fidelity") == text
    assert dump(doc, "fidelity") == text, "dumping must not change the loaded document"


class _Interrupted(BaseException):
    """Stands for what stops a dump part-way: a signal (the fuzz time bound), MemoryError, a bug."""


def test_a_fidelity_dump_that_fails_part_way_leaves_the_next_dump_intact(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The fuzz found it: a dump interrupted by its time bound broke every later fidelity dump of the
    # process (`expected NodeEvent, but got DocumentStartEvent()`, or silently empty output).
    from krmfn.yaml import rt as yamlrt

    doc = load("a: [1, {b: c}]\nd: 0644\n", "fidelity", Limits())
    expected = dump(doc, "fidelity")
    original = yamlrt._Emitter.choose_scalar_style
    for failure in (_Interrupted, RuntimeError):
        calls = 0

        def failing(self: object, failure: type[BaseException] = failure) -> object:
            nonlocal calls
            calls += 1
            if calls == 3:
                raise failure("stopped part-way")
            return original(self)  # type: ignore[arg-type]

        monkeypatch.setattr(yamlrt._Emitter, "choose_scalar_style", failing)
        with pytest.raises(failure):
            dump(doc, "fidelity")
        monkeypatch.undo()
        assert dump(doc, "fidelity") == expected
    with pytest.raises(Exception, match="cannot represent"):
        dump({"a": [1, {"b": object()}]}, "fidelity")
    assert dump(doc, "fidelity") == expected
    assert plain(load(expected, "fidelity", Limits())) == {"a": [1, {"b": "c"}], "d": 0o644}


def test_a_function_whose_output_cannot_be_written_reports_an_error_and_never_raises() -> None:
    from krmfn.sdk.function import process_text

    def poison(rl: Any) -> None:
        rl.items[0]["data"] = {"k": object()}

    text = (
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n"
        "items:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n"
    )
    for mode in MODES:
        outcome = process_text(text, poison, mode)
        assert outcome.code == 1 and "internal error" in outcome.text, outcome.text
        assert "ConfigMap" not in outcome.text  # nothing partial


CANARY = "CANARYtagvalue51"
TAGGED = ["int", "float", "bool", "binary"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("tag", TAGGED)
def test_a_value_its_tag_cannot_hold_is_reported_by_tag_and_position_never_value(mode: str, tag: str) -> None:
    # The value may be a Secret's: `password: !!int hunter2` must not print hunter2.
    text = f"kind: Secret\nstringData:\n  password: !!{tag} {CANARY}x\n"
    with pytest.raises(YAMLSyntaxError) as caught:
        load(text, mode, Limits())  # type: ignore[arg-type]
    assert str(caught.value) == f"the value is not a valid !!{tag} at line 3, column 13"
    assert CANARY not in str(caught.value)


@pytest.mark.parametrize("mode", MODES)
def test_an_explicit_timestamp_keeps_its_text_on_both_paths(mode: str) -> None:
    doc = load(f"a: !!timestamp 2024-01-01\nb: !!timestamp {CANARY}\n", mode, Limits())  # type: ignore[arg-type]
    assert plain(doc) == {"a": "2024-01-01", "b": CANARY}


INTS_OUT_OF_RANGE = [
    "9" * 4000,
    "-" + "9" * 4000,
    "0x" + "f" * 4000,
    "0o" + "7" * 4000,
    "0b" + "1" * 65,
    "1_" * 3000 + "1",
    "18446744073709551616",
    "-9223372036854775809",
    "!!int " + "9" * 5000,
]
INTS_IN_RANGE = {
    "18446744073709551615": 2**64 - 1,
    "-9223372036854775808": -(2**63),
    "0" * 5000 + "7": 7,
    "0x" + "0" * 100 + "ff": 255,
    "0b" + "1" * 64: 2**64 - 1,
}


@pytest.mark.parametrize("mode", MODES)
def test_integers_are_capped_at_parse_time_to_go_yamls_64_bits(mode: str) -> None:
    for text in INTS_OUT_OF_RANGE:
        with pytest.raises(YAMLSyntaxError, match=r"^an integer out of the 64-bit range .* line 2, column 4"):
            load(f"a: 1\nb: {text}\n", mode, Limits())  # type: ignore[arg-type]
    for text, value in INTS_IN_RANGE.items():
        assert load(f"b: {text}\n", mode, Limits())["b"] == value  # type: ignore[arg-type]


def test_an_interrupted_round_trip_dump_does_not_break_later_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    """ruamel keeps its emitter's state on the shared instance: a dump stopped half-way (an error, a
    signal such as a time bound) made every later dump in the process fail."""
    from ruamel.yaml.emitter import Emitter

    from krmfn.yaml import rt as yamlrt

    doc = yamlrt.load("a: 1\nb: [x, y]\nc: {d: e}\n")
    expect_node, calls = Emitter.expect_node, [0]

    def interrupt(self: Emitter, *args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == 3:
            raise KeyboardInterrupt
        return expect_node(self, *args, **kwargs)

    monkeypatch.setattr(Emitter, "expect_node", interrupt)
    with pytest.raises(KeyboardInterrupt):
        yamlrt.dump(doc)
    monkeypatch.setattr(Emitter, "expect_node", expect_node)
    assert yamlrt.dump(doc) == "a: 1\nb: [x, y]\nc: {d: e}\n"
