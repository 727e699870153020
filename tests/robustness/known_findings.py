"""Open findings of the robustness work that are not fixed in this tree, each with its reproducing input.

Not collected by pytest (a failing test would block everyone on someone else's code); run
``.venv/bin/python -m robustness.known_findings`` from ``tests/`` (or ``bench/fuzz.py --findings``) to see
which are still present. When one is fixed, turn it into a test in the matching test_robust_*.py file.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from krmfn.limits import Limits
from krmfn.yaml.io import dump_fast, load
from robustness.harness import ONE_GIB, run_cli


@dataclass(frozen=True)
class Known:
    title: str
    where: str
    reproduce: str
    present: Callable[[], bool]


def _render_list(value: str, inputs: dict[str, object] | None = None, kind: str = "ConfigMap") -> str:
    body = "stringData" if kind == "Secret" else "data"
    return dump_fast(
        {
            "apiVersion": "config.kubernetes.io/v1",
            "kind": "ResourceList",
            "items": [{"apiVersion": "v1", "kind": kind, "metadata": {"name": "t"}, body: {"x": value}}],
            "functionConfig": {
                "apiVersion": "fn.krmfn.dev/v1alpha1",
                "kind": "RenderInputs",
                "metadata": {"name": "r"},
                "inputs": inputs or {"tag": "1.2.3"},
            },
        }
    )


def _render(text: str) -> tuple[str, int]:
    from krmfn.functions.render_inputs import FUNCTION

    return FUNCTION.process(text)


CONCAT_BOMB = "<< (" + " ~ ".join(["('a' * 250000)"] * 3000) + ") >>"


def _concat_bomb() -> bool:
    run = run_cli("render-inputs", _render_list(CONCAT_BOMB).encode(), timeout=60, memory=ONE_GIB)
    return b"MemoryError" in run.stderr or run.code != 1


def _parentheses() -> bool:
    out, _ = _render(_render_list("<< " + "(" * 150 + "1" + ")" * 150 + " >>"))
    return "internal error" in out


def _secret_in_message() -> bool:
    out, _ = _render(_render_list("<< inputs.missing ~ 'CANARYsecret' >>", kind="Secret"))
    return "CANARYsecret" in out[out.index("\nresults:") :]


def _input_holding_expression() -> bool:
    first, _ = _render(_render_list("<< inputs.level >>", {"tag": "1.2", "level": "<< inputs.tag >>"}))
    second, _ = _render(first)
    return bool(load(first, "fast", Limits())["items"] != load(second, "fast", Limits())["items"])


def _single_expression_length() -> bool:
    _, code = _render(_render_list("<< 'ab' * 131072 ~ 'c' >>"))
    return code == 0


def _recursive_alias_fidelity() -> bool:
    from robustness.fuzzing import PARSER

    text = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nextra: &a [x, *a]\n"
    return PARSER.process(text, "fidelity")[1] == 0 and PARSER.process(text, "fast")[1] == 1


def _custom_tags() -> bool:
    from robustness.fuzzing import PARSER

    text = (
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n"
        "items: [{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {k: !custom v}}]\n"
    )
    return PARSER.process(text, "fidelity")[1] != PARSER.process(text, "fast")[1]


def _alias_walk_cost() -> bool:
    from krmfn.functions.set_image import FUNCTION

    levels = ["    l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    levels += [f"    l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * (16 if i == 6 else 10))}]" for i in range(1, 7)]
    text = (
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
        "- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: d}\n  spec:\n"
        "   template:\n    spec:\n     containers: [{name: c, image: nginx}]\n" + "\n".join(levels) + "\n"
    )
    started = time.monotonic()
    FUNCTION.process(text)
    return time.monotonic() - started > 2


KNOWN = [
    Known(
        "render-inputs: `~` concatenation is unbounded (memory bomb)",
        "krmfn/functions/render_inputs/engine.py (Sandbox intercepts * ** + %, not the ~ Concat node)",
        "data.x: << (('a' * 250000) ~ ... 3000 terms) >>  # 51 KB of text builds 750 MB; "
        "under a 1 GiB limit: internal error: MemoryError",
        _concat_bomb,
    ),
    Known(
        "render-inputs: deep parentheses are an internal error",
        "krmfn/functions/render_inputs/engine.py _evaluate (RecursionError is not caught)",
        "data.x: << ((((... 150 ...1)))) >>  # internal error: RecursionError, not a field error",
        _parentheses,
    ),
    Known(
        "render-inputs: error messages quote the expression, a Secret's value",
        "krmfn/functions/render_inputs/engine.py _evaluate / transform.py _Renderer._render",
        "Secret stringData.x: << inputs.missing ~ 'CANARY' >>  # CANARY in results and on stderr",
        _secret_in_message,
    ),
    Known(
        "render-inputs: not idempotent when an input value holds an expression",
        "krmfn/functions/render_inputs/transform.py (rendered values are rendered again by the next run)",
        "inputs: {tag: '1.2', level: '<< inputs.tag >>'}; data.x: << inputs.level >>  "
        "# run 1: << inputs.tag >>, run 2: 1.2",
        _input_holding_expression,
    ),
    Known(
        "render-inputs: a single-expression result skips the length bound",
        "krmfn/functions/render_inputs/engine.py render (checks len only for multi-piece strings)",
        "data.x: << 'ab' * 131072 ~ 'c' >>  # 262145 characters accepted, MAX_STRING is 262144",
        _single_expression_length,
    ),
    Known(
        "SDK: 18M alias-expanded values (under KRMFN_MAX_NODES) cost seconds to walk",
        "krmfn/limits.py max_nodes default 20M; go-yaml v3 (kpt, kustomize) refuses excessive aliasing",
        "a 700-byte Deployment with a 7-level alias bomb in its pod spec: set-image 7 s, render-inputs 6 s",
        _alias_walk_cost,
    ),
    Known(
        "SDK: a recursive alias is null on the fidelity path, an error on the fast path",
        "krmfn/yaml/rt.py (ruamel), pinned by tests/test_sdk_yamlio.py",
        "extra: &a [x, *a]  # fidelity: exit 0, written back as [x, null]; fast: exit 1",
        _recursive_alias_fidelity,
    ),
    Known(
        "SDK: the fast path refuses custom tags the fidelity path keeps",
        "krmfn/yaml/io.py _StrictConstructor vs ruamel round-trip",
        "data: {k: !custom v}  # fast: could not determine a constructor; fidelity: exit 0",
        _custom_tags,
    ),
]


def report() -> list[tuple[str, bool]]:
    rows = []
    for known in KNOWN:
        rows.append((known.title, known.present()))
    return rows


def main() -> int:
    rows = report()
    width = max(len(title) for title, _ in rows)
    print(f"{'finding':<{width}}  status")
    for (title, present), known in zip(rows, KNOWN, strict=True):
        print(f"{title:<{width}}  {'PRESENT' if present else 'fixed'}")
        print(f"{'':<{width}}  where: {known.where}")
        print(f"{'':<{width}}  input: {known.reproduce}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
