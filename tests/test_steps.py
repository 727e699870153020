"""krmfn.k8s.step_grouping: the one grouping of a rendered stream into steps, for krmfn apply/plan and krmfn
export.

Each case lists objects as ``(name, annotations)`` and the expected grouping as
``[(step-index, name, timeout, [object names])]`` plus the final step's wait, or the exact error.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from krmfn.errors import InputError, KrmfnError
from krmfn.k8s import annotations as names
from krmfn.k8s import step_grouping as steps

IDX, NAME, TIMEOUT, WAIT = names.STEP_INDEX, names.STEP, names.STEP_TIMEOUT, names.WAIT
Group = list[tuple[int | None, str, str | None, list[str]]]


def cm(name: str, **annotations: Any) -> dict[str, Any]:
    """A ConfigMap; keyword names are the annotation keys after ``krmfn.dev/`` (``_`` for ``-``)."""
    notes = {f"krmfn.dev/{k.replace('_', '-')}": v for k, v in annotations.items()}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "annotations": notes}}


def summary(found: steps.Steps) -> tuple[Group, bool]:
    shape = [(s.index, s.name, s.timeout, [o["metadata"]["name"] for o in s.items]) for s in found.steps]
    return shape, found.wait


GROUPED = [
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


@pytest.mark.parametrize(("objects", "expected"), GROUPED)
def test_grouping(objects: list[dict[str, Any]], expected: tuple[Group, bool]) -> None:
    assert summary(steps.group(objects)) == expected


REFUSED = [
    pytest.param(
        [cm("a", step_index="+1")],
        "ConfigMap a: annotation krmfn.dev/step-index must be a whole number from 0 to 2147483647, got '+1'",
        id="index-with-a-sign",
    ),
    pytest.param(
        [cm("a", step_index=" 2 ")],
        "ConfigMap a: annotation krmfn.dev/step-index must be a whole number from 0 to 2147483647, got ' 2 '",
        id="index-with-spaces",
    ),
    pytest.param(
        [cm("loose"), cm("a", step_index="-2")],
        "ConfigMap a: annotation krmfn.dev/step-index must be a whole number from 0 to 2147483647, got '-2'",
        id="negative-index",
    ),
    pytest.param(
        [cm("a", step_index="\u00b2")],
        "ConfigMap a: annotation krmfn.dev/step-index must be a whole number from 0 to 2147483647, "
        "got '\u00b2'",
        id="a-superscript-digit-is-not-a-number",
    ),
    pytest.param(
        [cm("a", step_index="first")],
        "ConfigMap a: annotation krmfn.dev/step-index must be a whole number from 0 to 2147483647, "
        "got 'first'",
        id="index-not-a-number",
    ),
    pytest.param(
        [cm("a", step_index=1.5)],
        "ConfigMap a: annotation krmfn.dev/step-index must be a whole number from 0 to 2147483647, got '1.5'",
        id="index-loaded-as-a-yaml-float",
    ),
    pytest.param(
        [cm("a", step_index="0", step="rollout"), cm("b", step_index="0", step="deploy")],
        "the objects of step-index 0 carry more than one krmfn.dev/step name (deploy, rollout); "
        "re-run set-steps on the whole stream",
        id="two-names-for-one-step",
    ),
    pytest.param(
        [cm("a", step="pre"), cm("b", step="post")],
        "the objects without a step-index carry more than one krmfn.dev/step name (post, pre); "
        "re-run set-steps on the whole stream",
        id="two-names-for-the-unindexed-step",
    ),
    pytest.param(
        [cm("a", step_index="0", step="deploy"), cm("b", step_index="1", step="deploy")],
        "two steps are named 'deploy' (step-index 0, step-index 1); step names must be unique",
        id="one-name-for-two-steps",
    ),
    pytest.param(
        [cm("loose"), cm("a", step_index="0", step="default")],
        "two steps are named 'default' (no step-index, step-index 0); step names must be unique",
        id="a-step-named-default-beside-the-default-step",
    ),
    pytest.param(
        [cm("a", step_index="0", step_timeout="5 minutes")],
        "ConfigMap a: annotation krmfn.dev/step-timeout: "
        'time: unknown unit " minutes" in duration "5 minutes"',
        id="timeout-not-a-duration",
    ),
    pytest.param(
        [cm("a", step_index="0", step_timeout="0s")],
        "ConfigMap a: annotation krmfn.dev/step-timeout must be positive, got '0s'",
        id="zero-timeout",
    ),
    pytest.param(
        [cm("a", step_index="0", step_timeout=0)],
        "ConfigMap a: annotation krmfn.dev/step-timeout must be positive, got '0'",
        id="zero-timeout-loaded-as-a-yaml-int",
    ),
]


@pytest.mark.parametrize(("objects", "message"), REFUSED)
def test_streams_no_single_set_steps_run_writes_are_refused(
    objects: list[dict[str, Any]], message: str
) -> None:
    with pytest.raises(InputError) as raised:
        steps.group(objects)
    assert str(raised.value) == message


def test_objects_without_an_index_may_name_their_step() -> None:
    assert summary(steps.group([cm("a", step="pre"), cm("b", step_index="0")])) == (
        [(None, "pre", None, ["a"]), (0, "step-0", None, ["b"])],
        False,
    )


class Refused(KrmfnError):
    pass


def test_the_caller_names_objects_and_picks_the_error_class() -> None:
    with pytest.raises(Refused, match=r"^the object: .*krmfn.dev/step-index must be"):
        steps.group([cm("a", step_index="x")], who=lambda obj: "the object", error=Refused)


def test_order_sorts_each_step_before_timeouts_are_read() -> None:
    objects = [cm("b", step_index="0", step_timeout="-1s"), cm("a", step_index="0", step_timeout="nope")]
    with pytest.raises(InputError, match=r"^ConfigMap b: "):
        steps.group(objects)
    with pytest.raises(InputError, match=r"^ConfigMap a: "):
        steps.group(objects, order=lambda obj: obj["metadata"]["name"])


def test_ordered_items_are_the_callers_objects_not_copies() -> None:
    objects = [cm("b", step_index="0"), cm("a", step_index="0")]
    [step] = steps.group(objects, order=lambda obj: obj["metadata"]["name"]).steps
    assert [id(o) for o in step.items] == [id(objects[1]), id(objects[0])]


def test_objects_are_read_one_at_a_time() -> None:
    def stream() -> Iterator[dict[str, Any]]:
        yield cm("a", step_index="bad")
        raise AssertionError("read past the object that is in error")

    with pytest.raises(InputError, match=r"^ConfigMap a: "):
        steps.group(stream())


@pytest.mark.parametrize(
    ("timeout", "seconds"),
    [("1m30s", 90.0), ("1500ms", 1.5), (None, None)],
    ids=["minutes-and-seconds", "milliseconds", "no-timeout"],
)
def test_timeout_in_seconds(timeout: str | None, seconds: float | None) -> None:
    assert steps.Step(0, "s", timeout).timeout_seconds == seconds
