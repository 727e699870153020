"""The cases of the kpt fidelity matrix (tests/test_kpt_fidelity_matrix.py): a kpt package written in
the styles a case names, each krmfn function's config in each way kpt passes one, and what each
function's job allows it to change.

A package holds a Deployment (its image, a ConfigMap reference, an ``<< inputs >>`` expression), a
Service, a migration Job and the ConfigMap both read, plus optionally a local-config ConfigMap, in one
file per object or in multi-document files. Style dimensions: comments (none, or in every position: a
document's head, after ``---``, trailing a scalar, trailing a key whose value is a block, lines between
keys and between items, a document's foot, inside a multi-line flow collection, on the lines functions
change), collections (block, or flow wherever YAML allows: labels, annotations, env entries, ports,
a multi-line flow list), quoting (plain where YAML allows, or every style: single, double, literal and
folded blocks with each chomping), anchors and aliases, line breaks (LF or CRLF), local-config files.
The Kptfile is always there and is written in the case's styles too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from covering import Row, pairwise, product
from kustomize_trees import KINDS

FUNCTIONS = (
    "render-inputs",
    "set-image",
    "set-config-checksum",
    "hash-job-names",
    "set-steps",
    "validate-jobs",
    "render",
)
EMITTERS = ("set-steps", "render")  # the functions with an emit list (set-steps', also under render)
CHOICES: dict[str, tuple[Any, ...]] = {
    "function": FUNCTIONS,
    # configPath / configMap in the Kptfile (kpt fn render); key=value / --fn-config (kpt fn eval)
    "config": ("path", "map", "kv", "typed"),
    "emit": ("none", "depends-on", "argocd", "both"),
    "comments": (False, True),
    "flow": (False, True),
    "quoting": ("plain", "every"),
    "anchors": (False, True),
    "multidoc": (False, True),
    "crlf": (False, True),
    "local": (False, True),
}
EMIT_LISTS = {
    "none": [],
    "depends-on": ["depends-on"],
    "argocd": ["argocd"],
    "both": ["depends-on", "argocd"],
}


def valid(row: Row) -> bool:
    """Only set-steps (and render, which runs it) has an emit list."""
    return not (
        "function" in row and "emit" in row and row["function"] not in EMITTERS and row["emit"] != "none"
    )


@dataclass(frozen=True)
class Case:
    function: str
    config: str
    emit: str
    comments: bool
    flow: bool
    quoting: str
    anchors: bool
    multidoc: bool
    crlf: bool
    local: bool

    @property
    def id(self) -> str:
        """``function_config[_emit-X]_quoting-Y[_flag...]`` (usable in ``pytest -k``)."""
        flags = [n for n in ("comments", "flow", "anchors", "multidoc", "crlf", "local") if getattr(self, n)]
        emit = [f"emit-{self.emit}"] if self.function in EMITTERS else []
        return "_".join([self.function, self.config, *emit, f"quoting-{self.quoting}", *flags])

    @property
    def by_eval(self) -> bool:
        return self.config in ("kv", "typed")


MATRIX = [Case(**row) for row in product(CHOICES, valid)]
QUICK = [Case(**row) for row in pairwise(CHOICES, valid)]

# --- the package ---------------------------------------------------------------------------------------


@dataclass
class Style:
    case: Case

    def c(self, text: str) -> str:
        """A trailing comment."""
        return f"  # {text}" if self.case.comments else ""

    def line(self, pad: str, text: str) -> str:
        """A comment on a line of its own."""
        return f"{pad}# {text}\n" if self.case.comments else ""

    def single(self, text: str) -> str:
        return f"'{text}'" if self.case.quoting == "every" else text

    def double(self, text: str) -> str:
        return f'"{text}"' if self.case.quoting == "every" else text

    def needs(self, text: str) -> str:
        """A value YAML reads as something else unquoted: single quotes, or double in every style."""
        return f'"{text}"' if self.case.quoting == "every" else f"'{text}'"

    def document(self, name: str, body: str) -> str:
        return self.line("", f"the {name}") + body + self.line("", f"end of the {name}")


def deployment(s: Style) -> str:
    case = s.case
    labels = "{app: web, tier: " + s.needs("1") + "}"
    anchor = "&labels " if case.anchors else ""
    if case.flow:
        meta_labels = f"  labels: {anchor}{labels}{s.c('which app')}\n"
        annotations = f"  annotations: {{team: web}}{s.c('owner')}\n"
        match = f"    matchLabels: {'*labels' if case.anchors else labels}\n"
        template_meta = f"    metadata: {{labels: {'*labels' if case.anchors else labels}}}\n"
        comment = s.c("the first")
        args = (
            "        args: [\n"
            f"          --port=80,{comment}\n"
            f"          {s.double('--ratio=1e3')}\n"
            "        ]\n"
        )
        env = (
            f"        - {{name: MODE, value: {s.needs('0755')}}}\n"
            f"        - {{name: GREETING, value: {s.double('<< inputs.greeting >>')}}}\n"
            f'        - {{name: WORLD, value: "héllo wörld ✓"}}\n'
        )
        tail = "        envFrom: [{configMapRef: {name: settings}}]\n        ports: [{containerPort: 80}]\n"
    else:
        block_labels = f"    app: web\n    tier: {s.needs('1')}\n"
        meta_labels = f"  labels:{' &labels' if case.anchors else ''}{s.c('which app')}\n{block_labels}"
        annotations = f"  annotations:\n    team: web{s.c('owner')}\n"
        match = (
            "    matchLabels: *labels\n"
            if case.anchors
            else "    matchLabels:\n  " + block_labels.replace("\n    ", "\n      ")
        )
        template_meta = (
            "    metadata:\n      labels: *labels\n"
            if case.anchors
            else "    metadata:\n      labels:\n" + block_labels.replace("    ", "        ")
        )
        args = (
            "        args:\n"
            f"        - --port=80{s.c('the first')}\n"
            + s.line("        ", "between items")
            + f"        - {s.double('--ratio=1e3')}\n"
        )
        env = (
            f"        - name: MODE\n          value: {s.needs('0755')}\n"
            f"        - name: GREETING\n          value: {s.double('<< inputs.greeting >>')}\n"
            + s.line("        ", "a greeting in every script")
            + '        - name: WORLD\n          value: "héllo wörld ✓"\n'
        )
        tail = (
            "        envFrom:\n        - configMapRef:\n            name: settings\n"
            "        ports:\n        - containerPort: 80\n"
        )
    body = (
        "apiVersion: apps/v1\n"
        "kind: Deployment\n"
        "metadata:\n"
        f"  name: {s.single('web')}{s.c('the name')}\n"
        "  namespace: apps\n"
        + s.line("  ", "labels say which app this is")
        + meta_labels
        + annotations
        + "spec:\n"
        "  replicas: 2\n"
        "  selector:\n" + match + "  template:\n" + template_meta + "    spec:\n"
        f"      containers:{s.c('the containers')}\n"
        + s.line("      ", "the only one")
        + "      - name: web\n"
        f"        image: {s.double('ghcr.io/acme/web:1.0')}{s.c('pinned')}\n"
        + args
        + "        env:\n"
        + env
        + tail
    )
    return s.document("web front end", body)


def service(s: Style) -> str:
    selector = "  selector: {app: web}\n" if s.case.flow else "  selector:\n    app: web\n"
    body = (
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: apps\nspec:\n"
        + selector
        + "  ports:\n  - port: 80\n"
        + s.line("    ", "the container's port")
        + "    targetPort: 8080\n"
    )
    return s.document("service", body)


def job(s: Style) -> str:
    case = s.case
    if case.flow:
        template_meta = "    metadata: {labels: {app: migrate}}\n"
        command = '        command: ["/bin/sh", "-c"]\n'
        env_from = "        envFrom: [{configMapRef: {name: settings}}]\n"
    else:
        template_meta = "    metadata:\n      labels:\n        app: migrate\n"
        command = f"        command:\n        - /bin/sh\n        - {s.double('-c')}\n"
        env_from = "        envFrom:\n        - configMapRef:\n            name: settings\n"
    script = (
        "        - |\n          echo migrating\n          echo done\n"
        if case.quoting == "every"
        else "        - echo migrating; echo done\n"
    )
    body = (
        "apiVersion: batch/v1\n"
        "kind: Job\n"
        "metadata:\n"
        f"  name: {s.single('migrate')}{s.c('renamed by hash-job-names')}\n"
        "  namespace: apps\n"
        "spec:\n"
        "  backoffLimit: 2\n"
        "  template:\n" + template_meta + "    spec:\n"
        "      restartPolicy: Never\n"
        "      containers:\n"
        "      - name: m\n"
        f"        image: {s.double('ghcr.io/acme/migrate:1.0')}\n"
        + command
        + "        args:\n"
        + script
        + env_from
    )
    return s.document("migration", body)


def settings(s: Style) -> str:
    case = s.case
    if case.flow:
        data = (
            f"data: {{mode: {s.needs('0644')}, level: {s.needs('N')}, release: "
            f'{s.double("<< inputs.release >>")}, script: "#!/bin/sh\\necho ready\\n"}}\n'
        )
    elif case.quoting == "every":
        data = (
            "data:\n"
            '  mode: "0644"\n'
            "  level: 'N'\n"
            '  release: "<< inputs.release >>"\n'
            + s.line("  ", "the scripts")
            + "  script: |\n    #!/bin/sh\n    echo ready\n"
            "  motd: >-\n    folded text\n    over two lines\n"
            "  kept: |+\n    trailing\n\n"
            '  escaped: "tab\\there"\n'
            "  empty: ''\n"
        )
    else:
        data = (
            "data:\n  mode: '0644'\n  level: 'N'\n  release: << inputs.release >>\n"
            + s.line("  ", "the scripts")
            + "  script: '#!/bin/sh'\n"
        )
    body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: apps\n" + data
    return s.document("settings", body)


def local_values(s: Style) -> str:
    notes = (
        f"  annotations: {{config.kubernetes.io/local-config: {s.needs('true')}}}\n"
        if s.case.flow
        else "  annotations:\n"
        f"    config.kubernetes.io/local-config: {s.needs('true')}{s.c('never deployed')}\n"
    )
    data = (
        'data: {ports: "[{a: 1}]", flag: "yes"}\n'
        if s.case.flow
        else "data:\n  ports: '[{a: 1}]'\n  flag: 'yes'\n"
    )
    body = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: local-values\n  namespace: apps\n" + notes + data
    )
    return s.document("local values", body)


def _join(docs: list[str]) -> str:
    return "---\n".join(docs)


def package_files(case: Case, eval_as_render: bool = False) -> dict[str, str]:
    """The files of ``case``'s package. ``eval_as_render``: for a ``kpt fn eval`` case, the same function
    and config as a Kptfile pipeline (what ``krmfn render --in-place`` runs in its place)."""
    s = Style(case)
    docs = {"web": deployment(s), "service": service(s), "job": job(s), "settings": settings(s)}
    if case.local:
        docs["local"] = local_values(s)
    files: dict[str, str] = {}
    if case.multidoc:
        files["app.yaml"] = _join([docs["web"], docs["service"], docs["job"]])
        files["config.yaml"] = _join([docs["settings"], *([docs["local"]] if case.local else [])])
    else:
        files.update({f"{name}.yaml": text for name, text in docs.items()})
    config = function_config(case)
    if case.config == "path" or (eval_as_render and case.config == "typed"):
        files["fn-config.yaml"] = typed_text(case, local=True)
    files["Kptfile"] = kptfile(case, pipeline=not case.by_eval or eval_as_render, config=config)
    if case.crlf:
        files = {name: text.replace("\n", "\r\n") for name, text in files.items()}
    return files


def kptfile(case: Case, pipeline: bool, config: dict[str, Any]) -> str:
    s = Style(case)
    meta = (
        f"metadata: {{name: app, annotations: {{config.kubernetes.io/local-config: {s.needs('true')}}}}}\n"
        if case.flow
        else f"metadata:\n  name: app{s.c('the package')}\n  annotations:\n"
        f"    config.kubernetes.io/local-config: {s.needs('true')}\n"
    )
    text = (
        "apiVersion: kpt.dev/v1\nkind: Kptfile\n"
        + meta
        + f"info:\n  description: {s.double('a package in every style')}\n"
    )
    if not pipeline:
        return s.document("package", text)
    entry = f"  - exec: krmfn-{case.function}{s.c('the function under test')}\n"
    if case.config in ("path", "typed"):
        entry += "    configPath: fn-config.yaml\n"
    else:
        entry += "    configMap:\n" + "".join(
            f"      {key}: {_single_quoted(value)}\n" for key, value in configmap_data(case).items()
        )
    return s.document(
        "package", text + "pipeline:\n" + s.line("  ", "one function") + "  mutators:\n" + entry
    )


def _single_quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


# --- each function's config ------------------------------------------------------------------------------

INPUTS = {"release": "v1.5", "greeting": "hello"}
IMAGE_OLD, IMAGE_NEW = "ghcr.io/acme/web:1.0", "ghcr.io/acme/web:2.0"
STEPS = [
    {
        "name": "pre-deploy",
        "timeout": "5m",
        "selectors": [{"kind": "Job", "name": "migrate"}, {"kind": "ConfigMap", "name": "settings"}],
    },
    {"name": "deploy", "timeout": "10m"},
]


def _set_steps(case: Case) -> dict[str, Any]:
    body: dict[str, Any] = {"defaultStep": "deploy", "app": "shop", "steps": STEPS}
    if EMIT_LISTS[case.emit]:
        body["emit"] = EMIT_LISTS[case.emit]
    return body


def function_config(case: Case) -> dict[str, Any]:
    """The config's body (no apiVersion, kind, metadata)."""
    bodies: dict[str, Callable[[], dict[str, Any]]] = {
        "render-inputs": lambda: {"inputs": dict(INPUTS)},
        "set-image": lambda: {"images": [{"name": "ghcr.io/acme/web", "newTag": "2.0"}]},
        "set-config-checksum": lambda: {"strict": True},
        "hash-job-names": lambda: {"selectors": [{"kind": "Job"}]},
        "set-steps": lambda: _set_steps(case),
        "validate-jobs": lambda: {"severity": {"concurrency-policy-default": "info"}},
        "render": lambda: {
            "renderInputs": {"inputs": dict(INPUTS)},
            "setImage": {"images": [{"name": "ghcr.io/acme/web", "newTag": "2.0"}]},
            "setConfigChecksum": {"strict": True},
            "hashJobNames": {},
            "setSteps": _set_steps(case),
            "validateJobs": {},
        },
    }
    return bodies[case.function]()


