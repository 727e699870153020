"""``krmfn render DIR``: run a kpt package's Kptfile pipeline in-process, with no kpt, kustomize or cluster.

Every pipeline entry must be one of krmfn's own functions: ``exec: krmfn-<name>``, or an image named
``.../krmfn-<name>:<tag>`` or ``.../krmfn/<name>:<tag>`` (the installed version runs, whatever the tag);
anything else is a clear error that points at ``kpt fn render``. Packages are read and annotated as
kpt reads them (see krmfn.kpt.package), nested packages are rendered first with their own pipelines, and
the whole tree costs one parse and one serialization. The rendered stream goes to stdout;
``--in-place`` writes the files back instead.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from krmfn.errors import KrmfnError, PipelineError
from krmfn.k8s.kobj import Obj, annotations_of, is_local_config
from krmfn.kpt import annotations as kpt_annotations
from krmfn.kpt import key_order
from krmfn.kpt import package as pkg
from krmfn.kpt.pipeline import COMBINED, PipelineEntry
from krmfn.kpt.pipeline import run as run_pipeline
from krmfn.limits import Limits
from krmfn.sdk.cliargs import Parser, UsageError
from krmfn.sdk.clihelp import INTERNAL_EXIT_CODE, epilog
from krmfn.sdk.resourcelist import API_VERSIONS, ResourceList
from krmfn.sdk.results import Result
from krmfn.terminal import write_line
from krmfn.yaml.io import Mode, dump_fast, plain

USAGE = """usage: krmfn render DIR [--in-place] [--yaml fast|fidelity] [--results-dir DIR]

