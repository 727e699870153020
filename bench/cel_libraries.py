"""CEL libraries for health checks, compared on Flux's documented features, speed and size.

Runs the same cases on every CEL library importable from this Python (``--lib-path DIR`` adds a directory
to look in; install a candidate with ``pip install --target DIR NAME`` to compare it without touching
the venv) and prints a Markdown table: cases judged as Flux judges them (cel-go with Flux's options:
optional types, the strings, sets and encoders extensions, cross-type numeric comparisons), compile and
evaluation time, import time. ``--quick`` runs fewer iterations. The figures in docs/runner.md come from
here.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

OBJ: dict[str, Any] = {
    "apiVersion": "cert-manager.io/v1", "kind": "Certificate",
    "metadata": {"name": "c", "generation": 2}, "spec": {"replicas": 3}, "data": {"foo": "x"},
    "status": {"phase": "Ready", "readyReplicas": 3, "observedGeneration": 2,
               "conditions": [{"type": "Ready", "status": "True", "observedGeneration": 2},
                              {"type": "Issuing", "status": "False", "observedGeneration": 2}]},
}  # fmt: skip
FLUX_CURRENT = (
    "status.conditions.filter(e, e.type == 'Ready').all(e, e.observedGeneration == metadata.generation "
    "&& e.status == 'True')"
)
# (what, expression, the result Flux's cel-go environment gives: True/False, "error" or "not bool")
CASES: list[tuple[str, str, object]] = [
    ("Flux docs: Certificate current", FLUX_CURRENT, True),
    ("Flux docs: Certificate inProgress", FLUX_CURRENT.replace("'Ready'", "'Issuing'"), False),
    ("has() guard (Flux FAQ)", "has(status.attribute) && status.attribute.ready", False),
    ("optional field", "status.?attribute.?ready.orValue(false)", False),
    ("optional list", "status.?conditions.orValue([]).exists(c, c.type == 'Ready')", True),
    ("strings extension", "status.phase.lowerAscii() == 'ready'", True),
    ("int against double", "status.readyReplicas >= 1.0", True),
    ("int equality", "status.readyReplicas == spec.replicas", True),
    ("sets extension", "sets.contains(['Ready', 'Issuing'], status.conditions.map(c, c.type))", True),
    ("encoders extension", "base64.decode('aGk=') == b'hi'", True),
    ("any top-level field", "data.foo == 'x'", True),
    ("missing key is an error", "status.nothere == 'x'", "error"),
    ("non-bool result", "status.phase", "not bool"),
]
SYNTAX_ERRORS = ["status.phase ==", "status.conditions.exists(c,", "'unterminated"]

Compile = Callable[[str], Any]
Evaluate = Callable[[Any, dict[str, Any]], Any]


def _cel_expr_python() -> tuple[Compile, Evaluate]:
    from cel_expr_python import cel
    from cel_expr_python.ext import ext_encoders, ext_optional, ext_strings

    extensions = [ext_strings.ExtStrings(), ext_optional.ExtOptional(), ext_encoders.ExtEncoders()]
    env = cel.NewEnv(extensions=extensions)

    def evaluate(program: Any, obj: dict[str, Any]) -> Any:
        value = program.eval(data=obj)
        if value.type() == cel.Type.ERROR:
            raise RuntimeError(value.value())
        return value.value()

    return (lambda text: env.compile(text, disable_check=True)), evaluate


def _common_expression_language() -> tuple[Compile, Evaluate]:
    import cel  # type: ignore[import-not-found]

    return cel.compile, lambda program, obj: program.execute(obj)


def _cel_python() -> tuple[Compile, Evaluate]:
    import celpy  # type: ignore[import-not-found]

    env = celpy.Environment()

    def evaluate(program: Any, obj: dict[str, Any]) -> Any:
        result = program.evaluate({k: celpy.json_to_cel(v) for k, v in obj.items()})
        if isinstance(result, Exception):
            raise result
        return bool(result) if isinstance(result, celpy.celtypes.BoolType) else result

    return (lambda text: env.program(env.compile(text))), evaluate


LIBRARIES = {
    "cel-expr-python": _cel_expr_python,
    "common-expression-language": _common_expression_language,
    "cel-python": _cel_python,
}


def measure(name: str, iterations: int) -> list[str] | None:
    make = LIBRARIES[name]
    started = time.perf_counter()
    try:
        compile_, evaluate = make()
    except ImportError:
        return None
    imported = time.perf_counter() - started
    right = 0
    wrong: list[str] = []
    for what, text, want in CASES:
        try:
            got: object = evaluate(compile_(text), OBJ)
            got = got if isinstance(got, bool) else "not bool"
        except Exception:  # every library has its own error types
            got = "error"
        if got == want:
            right += 1
        else:
            wrong.append(what)
    refused = 0
    for text in SYNTAX_ERRORS:
        try:
            compile_(text)
        except Exception:  # as above
            refused += 1
    started = time.perf_counter()
    for _ in range(iterations // 10):
        compile_(FLUX_CURRENT)
    compiled = (time.perf_counter() - started) / (iterations // 10)
    program = compile_(FLUX_CURRENT)
    started = time.perf_counter()
    for _ in range(iterations):
        evaluate(program, OBJ)
    evaluated = (time.perf_counter() - started) / iterations
    return [
        name,
        f"{right}/{len(CASES)}" + (f" (not: {', '.join(wrong)})" if wrong else ""),
        f"{refused}/{len(SYNTAX_ERRORS)}",
        f"{compiled * 1e6:.0f} µs",
        f"{evaluated * 1e6:.1f} µs",
        f"{imported * 1e3:.0f} ms",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer iterations (the smoke test)")
    parser.add_argument("--lib-path", action="append", default=[], metavar="DIR")
    parser.add_argument("--one", choices=sorted(LIBRARIES), help=argparse.SUPPRESS)
    args = parser.parse_args()
    iterations = 200 if args.quick else 2000
    if args.one:  # one library per process: two of them are both imported as "cel"
        sys.path[:0] = args.lib_path
        row = measure(args.one, iterations)
        print("\t".join(row) if row else "")
        return 0
    print("### CEL libraries on Flux's health check features\n")
    print("| library | Flux's results | syntax errors refused | compile | evaluate | import |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name in LIBRARIES:
        for path in [*args.lib_path, ""] if args.lib_path else [""]:
            cmd = [sys.executable, __file__, "--one", name, *(["--quick"] if args.quick else [])]
            cmd += ["--lib-path", path] if path else []
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()
            if out:
                print("| " + " | ".join(out.split("\t")) + " |")
                break
        else:
            print(f"| {name} | not installed | | | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