def configmap_data(case: Case) -> dict[str, str]:
    """The ConfigMap form (``configMap:`` and kpt fn eval's key=value): every value a string."""
    from krmfn.yaml.edit.splice import flow

    body = function_config(case)
    if case.function == "render-inputs":
        return dict(INPUTS)  # every key=value is an input
    if case.function == "set-image":
        return {"name": "ghcr.io/acme/web", "newTag": "2.0"}
    out = {}
    for key, value in body.items():
        if key == "emit":
            out[key] = ",".join(value)
        elif isinstance(value, (dict, list)):
            out[key] = flow(value)
        else:
            out[key] = str(value).lower() if isinstance(value, bool) else str(value)
    return out


def typed_text(case: Case, local: bool) -> str:
    """The typed config in the case's styles (``configPath`` in the package, or ``--fn-config``)."""
    from krmfn.yaml import edit as yamledit

    s = Style(case)
    notes = f"  annotations:\n    config.kubernetes.io/local-config: {s.needs('true')}\n" if local else ""
    head = (
        f"apiVersion: fn.krmfn.dev/v1alpha1\nkind: {KINDS[case.function]}\n"
        f"metadata:\n  name: config{s.c('the function config')}\n" + notes
    )
    body = function_config(case)
    if case.flow:
        from krmfn.yaml.edit.splice import flow

        text = "".join(f"{key}: {flow(value)}\n" for key, value in body.items())
    else:
        text = yamledit.dump_new(body)
    return s.document("function config", head + text)


