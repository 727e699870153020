"""The ``<< ... >>`` expression language: Jinja2 expressions in a locked-down sandbox.

Only expressions exist: text between ``<< `` and `` >>`` (spaces inside) on one line is compiled with
``compile_expression``, so there are no blocks, loops or comments, and text around it is never parsed
(a shell heredoc ``cat <<EOF`` or ``cat << EOF >> log`` stays as it is, see ``Scan``). The sandbox has
no globals (no ``range``, ``cycler``, ``lipsum``...), reads attributes only as mapping keys (so
``''.__class__``, ``inputs.__class__`` or ``self.__init__`` are undefined, never Python internals),
refuses calls, bounds ``*``, ``**``, ``+`` and ``%``, and checks the size of every filter result.
Undefined names are errors (StrictUndefined).

Each expression is bounded on its own (MAX_STRING); a whole render is bounded by one ``Budget``: the
characters its expressions put into the manifests, and the work they take (characters built or
measured, operations, characters compiled). ``budget()`` opens it for a render-inputs run, or for a
whole ``krmfn render`` around every run of its pipelines.

Jinja2 is imported on first use: most resources hold no expression, and start-up time matters.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from krmfn.functions.render_inputs.values import (
    BUDGET,
    MAX_STRING,
    RenderError,
    check_defined,
    check_room,
    native,
    size_of,
    to_text,
)
from krmfn.yaml.fast import INT_MAX, INT_MIN

# Bounds the work of compiling one expression (Jinja compiles it to Python source).
MAX_EXPRESSION = 1024
_MAX_POWER_BITS = 4096


class Scan:
    """The expressions of a text: ``<<``, whitespace, the source, whitespace, ``>>``, the source on one
    line, leftmost first and not overlapping; the spans ``re.finditer(r"<<(\\s[^\\n]*?\\s)>>")``
    finds. Spaces inside the delimiters, as the ResourceSet convention writes them: ``cat <<EOF >> log``
    in a shell script is not an expression.

    That regular expression takes quadratic time (worse, in practice) on text with many ``<< `` and no
    `` >>``: each opening scans to the end of its line again (240 KB took two minutes). Here each
    opening asks for the next ``\\s>>`` and the next newline at or after a position, and both answers
    are kept until the scan passes them, so every character is looked at a bounded number of times.
    ``steps`` counts the characters examined, for the test that holds it linear.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.steps = 0

    def spans(self) -> list[tuple[int, int]]:
        """``(start, end)`` of every expression (see ``is_expression_source``)."""
        text, length, at = self.text, len(self.text), 0
        found: list[tuple[int, int]] = []
        close_from, close = -1, -2  # the first `\s>>` at or after close_from (-1: none)
        newline_from, newline = -1, -2
        while True:
            opening = text.find("<<", at)
            self.steps += (opening if opening >= 0 else length) - at + 1
            if opening < 0 or opening + 2 >= length:
                return found
            at = opening + 1
            if not text[opening + 2].isspace():  # str.isspace is re's \s for str patterns
                continue
            after = opening + 3
            if not (close_from <= after and (close == -1 or close >= after)):
                match = _CLOSE.search(text, after)
                close_from, close = after, match.start() if match else -1
                self.steps += (close if close >= 0 else length) - after + 1
            if close < 0:
                return found  # no `\s>>` anywhere after: no later opening can close either
            if not (newline_from <= after and (newline == -1 or newline >= after)):
                newline_from, newline = after, text.find("\n", after)
                self.steps += (newline if newline >= 0 else length) - after + 1
            if 0 <= newline < close:
                continue  # the source would span lines; a later close is past the same newline
            at = close + 3
            if is_expression_source(text[after:close]):
                found.append((opening, at))


_CLOSE = re.compile(r"\s>>")
# One word, number or quoted string: a shell heredoc (`cat << EOF >> log`, `cat << 'EOF' >> log`) or a
# shift (`$(( 1 << n >> 2 ))`), in a script held by a ConfigMap, a Secret or a container's args.
_WORD = re.compile(r"""\s*(?:[A-Za-z_]\w*|[0-9][\w.]*|'[^'\n]*'|"[^"\n]*")\s*""")


