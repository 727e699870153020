"""krmfn.steps: the one grouping of a rendered stream into steps, under the runner's and export's rules.

Each case lists objects as ``(name, annotations)`` and the expected grouping as
``[(step-index, name, timeout, [object names])]`` plus the final step's wait, or the exact error.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from krmfn import steps
from krmfn.errors import InputError, KrmfnError
from krmfn.steps import EXPORT, RUNNER, Rules

IDX, NAME, TIMEOUT, WAIT = steps.STEP_INDEX, steps.STEP, steps.STEP_TIMEOUT, steps.WAIT
Group = list[tuple[int | None, str, str | None, list[str]]]


def cm(name: str, **annotations: Any) -> dict[str, Any]:
    """A ConfigMap; keyword names are the annotation keys after ``krmfn.dev/`` (``_`` for ``-``)."""
    notes = {f"krmfn.dev/{k.replace('_', '-')}": v for k, v in annotations.items()}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "annotations": notes}}


def summary(found: steps.Steps) -> tuple[Group, bool]:
    shape = [(s.index, s.name, s.timeout, [o["metadata"]["name"] for o in s.items]) for s in found.steps]
    return shape, found.wait


# Where the runner and export read a stream alike.
SHARED = [
    pytest.param(
        [cm("c", step_index="10"), cm("b", step_index="2"), cm("a", step_index="0")],
        ([(0, "step-0", None, ["a"]), (2, "step-2", None, ["b"]), (10, "step-10", None, ["c"])], False),
        id="one-step-per-index-in-numeric-order-gaps-kept",
    ),
    pytest.param(
        [cm("late", step_index="0"), cm("loose")],
        ([(None, "default", None, ["loose"]), (0, "step-0", None, ["late"])], False),
        id="objects-without-an-index-form-a-first-default-step",
    ),
    pytest.param(
        [cm("z", step_index="1"), cm("a", step_index="1"), cm("m", step_index="1")],
        ([(1, "step-1", None, ["z", "a", "m"])], False),
        id="objects-keep-stream-order-within-a-step",
    ),
    pytest.param(
        [cm("a", step_index="0", step="migrate"), cm("b", step_index="0")],
        ([(0, "migrate", None, ["a", "b"])], False),
        id="step-name-from-any-of-its-objects",
    ),
    pytest.param(
        [cm("a", step_index=3)],
        ([(3, "step-3", None, ["a"])], False),
        id="index-loaded-as-a-yaml-int",
    ),
    pytest.param(
        [cm("a", step_index="0", step_timeout="1m"), cm("b", step_index="0", step_timeout="90s")],
        ([(0, "step-0", "90s", ["a", "b"])], False),
        id="longest-timeout-wins-as-written",
    ),
    pytest.param(
        [cm("a", step_index="0", step_timeout="60s"), cm("b", step_index="0", step_timeout="1m")],
        ([(0, "step-0", "60s", ["a", "b"])], False),
        id="equal-timeouts-keep-the-first-spelling",
    ),
    pytest.param(
        [cm("a", step_index="0", wait="true"), cm("b", step_index="1")],
        ([(0, "step-0", None, ["a"]), (1, "step-1", None, ["b"])], False),
        id="wait-on-an-earlier-step-does-not-count",
    ),
    pytest.param(
        [cm("a", step_index="0"), cm("b", step_index="1"), cm("c", step_index="1", wait="true")],
        ([(0, "step-0", None, ["a"]), (1, "step-1", None, ["b", "c"])], True),
        id="wait-true-on-any-object-of-the-final-step",
    ),
    pytest.param(
        [cm("a", step_index="0", wait="false")],
        ([(0, "step-0", None, ["a"])], False),
        id="wait-false-does-not-wait",
    ),
    pytest.param(
        [cm("a", step_index="0", wait=True)],
        ([(0, "step-0", None, ["a"])], False),
        id="unquoted-yaml-true-is-not-a-wait",
    ),
    pytest.param([], ([], False), id="no-objects-no-steps-no-wait"),
]


@pytest.mark.parametrize("rules", [RUNNER, EXPORT], ids=["runner", "export"])
@pytest.mark.parametrize(("objects", "expected"), SHARED)
def test_both_rule_sets_group_alike(
    rules: Rules, objects: list[dict[str, Any]], expected: tuple[Group, bool]
) -> None:
    assert summary(steps.group(objects, rules)) == expected


# Where they have always differed; each side keeps its reading (see Rules).
DIFFERENT = [
    pytest.param(
        [cm("a", step_index="+1")],
        ([(1, "step-1", None, ["a"])], False),
        "ConfigMap a: annotation krmfn.dev/step-index must be a whole number, got '+1'",
        id="index-with-a-sign",
    ),
    pytest.param(
        [cm("a", step_index=" 2 ")],
        ([(2, "step-2", None, ["a"])], False),
        "ConfigMap a: annotation krmfn.dev/step-index must be a whole number, got ' 2 '",
        id="index-with-spaces",
    ),
    pytest.param(
        [cm("loose"), cm("a", step_index="-2")],
        ([(-2, "step--2", None, ["a"]), (None, "default", None, ["loose"])], False),
        "ConfigMap a: annotation krmfn.dev/step-index must be a whole number, got '-2'",
        id="negative-index-goes-before-the-default-step",
    ),
    pytest.param(
        [cm("a", step_index="first")],
        "ConfigMap a: krmfn.dev/step-index must be an integer, got 'first'",
        "ConfigMap a: annotation krmfn.dev/step-index must be a whole number, got 'first'",
        id="index-not-a-number",
    ),
    pytest.param(
        [cm("a", step_index=1.5)],
        "ConfigMap a: krmfn.dev/step-index must be an integer, got 1.5",
        "ConfigMap a: annotation krmfn.dev/step-index must be a whole number, got '1.5'",
        id="index-loaded-as-a-yaml-float",
    ),
    pytest.param(
        [cm("a", step="pre")],
        ([(None, "pre", None, ["a"])], False),
        ([(None, "default", None, ["a"])], False),
        id="objects-without-an-index-that-name-a-step",
    ),
    pytest.param(
        [cm("a", step_index="0", step="rollout"), cm("b", step_index="0", step="deploy")],
        ([(0, "deploy", None, ["a", "b"])], False),
        "step index 0 has more than one krmfn.dev/step name (deploy, rollout); "
        "re-run set-steps on the whole stream",
        id="two-names-for-one-step",
    ),
    pytest.param(
        [cm("a", step_index="0", step="deploy"), cm("b", step_index="1", step="deploy")],
        ([(0, "deploy", None, ["a"]), (1, "deploy", None, ["b"])], False),
        "two steps are named 'deploy' (step-index 0, step-index 1); step names must be unique",
        id="one-name-for-two-steps",
    ),
    pytest.param(
        [cm("loose"), cm("a", step_index="0", step="default")],
        ([(None, "default", None, ["loose"]), (0, "default", None, ["a"])], False),
        "two steps are named 'default' (no step-index, step-index 0); step names must be unique",
        id="a-step-named-default-beside-the-default-step",
    ),
    pytest.param(
        [cm("a", step_index="0", step_timeout="5 minutes")],
        'ConfigMap a: krmfn.dev/step-timeout: time: unknown unit " minutes" in duration "5 minutes"',
        "ConfigMap a: annotation krmfn.dev/step-timeout: "
        'time: unknown unit " minutes" in duration "5 minutes"',
        id="timeout-not-a-duration",
    ),
    pytest.param(
        [cm("a", step_index="0", step_timeout="0s")],
        "ConfigMap a: krmfn.dev/step-timeout must be positive, got '0s'",
        "ConfigMap a: annotation krmfn.dev/step-timeout must be positive, got '0s'",
        id="zero-timeout",
    ),
    pytest.param(
        [cm("a", step_index="0", step_timeout=0)],
        "ConfigMap a: krmfn.dev/step-timeout must be positive, got 0",
        "ConfigMap a: annotation krmfn.dev/step-timeout must be positive, got '0'",
        id="zero-timeout-loaded-as-a-yaml-int",
    ),
]


@pytest.mark.parametrize(("objects", "runner", "export"), DIFFERENT)
def test_runner_and_export_readings_differ(
    objects: list[dict[str, Any]], runner: tuple[Group, bool] | str, export: tuple[Group, bool] | str
) -> None:
    for rules, expected in ((RUNNER, runner), (EXPORT, export)):
        if isinstance(expected, str):
            with pytest.raises(InputError) as raised:
                steps.group(objects, rules)
            assert str(raised.value) == expected
        else:
            assert summary(steps.group(objects, rules)) == expected


class Refused(KrmfnError):
    pass


@pytest.mark.parametrize("rules", [RUNNER, EXPORT], ids=["runner", "export"])
def test_the_caller_names_objects_and_picks_the_error_class(rules: Rules) -> None:
    with pytest.raises(Refused, match=r"^the object: .*krmfn.dev/step-index must be"):
        steps.group([cm("a", step_index="x")], rules, who=lambda obj: "the object", error=Refused)


def test_order_sorts_each_step_before_timeouts_are_read() -> None:
    objects = [cm("b", step_index="0", step_timeout="-1s"), cm("a", step_index="0", step_timeout="nope")]
    with pytest.raises(InputError, match=r"^ConfigMap b: "):
        steps.group(objects, RUNNER)
    with pytest.raises(InputError, match=r"^ConfigMap a: "):
        steps.group(objects, RUNNER, order=lambda obj: obj["metadata"]["name"])


def test_ordered_items_are_the_callers_objects_not_copies() -> None:
    objects = [cm("b", step_index="0"), cm("a", step_index="0")]
    [step] = steps.group(objects, EXPORT, order=lambda obj: obj["metadata"]["name"]).steps
    assert [id(o) for o in step.items] == [id(objects[1]), id(objects[0])]


@pytest.mark.parametrize("rules", [RUNNER, EXPORT], ids=["runner", "export"])
def test_objects_are_read_one_at_a_time(rules: Rules) -> None:
    def stream() -> Iterator[dict[str, Any]]:
        yield cm("a", step_index="bad")
        raise AssertionError("read past the object that is in error")

    with pytest.raises(InputError, match=r"^ConfigMap a: "):
        steps.group(stream(), rules)


@pytest.mark.parametrize(
    ("timeout", "seconds"),
    [("1m30s", 90.0), ("1500ms", 1.5), (None, None)],
    ids=["minutes-and-seconds", "milliseconds", "no-timeout"],
)
def test_timeout_in_seconds(timeout: str | None, seconds: float | None) -> None:
    assert steps.Step(0, "s", timeout).timeout_seconds == seconds
