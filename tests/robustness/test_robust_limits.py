"""Input limits through the real CLI: each limit set small by its environment variable gives a clear error
naming the variable, the input just under it still works; hostile input under the default limits fails
fast in a process with 1 GiB of address space (docs/limits.md)."""

from __future__ import annotations

import time

import pytest

from krmfn.limits import Limits
from krmfn.registry import CANONICAL_ORDER, load
from krmfn.yaml.io import Mode
from robustness.harness import ONE_GIB, output_problems, run_cli, run_cli_many

HEAD = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n"
CONFIGMAP = "- {apiVersion: v1, kind: ConfigMap, metadata: {name: c%d}, data: {k: v}}\n"


def items(count: int) -> str:
    return HEAD + "items:\n" + "".join(CONFIGMAP % i for i in range(count))


def nested(depth: int) -> str:
    return (
        HEAD
        + "items:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {k: v}}\n"
        + (
            "functionConfig: {apiVersion: v1, kind: ConfigMap, metadata: {name: f}, data: {}}\n"
            + "extra: "
            + "[" * depth
            + "]" * depth
            + "\n"
        )
    )


def laughs(levels: int) -> str:
    lines = ["extra:", "  l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, levels)]
    return items(1) + "\n".join(lines) + "\n"


# (variable, value, input over the limit, input within it)
LIMITS = [
    ("KRMFN_MAX_INPUT_BYTES", "2000", items(40), items(5)),
    ("KRMFN_MAX_ITEMS", "3", items(4), items(3)),
    ("KRMFN_MAX_DEPTH", "10", nested(12), nested(7)),
    ("KRMFN_MAX_NODES", "2000", laughs(4), laughs(2)),
]


@pytest.mark.parametrize("mode", ["fast", "fidelity"])
def test_each_limit_is_configurable_and_named_in_the_error(mode: Mode) -> None:
    jobs = []
    for var, value, over, within in LIMITS:
        jobs.append(("validate-jobs", over.encode(), ("--yaml", mode), {var: value}))
        jobs.append(("validate-jobs", within.encode(), ("--yaml", mode), {var: value}))
    runs = run_cli_many(jobs)
    for index, (var, value, _, _) in enumerate(LIMITS):
        refused, accepted = runs[2 * index], runs[2 * index + 1]
        stderr = refused.stderr.decode()
        assert refused.code == 1, (var, stderr)
        assert var in stderr and value in stderr, stderr
        assert "Traceback" not in stderr
        assert not output_problems(refused.stdout.decode(), refused.code)
        assert accepted.code == 0, (var, accepted.stderr.decode())
        assert not output_problems(accepted.stdout.decode(), accepted.code, mode)


@pytest.mark.parametrize("value", ["lots", "0", "-5", ""])
def test_a_limit_that_is_not_a_positive_number_is_an_error(value: str) -> None:
    (run,) = run_cli_many([("set-steps", items(1).encode(), (), {"KRMFN_MAX_ITEMS": value})])
    assert run.code == 1
    assert f"KRMFN_MAX_ITEMS={value!r} is not a positive whole number" in run.stderr.decode()


HOSTILE = {
    "billion laughs": (laughs(10).encode(), "KRMFN_MAX_NODES"),
    "recursive alias": ((items(1) + "extra: &a [x, *a]\n").encode(), "recursive YAML alias"),
    "deep flow nesting": (nested(100_000).encode(), "nest"),
    "deep block nesting": (
        (items(1) + "extra:\n" + "".join(" " * (i + 1) + f"k{i}:\n" for i in range(1000))).encode(),
        "nest",
    ),
    "input over the size limit": (b"x" * (Limits().max_bytes + 10), "KRMFN_MAX_INPUT_BYTES"),
}


# Both paths read with libyaml now (the faithful writer keeps the text, not ruamel's tree): every hostile
# input is refused alike, a recursive alias included.
CASES = [(case, mode) for case in sorted(HOSTILE) for mode in ("fast", "fidelity")]


@pytest.mark.parametrize(("case", "mode"), CASES)
def test_hostile_input_fails_fast_within_one_gib(case: str, mode: str) -> None:
    data, expected = HOSTILE[case]
    started = time.monotonic()
    run = run_cli("set-config-checksum", data, ("--yaml", mode), timeout=60, memory=ONE_GIB)
    elapsed = time.monotonic() - started
    stderr = run.stderr.decode()
    assert run.code == 1, stderr
    assert expected in stderr, stderr
    assert "Traceback" not in stderr and "MemoryError" not in stderr
    assert not output_problems(run.stdout.decode(), run.code, source=data)
    assert elapsed < 10, f"{case} took {elapsed:.1f} s"


def _bomb_in_items(levels: int) -> str:
    lines = ["    l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"    l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, levels)]
    return (
        HEAD
        + "items:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: bomb}\n  extra:\n"
        + "\n".join(lines)
        + "\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: web}\n  spec:\n    template:\n"
        + "      spec:\n        containers:\n"
        + "        - {name: c, image: nginx, envFrom: [{configMapRef: {name: bomb}}]}\n"
        + "        extra: *l4\n"
    )


@pytest.mark.parametrize("mode", ["fast", "fidelity"])
@pytest.mark.parametrize("name", list(CANONICAL_ORDER))
def test_aliases_under_the_limit_stay_aliases_in_the_output(name: str, mode: Mode) -> None:
    """111 110 values through aliases in 1 KB are allowed; the output must keep them as aliases, not
    write them all out (and a function walking them must stay fast)."""
    text = _bomb_in_items(5)
    started = time.process_time()  # CPU of this process: a busy machine's wait is not counted
    out, code = load(name).process(text, mode)
    assert time.process_time() - started < 5
    assert not output_problems(out, code, mode)
    assert len(out) < 20 * len(text), f"output is {len(out)} characters for {len(text)} of input"