Runs the Kptfile pipeline of the kpt package DIR (and of its nested packages, first) in-process.
Every pipeline entry must be a krmfn function: `exec: krmfn-<name>` or an image named
`.../krmfn-<name>:<tag>` or `.../krmfn/<name>:<tag>` (the installed version runs).
Prints the rendered objects (no Kptfile, no local config, no kpt bookkeeping annotations) as a
multi-document YAML stream.

  --in-place        write the package files back as `kpt fn render` does, instead of printing
  --yaml MODE       fidelity (the default: each object keeps its file's text, only changes are
                    edited in) or fast (every object re-emitted; for debugging, stdout only)
  --results-dir D   write D/results.yaml (kpt's FunctionResultList) with every function's results
  -h, --help        print this help
"""
HELP = (
    USAGE
    + "\n"
    + epilog(
        (
            ("0", "rendered (printed, or written back with --in-place)"),
            ("1", "a function reported an error, or the package cannot be read: nothing printed or written"),
            ("2", "a usage error (unknown flag, no DIR)"),
            INTERNAL_EXIT_CODE,
        ),
        (
            ("print the rendered stream of a kpt package", "krmfn render examples/staged-deploy"),
            ("render in place, as kpt fn render does, keeping every result", "krmfn render . --in-place "
             "--results-dir /tmp/results"),
        ),
        "README.md",
    )
)  # fmt: skip
_EXEC_PREFIX = "krmfn-"


@dataclass(frozen=True)
class Options:
    directory: Path
    in_place: bool = False
    mode: Mode = "fast"
    results_dir: Path | None = None


@dataclass
class Run:
    """One function run, as kpt's results.yaml records it."""

    package: Path
    entry: dict[str, Any]
    results: list[Result]

    @property
    def failed(self) -> bool:
        return any(r.severity == "error" for r in self.results)


@dataclass
class Rendered:
    items: list[Obj]
    runs: list[Run] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return any(r.failed for r in self.runs)


def main(argv: list[str], stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    out, err = stdout or sys.stdout, stderr or sys.stderr
    try:
        options = parse_args(argv[1:])
    except _Usage as problem:
        if problem.show_help:
            out.write(HELP)
            return 0
        write_line(err, f"krmfn render: {problem}")
        err.write(USAGE)
        return 2
    try:
        package = pkg.read(options.directory, options.mode)
        from krmfn.functions.render_inputs.values import budget

        with budget(Limits.from_env()):  # one budget for the expressions of every pipeline of the tree
            rendered = render_package(package)
    except (KrmfnError, OSError, UnicodeDecodeError) as problem:
        write_line(err, f"krmfn render: {problem}")
        return 1
    if options.results_dir is not None:
        write_results(options.results_dir, rendered)
    for run in rendered.runs:
        for result in run.results:
            if result.severity != "info":
                write_line(err, f"krmfn render: {_name(run.entry)}: {result.describe()}")
    if rendered.failed:
        return 1

    def warn(message: str) -> None:  # a document written anew instead of edited
        write_line(err, f"krmfn render: warning: {message}")

    if options.in_place:
        try:
            pkg.write(package, rendered.items, options.mode, warn)
        except (KrmfnError, OSError) as problem:
            write_line(err, f"krmfn render: {problem}")
            return 1
    else:
        out.write(stream(rendered.items, options.mode, package, warn))
    return 0


class _Usage(Exception):
    def __init__(self, message: str = "", show_help: bool = False) -> None:
        super().__init__(message)
        self.show_help = show_help


def parser() -> Parser:
    found = Parser("krmfn render")
    found.add_argument("directory", nargs="*")
    found.add_argument("--in-place", action="store_true")
    found.add_argument("--yaml", dest="mode", default="", metavar="MODE")
    found.add_argument("--results-dir", type=Path, metavar="DIR")
    return found


def parse_args(args: list[str]) -> Options:
    try:
        parsed = parser().parse(args)
    except UsageError as err:
        raise _Usage(str(err)) from None
    if parsed.help:
        raise _Usage(show_help=True)
    if not parsed.directory:
        raise _Usage("the package directory is required")
    if len(parsed.directory) > 1:
        first, second = parsed.directory[:2]
        raise _Usage(f"one package directory expected, got {first!r} and {second!r}")
    if parsed.mode not in ("", "fast", "fidelity"):
        raise _Usage(f"--yaml {parsed.mode!r}: expected fast or fidelity")
    if parsed.in_place and parsed.mode == "fast":
        raise _Usage("--in-place keeps comments and quoting, so it needs --yaml fidelity")
    chosen: Mode = "fast" if parsed.mode == "fast" else "fidelity"
    return Options(Path(parsed.directory[0]), parsed.in_place, chosen, parsed.results_dir)


def render_package(package: pkg.Package) -> Rendered:
    """Render the nested packages, then this package's pipeline over their objects and its own."""
    runs: list[Run] = []
    items: list[Obj] = []
    for sub in package.subpackages:
        done = render_package(sub)
        runs.extend(done.runs)
        if done.failed:
            return Rendered(items, runs)
        items.extend(done.items)
    items.extend(package.items)
    mutators, validators = pipeline_of(package)
    if not mutators and not validators:
        return Rendered(items, runs)
    kpt_annotations.assign_ids(items)
    rl = ResourceList(items=items, root={"apiVersion": API_VERSIONS[0], "kind": "ResourceList"})
    for entries in (mutators, validators):
        for entry, step in entries:
            before = key_order.snapshot(rl.items)
            outcome = run_pipeline(rl, [step])
            key_order.restore_order(rl.items, before)
            runs.append(Run(package.directory, entry, outcome.results))
            if outcome.failed:
                return Rendered(rl.items, runs)
    return Rendered(rl.items, runs)


def pipeline_of(package: pkg.Package) -> tuple[list[tuple[dict[str, Any], PipelineEntry]], ...]:
    pipeline = package.kptfile.get("pipeline") or {}
    if not isinstance(pipeline, dict):
        raise PipelineError(f"{package.directory / pkg.KPTFILE}: pipeline must be a mapping")
    sections = []
    for section in ("mutators", "validators"):
        entries = pipeline.get(section) or []
        if not isinstance(entries, list):
            raise PipelineError(f"{package.directory / pkg.KPTFILE}: pipeline.{section} must be a list")
        sections.append(
            [(entry, _step(package, entry, f"pipeline.{section}[{i}]")) for i, entry in enumerate(entries)]
        )
    return tuple(sections)


def _step(package: pkg.Package, entry: Any, where: str) -> PipelineEntry:
    location = f"{package.directory / pkg.KPTFILE}: {where}"
    if not isinstance(entry, dict):
        raise PipelineError(f"{location}: expected a mapping with exec or image")
    for unsupported in ("selectors", "exclude"):
        if entry.get(unsupported):
            raise PipelineError(
                f"{location}: {unsupported} is not supported by krmfn render; use `kpt fn render`"
            )
    name = function_name(entry)
    if name is None:
        what = entry.get("exec") or entry.get("image") or "(no exec or image)"
        raise PipelineError(
            f"{location}: {what!s} is not a krmfn function; krmfn render runs only "
            "`exec: krmfn-<name>` (or images named krmfn-<name>). Use `kpt fn render --allow-exec` "
            "for pipelines that mix in other functions"
        )
    return PipelineEntry(name, _config(package, entry, location))


def function_name(entry: dict[str, Any]) -> str | None:
    """The krmfn function a pipeline entry runs, or None when it is not one of krmfn's."""
    from krmfn.registry import CANONICAL_ORDER

    known = {*CANONICAL_ORDER, *COMBINED}
    exec_, image = entry.get("exec"), entry.get("image")
    if isinstance(exec_, str) and exec_.strip():
        command, *args = exec_.split()
        # `--yaml` only picks a parser; in-process the package's mode applies
        if any(not a.startswith("--yaml") and a not in ("fast", "fidelity", "auto") for a in args):
            return None
        base = command.rsplit("/", 1)[-1]
        name = base.removeprefix(_EXEC_PREFIX)
        return name if base.startswith(_EXEC_PREFIX) and name in known else None
    if isinstance(image, str) and image.strip():
        # `.../krmfn-<name>:<tag>` (the Dockerfile's naming) or `.../krmfn/<name>:<tag>` (metadata.yaml's)
        parts = image.split("@", 1)[0].split("/")
        base, owner = parts[-1].split(":", 1)[0], parts[-2] if len(parts) > 1 else ""
        if base.startswith(_EXEC_PREFIX) and base.removeprefix(_EXEC_PREFIX) in known:
            return base.removeprefix(_EXEC_PREFIX)
        return base if owner == "krmfn" and base in known else None
    return None


def _config(package: pkg.Package, entry: dict[str, Any], location: str) -> Any:
    path, inline = entry.get("configPath"), entry.get("configMap")
    if path is not None and inline is not None:
        raise PipelineError(f"{location}: set configPath or configMap, not both")
    if inline is not None:
        if not isinstance(inline, dict):
            raise PipelineError(f"{location}: configMap must be a mapping of strings")
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "function-input"},
            "data": dict(inline),
        }
    if path is None:
        return None
    wanted = str(path).removeprefix("./")
    found = [obj for obj in package.items if annotations_of(obj).get(kpt_annotations.I_PATH) == wanted]
    if len(found) != 1:
        raise PipelineError(
            f"{location}: configPath {path!r} must name a file of the package holding one object"
        )
    return found[0]