def is_expression_source(source: str) -> bool:
    """Whether the text between ``<<`` and ``>>`` is an expression: not blank, and not a single word,
    number or quoted string other than ``inputs`` (those are heredocs and shifts in scripts)."""
    stripped = source.strip()
    return bool(stripped) and (stripped == "inputs" or _WORD.fullmatch(source) is None)


def has_expression(text: str) -> bool:
    return "<<" in text and bool(Scan(text).spans())


def render(text: str, inputs: Mapping[str, Any]) -> Any:
    """``text`` with every expression replaced. A text that is exactly one expression becomes the
    expression's value with its own type (a number stays a number, a mapping a mapping)."""
    spans = Scan(text).spans() if "<<" in text else []
    if not spans:
        return text
    spent = BUDGET.get()
    if len(spans) == 1 and spans[0] == (0, len(text)):
        value = _value(text, inputs, lambda value, source: native(_check(value), source))
        if spent is not None:
            spent.emitted(size_of(value))
        return _no_new_expression(value)
    pieces, last = [], 0
    for start, end in spans:
        piece = _value(text[start:end], inputs, to_text)
        if spent is not None:
            spent.emitted(len(piece))
        pieces += [text[last:start], piece]
        last = end
    pieces.append(text[last:])
    if sum(map(len, pieces)) > MAX_STRING:
        raise RenderError(f"the rendered string is over {MAX_STRING} characters")
    return _no_new_expression("".join(pieces))