# --- what each function's job may change -------------------------------------------------------------------


@dataclass
class Job:
    """What a function may change in a package, as kpt writes it back: annotation keys it adds (with an
    ``annotations:`` line where the object had none, or appended to a flow mapping), and values it
    rewrites in place (``rewrites``: its output text -> the text before, applied to its output)."""

    adds: set[str] = field(default_factory=set)
    rewrites: list[tuple[str, str]] = field(default_factory=list)
    before: list[tuple[str, str]] = field(default_factory=list)
    """Applied to the no-op render instead: the expressions render-inputs renders -> their values."""
    done: list[Callable[[str], str]] = field(default_factory=list)
    """Checks that the function did its job on the whole package text: each returns a problem or ''."""

    def merge(self, other: Job) -> Job:
        return Job(
            self.adds | other.adds,
            self.rewrites + other.rewrites,
            self.before + other.before,
            self.done + other.done,
        )


STEP_KEYS = {
    "krmfn.dev/step",
    "krmfn.dev/step-index",
    "krmfn.dev/step-timeout",
    "krmfn.dev/wait",
    "krmfn.dev/app",
}
EMIT_KEYS = {"depends-on": "config.kubernetes.io/depends-on", "argocd": "argocd.argoproj.io/sync-wave"}
CHECKSUM = re.compile(r"krmfn\.dev/config-checksum: ['\"]?sha256:[0-9a-f]{64}")
HASHED = re.compile(r"migrate-[0-9a-f]{8}")


