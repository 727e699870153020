"""render-inputs sandbox escapes: an expression cannot read files, environment variables or Python
internals, nor run away with time or memory. Each attempt is an error result naming the resource and the
field, within a time bound, and nothing it reaches for shows up in the output."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from krmfn.functions.render_inputs import FUNCTION
from krmfn.limits import Limits
from krmfn.yaml.io import dump_fast, load
from robustness.harness import ONE_GIB, output_problems, run_cli, time_bound

ENV_NAME = "KRMFN_TEST_CANARY"
ENV_CANARY = "CANARYenv93e1"
FILE_CANARY = "CANARYfile4c2d"
INTERNALS = ("<class", "<function", "<module", "<built-in", "object at 0x", "__globals__", "os.environ")

ESCAPES = [
    # files
    "<< open('/etc/passwd').read() >>",
    "<< open(inputs.path).read() >>",
    "<< inputs.path | read >>",
    "<< lipsum.__globals__.os.popen('cat ' ~ inputs.path).read() >>",
    "<< self._TemplateReference__context.cycler.__init__.__globals__.os.popen('id').read() >>",
    # environment variables
    "<< lipsum.__globals__.os.environ >>",
    "<< cycler.__init__.__globals__.os.environ." + ENV_NAME + " >>",
    "<< inputs." + ENV_NAME + " >>",
    "<< env.HOME >>",
    "<< inputs.env >>",
    # Python internals
    "<< inputs.__class__ >>",
    "<< inputs.__class__.__mro__[1].__subclasses__() >>",
    "<< ''.__class__.__mro__[1].__subclasses__() >>",
    "<< inputs['__class__'] >>",
    "<< inputs.tag.__class__.__base__ >>",
    "<< (1).__class__ >>",
    "<< inputs.items() >>",
    "<< inputs.tag.upper() >>",
    "<< inputs | attr('__class__') >>",
    "<< inputs.__init__.__globals__ >>",
    "<< self.__init__.__globals__ >>",
    "<< config.items() >>",
    "<< request.application.__globals__ >>",
    "<< namespace(a=1) >>",
    "<< lipsum() >>",
    "<< dict(a=1) >>",
    "<< '{0.__class__}'.format(inputs) >>",
    "<< '%s' % inputs >>",
    "<< '%(tag)s' % inputs >>",
    "<< inputs.tag | map(attribute='__class__') >>",
    "<< inputs | selectattr('__class__') >>",
    "<< inputs.__getattribute__('__class__') >>",
    "<< (inputs.tag | string).__class__ >>",
    # time and memory
    "<< range(10**10) | list >>",
    "<< range(10**10) >>",
    "<< 'a' * 10**10 >>",
    "<< 'ab' * 200000 >>",
    "<< [1] * 10**9 >>",
    "<< 9**(9**(9**9)) >>",
    "<< 10**(10**10) >>",
    "<< 2**100000 >>",
    "<< 2.0**100000 >>",
    "<< inputs.tag * 999999999 >>",
    "<< inputs.big | replace('a', inputs.big) >>",
    "<< inputs.big | b64enc | b64enc | b64enc >>",
    "<< [inputs.big, inputs.big] | join(inputs.big) >>",
    "<< inputs.big | trunc(10**12) | b64enc | b64enc >>",
    # recursion needs a call, and there are none
    "<< f() >>",
    "<< inputs.missing >>",
    "<< caller() >>",
    "<< loop.cycle(1) >>",
]
# Statements and comments are not expressions: kept as they are, never run.
NOT_EXPRESSIONS = [
    "<<% for i in range(10**10) %>>x<<% endfor %>>",
    "<<% macro f() %>>x<<% endmacro %>>",
    "<<# comment #>>",
    "{{ range(10**10) | list }}",
    "{% for i in range(10**10) %}x{% endfor %}",
    "cat <<EOF >> /etc/passwd",
    # A single word, number or string is a heredoc or a shift in a script, not an expression.
    "cat << EOF >> /etc/passwd",
    "<< " + ENV_NAME + " >>",
    "<< environ >>",
    "<< self >>",
    "<< config >>",
    "<< cycler >>",
    "<< joiner >>",
    "<< namespace >>",
    "<< lipsum >>",
    "<< range >>",
]


def _resource_list(expression: str, path: str) -> str:
    root = {
        "apiVersion": "config.kubernetes.io/v1",
        "kind": "ResourceList",
        "items": [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "target", "namespace": "apps"},
                "data": {"x": expression},
            }
        ],
        "functionConfig": {
            "apiVersion": "fn.krmfn.dev/v1alpha1",
            "kind": "RenderInputs",
            "metadata": {"name": "r"},
            "inputs": {"tag": "1.2.3", "path": path, "big": "a" * 200_000},
        },
    }
    return dump_fast(root)


@pytest.fixture
def planted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    secret_file = tmp_path / "secret.txt"
    secret_file.write_text(FILE_CANARY)
    monkeypatch.setenv(ENV_NAME, ENV_CANARY)
    return str(secret_file)


@pytest.mark.parametrize("expression", ESCAPES)
def test_escape_attempt_is_an_error_result(expression: str, planted: str) -> None:
    with time_bound(2.0):
        out, code = FUNCTION.process(_resource_list(expression, planted))
    assert code == 1, out[-600:]
    assert not output_problems(out, code)
    doc = load(out, "fast", Limits())
    errors = [r for r in doc["results"] if r["severity"] == "error"]
    assert [(r["resourceRef"]["name"], r["field"]["path"]) for r in errors] == [("target", "data.x")]
    assert doc["items"][0]["data"]["x"] == expression, "a failed expression must leave the field alone"
    # The message may quote the expression; whatever else it says must not be what the attempt reached.
    message = errors[0]["message"].replace(expression, "<expression>")
    assert "internal error" not in message
    for leaked in (ENV_CANARY, FILE_CANARY, *INTERNALS):
        assert leaked not in message, message
    assert ENV_CANARY not in out and FILE_CANARY not in out


@pytest.mark.parametrize("text", NOT_EXPRESSIONS)
def test_statements_and_comments_are_left_as_text(text: str, planted: str) -> None:
    with time_bound(2.0):
        out, code = FUNCTION.process(_resource_list(text, planted))
    assert code == 0, out[-600:]
    assert load(out, "fast", Limits())["items"][0]["data"]["x"] == text


def test_the_file_and_environment_canaries_are_reachable_outside_the_sandbox(planted: str) -> None:
    """The escape tests mean something: the canaries exist where the attempts look for them."""
    assert Path(planted).read_text() == FILE_CANARY
    assert os.environ[ENV_NAME] == ENV_CANARY
    out, code = FUNCTION.process(_resource_list("<< inputs.path >>", planted))
    assert code == 0
    assert f"x: {planted}" in out


@pytest.mark.parametrize(
    "expression",
    [
        "<< 'a' * 10**10 >>",
        "<< [inputs.big] * 100000 | join >>",
        "<< 9**(9**9) >>",
    ],
)
def test_memory_bombs_fail_cleanly_within_one_gib(expression: str) -> None:
    run = run_cli("render-inputs", _resource_list(expression, "/nonexistent").encode(), memory=ONE_GIB)
    stderr = run.stderr.decode()
    assert run.code == 1
    assert "data.x" in run.stdout.decode()  # the error result, in the output ResourceList
    assert "Traceback" not in stderr and "MemoryError" not in stderr and "internal error" not in stderr