def _no_new_expression(value: Any) -> Any:
    """Refuse a result holding an expression: pieces of inputs and template text put together
    (``<< inputs.open >> inputs.x >>`` with ``open: "<<"``) would be evaluated by the next render."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if has_expression(item):
                raise RenderError(
                    "the result holds a << >> expression, which the next render would evaluate; "
                    "inputs are values, not templates"
                )
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return value


def _evaluate(expression: str, inputs: Mapping[str, Any]) -> Any:
    from jinja2 import TemplateError, TemplateSyntaxError, UndefinedError
    from jinja2.exceptions import SecurityError

    source = expression[2:-2].strip()
    if len(source) > MAX_EXPRESSION:
        raise RenderError(f"the expression is over {MAX_EXPRESSION} characters", expression)
    try:
        value = _compile(source)(inputs=inputs)
        check_defined(value)
        return value
    except TemplateError as err:
        hidden = (
            "a name is undefined"
            if isinstance(err, UndefinedError)
            else "not allowed in the sandbox"
            if isinstance(err, SecurityError)
            else "a syntax error or an unknown filter"
            if isinstance(err, TemplateSyntaxError)
            else "a template error"
        )
        raise RenderError(err.message or type(err).__name__, expression, hidden) from None
    except RenderError as err:
        raise RenderError(err.reason, expression, err.secret_reason) from None
    except (RecursionError, SyntaxError):  # Python's own nesting limits, when Jinja compiles the source
        raise RenderError("the expression nests too deeply", expression) from None
    except MemoryError:
        raise RenderError("the expression needs too much memory", expression) from None
    except (ArithmeticError, ValueError, TypeError, LookupError) as err:
        raise RenderError(f"{type(err).__name__}: {err}", expression, type(err).__name__) from None


_COMPILED: dict[str, Callable[..., Any]] = {}


def _compile(source: str) -> Callable[..., Any]:
    """Each source compiled once per process; a compile is charged to the render that needs it."""
    found = _COMPILED.get(source)
    if found is None:
        spent = BUDGET.get()
        if spent is not None:
            spent.compiled(len(source))
        found = _COMPILED[source] = _environment().compile_expression(source, undefined_to_none=False)
    return found


def _value(expression: str, inputs: Mapping[str, Any], finish: Callable[[Any, str], Any]) -> Any:
    """``finish(value, expression)`` of one expression; every error it raises names the expression."""
    try:
        return finish(_evaluate(expression, inputs), expression)
    except RenderError as err:
        raise RenderError(err.reason, err.expression or expression, err.secret_reason) from None


def _check(value: Any) -> Any:
    """Every intermediate value: within MAX_STRING and MAX_DEPTH, and an int go-yaml can read."""
    if isinstance(value, int) and not isinstance(value, bool):
        if not INT_MIN <= value <= INT_MAX:
            raise RenderError("an integer out of the 64-bit range that kpt and kustomize read")
        return value
    check_room(size_of(value))
    return value


@cache
def _environment() -> Any:
    from jinja2 import StrictUndefined, nodes
    from jinja2.compiler import CodeGenerator, Frame
    from jinja2.exceptions import SecurityError
    from jinja2.sandbox import SandboxedEnvironment

    from krmfn.functions.render_inputs import filters

    class Sandbox(SandboxedEnvironment):
        intercepted_binops = frozenset({"*", "**", "+", "%"})

        def getattr(self, obj: Any, attribute: str) -> Any:
            check_defined(obj)  # report the first missing name, not a chain of undefined objects
            if isinstance(obj, Mapping) and attribute in obj:
                return obj[attribute]
            return self.undefined(obj=obj, name=attribute)

        def getitem(self, obj: Any, argument: Any) -> Any:
            check_defined(obj)
            if isinstance(obj, Mapping):
                return obj[argument] if argument in obj else self.undefined(obj=obj, name=argument)
            if isinstance(obj, (list, tuple, str)) and isinstance(argument, (int, slice)):
                if isinstance(argument, slice):  # a copy: bounded before it is made
                    check_room(len(range(len(obj))[argument]))
                try:
                    return obj[argument]
                except IndexError:
                    return self.undefined(obj=obj, name=str(argument))
            return self.undefined(obj=obj, name=str(argument))

        def call(self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
            check_defined(__obj)
            raise SecurityError("calling functions or methods is not allowed; use filters")

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            if operator == "%" and isinstance(left, str):
                raise SecurityError("string formatting with % is not allowed")
            if operator == "**" and not _small_power(left, right):
                raise SecurityError("the power is too large")
            if operator == "*" and (_is_sequence(left) or _is_sequence(right)):
                count = right if _is_sequence(left) else left
                other = left if _is_sequence(left) else right
                # Measured deep: [inputs.big] * 1000 is one item repeated, but 200 MB once written.
                if isinstance(count, int) and count > 0 and count * size_of(other) > MAX_STRING:
                    raise SecurityError(f"repetition over {MAX_STRING} characters")
            if operator == "+" and (_is_sequence(left) or _is_sequence(right)):
                check_room(size_of(left) + size_of(right))
            return _check(super().call_binop(context, operator, left, right))

        def bounded_concat(self, parts: tuple[Any, ...]) -> str:
            """``a ~ b``: each part as it reads inside a string, the total bounded before joining
            (Jinja's own join str()s each part, a list as Python writes it, with no bound at all)."""
            texts, total = [], 0
            for part in parts:
                text = to_text(part)
                total += len(text)
                check_room(total)
                texts.append(text)
            return "".join(texts)

    class Generator(CodeGenerator):
        def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
            self.write("environment.bounded_concat((")
            for arg in node.nodes:
                self.visit(arg, frame)
                self.write(", ")
            self.write("))")

    Sandbox.code_generator_class = Generator

    env = Sandbox(
        undefined=StrictUndefined,
        autoescape=False,
        variable_start_string="<<",
        variable_end_string=">>",
        block_start_string="<<%",
        block_end_string="%>>",
        comment_start_string="<<#",
        comment_end_string="#>>",
    )
    env.globals.clear()
    env.filters.clear()
    env.filters.update({name: _bounded(fn) for name, fn in filters.FILTERS.items()})
    return env


def _is_sequence(value: Any) -> bool:
    return isinstance(value, (str, list, tuple))


def _small_power(base: Any, exponent: Any) -> bool:
    if not isinstance(base, (int, float)) or not isinstance(exponent, (int, float)):
        return True  # the operator itself raises TypeError
    if isinstance(base, float) or isinstance(exponent, float):
        return abs(exponent) <= 1024
    return exponent < 0 or abs(base) <= 1 or abs(base).bit_length() * exponent <= _MAX_POWER_BITS


def _bounded(fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        return _check(fn(*args, **kwargs))

    call.__name__ = fn.__name__
    return call