def _count(pattern: re.Pattern[str], wanted: int, what: str) -> Callable[[str], str]:
    return lambda text: (
        "" if len(pattern.findall(text)) == wanted else f"{what}: {len(pattern.findall(text))} of {wanted}"
    )


def _absent(needle: str) -> Callable[[str], str]:
    return lambda text: f"{needle!r} is still there" if needle in text else ""


def _present(needle: str) -> Callable[[str], str]:
    return lambda text: "" if needle in text else f"{needle!r} is missing"


def _steps_job(case: Case) -> Job:
    emitted = {EMIT_KEYS[e] for e in EMIT_LISTS[case.emit]}
    keys = STEP_KEYS | emitted

    def exactly(text: str) -> str:
        found = {k for k in (*STEP_KEYS, *EMIT_KEYS.values()) if f"{k}:" in text}
        return "" if found == keys else f"annotation keys written: {sorted(found)}, expected {sorted(keys)}"

    return Job(adds=keys, done=[exactly])


def job_of(case: Case) -> Job:
    jobs = {
        "render-inputs": lambda: Job(
            before=[(f"<< inputs.{k} >>", v) for k, v in INPUTS.items()], done=[_absent("<< inputs.")]
        ),
        "set-image": lambda: Job(
            rewrites=[(IMAGE_NEW, IMAGE_OLD)], done=[_present(IMAGE_NEW), _absent(IMAGE_OLD)]
        ),
        "set-config-checksum": lambda: Job(
            adds={"krmfn.dev/config-checksum"}, done=[_count(CHECKSUM, 2, "checksums (web, migrate)")]
        ),
        "hash-job-names": lambda: Job(
            adds={"krmfn.dev/job-base-name"},
            rewrites=[(HASHED.pattern, "migrate")],
            done=[
                _count(re.compile(r"name: ['\"]?" + HASHED.pattern), 1, "hashed Job names"),
                _present("krmfn.dev/job-base-name: migrate"),
            ],
        ),
        "set-steps": lambda: _steps_job(case),
        "validate-jobs": Job,
    }
    if case.function == "render":
        merged = Job()
        for name in ("render-inputs", "set-image", "set-config-checksum", "hash-job-names", "set-steps"):
            merged = merged.merge(jobs[name]())
        return merged
    return jobs[case.function]()
