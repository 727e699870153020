"""The function runtime: a pure core ``Function.process(text) -> (text, exit code)`` and a thin CLI edge.

A function is a transform over a ResourceList plus a plain-data config class::

    FUNCTION = Function(name="set-image", kind="SetImage", config=SetImageConfig, transform=set_image,
                        summary="...", example=EXAMPLE_YAML)

The transform edits ``rl.items`` in place and reports through ``rl.results``; it should add exactly one
info result that summarizes what it did.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, NoReturn, TextIO, TypeVar

from krmfn.errors import DEBUG_ENV, ConfigError, InputError, KrmfnError
from krmfn.limits import Limits
from krmfn.records import FrozenRecord
from krmfn.sdk import config as cfg
from krmfn.sdk.cliargs import Parser, UsageError
from krmfn.sdk.clihelp import FUNCTION_EXIT_CODES, epilog
from krmfn.sdk.resourcelist import ResourceList, choose_mode, parse, serialize, under_kpt
from krmfn.sdk.results import Result
from krmfn.shutdown import exit_now
from krmfn.terminal import write_line
from krmfn.yaml.io import load_documents

C = TypeVar("C")


@dataclass(frozen=True)
class Function(Generic[C]):
    """A KRM function: its names, config class, transform and help."""

    name: str
    """kebab-case: the console script is ``krmfn-<name>``, the CLI ``krmfn fn <name>``."""
    kind: str
    """functionConfig kind in group fn.krmfn.dev/v1alpha1."""
    config: type[C]
    transform: Callable[[ResourceList, C], None]
    summary: str
    example: str = ""
    """A complete functionConfig in YAML, shown by --help."""
    configmap: Callable[[dict[str, Any]], C] | None = None
    """Reads the ConfigMap form when the default field-by-field reading does not fit."""
    configmap_help: str = "or a ConfigMap with the same keys."
    """How --help describes the ConfigMap form (say what the keys mean when ``configmap`` is custom)."""

    def read_config(self, raw: Any) -> C:
        """Typed object, ConfigMap (incl. kpt's ``function-input`` placeholder) or nothing at all."""
        if raw is None:
            return cfg.parse(self.config, {})
        if not isinstance(raw, dict):
            raise ConfigError("functionConfig must be a mapping", "functionConfig")
        kind, api_version = raw.get("kind"), raw.get("apiVersion")
        if kind == "ConfigMap" and api_version in (None, "v1"):
            data = raw.get("data") or {}
            if not isinstance(data, dict):
                raise ConfigError("expected a mapping of strings", "functionConfig.data")
            try:
                if self.configmap:
                    return self.configmap(dict(data))
                return cfg.from_configmap(self.config, dict(data))
            except ConfigError as err:
                # One root for both forms: the field's path in the functionConfig object.
                field = err.field if err.field.startswith("functionConfig") else _join("data", err.field)
                raise ConfigError(err.reason, field) from None
        if kind != self.kind or api_version != cfg.API_VERSION:
            raise ConfigError(
                f"expected apiVersion {cfg.API_VERSION}, kind {self.kind} (or a ConfigMap); "
                f"got apiVersion {api_version!r}, kind {kind!r}",
                "functionConfig",
            )
        body = {k: v for k, v in raw.items() if k not in ("apiVersion", "kind", "metadata")}
        try:
            return cfg.parse(self.config, body)
        except ConfigError as err:
            raise ConfigError(
                err.reason, f"functionConfig.{err.field}" if err.field else "functionConfig"
            ) from None

    def run(self, rl: ResourceList, raw_config: Any) -> None:
        """Read the config and apply the transform; config errors become error results.

        A result about a field of the functionConfig names the functionConfig as its resource, as the
        KRM functions specification wants a ``resourceRef`` wherever a ``field`` is given.
        """
        start = len(rl.results)
        try:
            config = self.read_config(raw_config)
        except ConfigError as err:
            rl.results.error(err.reason, field=err.field or "functionConfig")
        else:
            self.transform(rl, config)
        finally:
            point_at_config(rl.results[start:], raw_config)

    def process(self, text: str, mode: str | None = None) -> tuple[str, int]:
        """The pure core: ResourceList text in, ResourceList text and exit code out. Never raises."""
        outcome = self.outcome(text, mode)
        return outcome.text, outcome.code

    def outcome(self, text: str, mode: str | None = None, fn_config: Any = None) -> Outcome:
        """``fn_config`` (from ``--fn-config``) replaces the input's functionConfig when given."""

        def body(rl: ResourceList) -> None:
            if fn_config is not None:
                rl.function_config = rl.root["functionConfig"] = fn_config
            self.run(rl, rl.function_config)

        return process_text(text, body, mode)

    def main(
        self,
        argv: Sequence[str] | None = None,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
    ) -> int:
        return run_cli(self.name, self.outcome, self.help_text(), argv, stdin, stdout, stderr)

    def console(self) -> NoReturn:
        """The ``krmfn-<name>`` console script: ``main`` with the process's streams, then an immediate
        exit (krmfn.shutdown: interpreter teardown would cost more than the function's own work)."""
        exit_now(self.main())

    def help_text(self) -> str:
        lines = [
            f"krmfn-{self.name}: {self.summary}",
            "",
            f"usage: krmfn-{self.name} [--yaml fast|fidelity] < resource-list.yaml",
            f"       krmfn-{self.name} [--fn-config FILE] < manifests.yaml",
            f"       krmfn-{self.name} [--fn-config FILE] [--quiet] FILE...",
            "",
            "  --yaml MODE        fidelity (the default: only what changed is rewritten, comments, quotes",
            "                     and flow style kept) or fast (every document re-emitted; for debugging)",
            "  --fn-config FILE   the functionConfig (typed object or ConfigMap), replacing the input's",
            "  -q, --quiet        write no output, only the results on stderr and the exit code (a check)",
            "  -h, --help         print this help",
            "",
            "Reads a ResourceList (KRM Functions Specification) on stdin and writes it to stdout.",
            "Reads a plain stream of KRM objects (`kustomize build`, manifest files) the same way and",
            "writes a stream back; on an error it writes nothing and reports on stderr, so a pipe into",
            "`kubectl apply -f -` applies nothing. --fn-config FILE replaces the input's functionConfig.",
            "FILE... is read instead of stdin, as one stream (a pre-commit hook passes the changed files).",
            f"functionConfig: apiVersion {cfg.API_VERSION}, kind {self.kind},",
            self.configmap_help,
            "",
            "Fields:",
        ]
        for key, form, text, example in cfg.field_docs(self.config):
            lines.append(f"  {key}  ({form})")
            if text:
                lines.append(f"      {text}")
            if example:
                lines.append(f"      example: {example}")
        if self.example:
            lines += [
                "",
                "Example functionConfig:",
                "",
                *("  " + line for line in self.example.strip().splitlines()),
            ]
        examples = (
            ("a kustomize build (or any manifests) through the function, into kubectl",
             f"kustomize build . | krmfn-{self.name} --fn-config fn-config.yaml "
             "| kubectl apply --server-side -f -"),
            ("a kpt package, edited in place",
             f"kpt fn eval --exec krmfn-{self.name} --fn-config fn-config.yaml ."),
        )  # fmt: skip
        page = f"krmfn/functions/{self.name.replace('-', '_')}/README.md"
        return "\n".join(lines) + "\n\n" + epilog(FUNCTION_EXIT_CODES, examples, page)


def _join(root: str, field: str) -> str:
    return f"functionConfig.{root}.{field}" if field else f"functionConfig.{root}"


def point_at_config(results: Sequence[Result], raw_config: Any) -> None:
    """Results about ``functionConfig...`` fields get the functionConfig as their resource."""
    if not isinstance(raw_config, dict) or not isinstance(raw_config.get("kind"), str):
        return
    for result in results:
        if result.obj is None and result.field.partition(".")[0].partition("[")[0] == "functionConfig":
            result.obj = raw_config


class Outcome(FrozenRecord):
    """What one run gives back: the output text, the exit code and the results."""

    __slots__ = _fields = ("text", "code", "results", "on_stderr")

    def __init__(self, text: str, code: int, results: list[Result], on_stderr: bool = True) -> None:
        self.text = text
        self.code = code
        self.results = results
        self.on_stderr = on_stderr
        """Whether the results also go to stderr: not under kpt, which prints the results the output
        ResourceList carries as well as stderr (they would show twice); kustomize shows only stderr."""


def _unreadable(message: str, tags: dict[str, str] | None = None, text: str = "") -> Outcome:
    """The output when there is no input to give back: an empty ResourceList with one error result for
    kpt and other ResourceList callers; nothing at all for a plain stream (``kustomize build | fn |
    kubectl apply -f -`` must apply nothing), the error going to stderr only. An input that does not
    mention a ResourceList is taken for a stream."""
    rl = ResourceList.empty()
    rl.results.error(message, tags=tags or {})
    output = serialize(rl, "fast") if "ResourceList" in text else ""
    return Outcome(output, 1, rl.results)


def _internal(err: Exception) -> str:
    if os.environ.get(DEBUG_ENV):
        raise err
    return f"internal error: {type(err).__name__}: {err} (set {DEBUG_ENV}=1 for a traceback)"


def process_text(text: str, body: Callable[[ResourceList], None], mode: str | None = None) -> Outcome:
    """Parse, run ``body``, serialize; every failure becomes an error result and exit code 1."""
    try:
        chosen = choose_mode(text, mode)
        rl = parse(text, chosen, Limits.from_env())
    except InputError as err:
        return _unreadable(str(err), {"reason": type(err).__name__}, text)
    except Exception as err:  # a bug in reading must not become a traceback either
        return _unreadable(_internal(err), text=text)
    try:
        body(rl)
    except KrmfnError as err:
        rl.results.error(str(err))
    except Exception as err:  # a bug must still produce a valid ResourceList and a readable message
        rl.results.error(_internal(err))
    try:
        code = 1 if rl.results.has_errors else 0
        # kpt prints the results a ResourceList carries (so stderr would show them twice); kustomize
        # and a plain stream show only stderr.
        on_stderr = rl.stream or not under_kpt(text)
        return Outcome(serialize(rl, chosen), code, rl.results, on_stderr=on_stderr)
    except Exception as err:  # nor may a failure to write: no partial output, one error result
        return _unreadable(_internal(err), text="" if rl.stream else "ResourceList")


def run_cli(  # noqa: PLR0917  # mirrors main()'s injectable streams
    name: str,
    process: Callable[[str, str | None, Any], Outcome],
    help_text: str,
    argv: Sequence[str] | None,
    stdin: TextIO | None,
    stdout: TextIO | None,
    stderr: TextIO | None,
) -> int:
    """The only place a function touches stdin, stdout, stderr and files."""
    stdin, stdout, stderr = stdin or sys.stdin, stdout or sys.stdout, stderr or sys.stderr
    try:
        args = parser_of(name).parse(list(sys.argv[1:] if argv is None else argv))
    except UsageError as err:
        write_line(stderr, f"krmfn-{name}: {err}; see --help")
        return 2
    if args.help:
        stdout.write(help_text)
        return 0
    mode: str | None = args.mode
    config_file: str | None = args.fn_config
    fn_config = None
    if config_file is not None:
        try:
            fn_config = read_fn_config(config_file)
        except InputError as err:
            write_line(stderr, f"krmfn-{name}: --fn-config {config_file}: {err}")
            return 2
    if args.files:
        try:
            text = _read_files(args.files)
        except InputError as err:
            write_line(stderr, f"krmfn-{name}: {err}")
            return 2
        outcome = process(text, mode, fn_config)
    else:
        try:
            outcome = process(stdin.read(), mode, fn_config)
        except (UnicodeDecodeError, OSError) as err:
            outcome = _unreadable(f"cannot read stdin: {err}", {"reason": "InputError"})
    try:
        if not args.quiet:
            stdout.write(outcome.text)
            stdout.flush()
    except BrokenPipeError:
        # The reader went away (`... | head`): nothing is left to tell it; exit quietly like other CLIs.
        _silence(stdout)
        return outcome.code or 1
    if outcome.on_stderr:
        for result in outcome.results:
            if result.severity != "info":
                write_line(stderr, f"krmfn-{name}: {result.describe()}")  # names from the manifests
    elif outcome.code:
        # One line that points at the results rather than repeating them (kpt prints both).
        errors = sum(r.severity == "error" for r in outcome.results)
        write_line(stderr, f"krmfn-{name}: {errors} error(s), reported in the output ResourceList's results")
    return outcome.code


def parser_of(name: str) -> Parser:
    """The command line of every function (``--help`` describes it)."""
    parser = Parser(f"krmfn-{name}")
    parser.add_argument("--yaml", dest="mode", metavar="MODE")
    parser.add_argument("--fn-config", metavar="FILE")
    parser.add_argument("--quiet", "-q", action="store_true")
    parser.add_argument("files", nargs="*", metavar="FILE")
    return parser


def _read_files(paths: list[str]) -> str:
    """``FILE...`` instead of stdin (a pre-commit hook passes the changed files): one file is read as it
    is (it may be a ResourceList); several are one stream of their documents."""
    texts = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as file:
                texts.append(file.read())
        except (OSError, UnicodeDecodeError) as err:
            raise InputError(f"{path}: cannot read: {getattr(err, 'strerror', None) or err}") from None
    if len(texts) == 1:
        return texts[0]
    return "".join(text if text.endswith("\n") else text + "\n" for text in (f"---\n{t}" for t in texts))


def read_fn_config(path: str) -> Any:
    """One YAML document: the typed config object or a ConfigMap, as `kpt fn eval --fn-config` takes."""
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"cannot read: {getattr(err, 'strerror', None) or err}") from None
    docs = [doc for doc in load_documents(text, Limits.from_env()) if doc is not None]
    if len(docs) != 1:
        raise InputError(f"expected one YAML document (a functionConfig), found {len(docs)}")
    if not isinstance(docs[0], dict):
        raise InputError("expected a YAML mapping (a functionConfig)")
    return docs[0]


def _silence(stream: TextIO) -> None:
    """Point a broken stdout at /dev/null so the interpreter's final flush cannot print a traceback."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
    except (OSError, ValueError, AttributeError):
        pass