def _name(entry: dict[str, Any]) -> str:
    return str(entry.get("exec") or entry.get("image") or "?")


def stream(
    items: list[Obj], mode: Mode, package: pkg.Package | None = None, warn: pkg.Warn | None = None
) -> str:
    """The rendered objects a cluster would receive: no Kptfile, no local config, no bookkeeping."""
    kept = [kpt_annotations.strip(obj) for obj in items if not is_local_config(obj)]
    if mode == "fidelity" and package is not None:
        return pkg.stream_text(package, kept, warn)
    return "---\n".join(pkg.dump_one(obj, "compact", "fast") for obj in kept)


def write_results(directory: Path, rendered: Rendered) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    items = []
    for run in rendered.runs:
        key = "exec" if run.entry.get("exec") else "image"
        record: dict[str, Any] = {key: str(run.entry.get(key)), "exitCode": 1 if run.failed else 0}
        if run.results:
            record["results"] = [plain(r.to_dict()) for r in run.results]
        items.append(record)
    doc = {
        "apiVersion": "kpt.dev/v1",
        "kind": "FunctionResultList",
        "metadata": {"name": "fnresults"},
        "exitCode": 1 if rendered.failed else 0,
        "items": items,
    }
    (directory / "results.yaml").write_text(dump_fast(doc), encoding="utf-8")
