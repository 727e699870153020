"""``krmfn status``: what the inventory says the last runs did, and how its members are now.

Reads the ApplySet parent and lists its members; never writes and never takes the lock, so it runs
while an apply does (and then shows that run's holder). Health is the runner's own (status.py), so
"healthy" here means what a waiting step would accept. Exit 0 healthy, 1 otherwise (not healthy, a run
in progress or failed, no inventory, another tool's inventory), 2 a usage error.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from krmfn.errors import RunnerError
from krmfn.k8s.annotations import STEP
from krmfn.k8s.kobj import annotations_of
from krmfn.k8s.step_grouping import UNSTEPPED, index_of
from krmfn.runner.commands.context import RunContext, duration, interruptible
from krmfn.runner.health.status import Health, health
from krmfn.runner.inventory.applyset import TOOLING, Parent
from krmfn.runner.inventory.runs import RunRecord, decode_plan
from krmfn.sdk.cliargs import CommandParser
from krmfn.sdk.clihelp import INTERNAL_EXIT_CODE, epilog
from krmfn.terminal import write_line, write_lines

EXIT_UNHEALTHY = 1
EXIT_USAGE = 2
EXIT_CODES = (
    ("0", "healthy: the last run succeeded, no run is in progress, every member is healthy"),
    ("1", "not healthy: a member is not (yet), the last run failed, a run is in progress, no inventory "
          "of that name, or another tool's; or the cluster is unreachable"),
    ("2", "a usage error (no inventory name, unreadable -f/-k input)"),
    ("130, 143", "interrupted by SIGINT, SIGTERM"),
    INTERNAL_EXIT_CODE,
)  # fmt: skip
EXAMPLES = (
    ("the last run and the live health of the shop app's objects in prod",
     "krmfn status -n prod --applyset shop"),
    ("the last 10 runs as JSON, the inventory named by the rendered objects",
     "krmfn status -f rendered.yaml -n prod --history -o json"),
)  # fmt: skip


def parser() -> argparse.ArgumentParser:
    p = CommandParser(
        prog="krmfn status",
        description="Show what the inventory records of the last run (start, end, result, failed step, "
        "step durations) and the live health of its members by step, by the runner's own health rules: "
        "Jobs completed by their run hash, the lock holder of a run in progress, members not in the last "
        "plan. Reads only: never writes, never takes the lock.",
        epilog=epilog(EXIT_CODES, EXAMPLES, "docs/runner.md#krmfn-status"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--applyset", metavar="NAME",
                   help="the inventory's name (default: as apply finds it in -f/-k: krmfn.dev/app, the "
                   "Kptfile's name)")  # fmt: skip
    src = p.add_mutually_exclusive_group()
    src.add_argument("-f", "--filename", action="append", metavar="FILE|DIR|-",
                     help="rendered manifests that name the app (only the name is read)")  # fmt: skip
    src.add_argument("-k", "--kustomize", metavar="DIR", help="a kustomization that names the app")
    p.add_argument("--enable-alpha-plugins", action="store_true", help="-k: as for apply")
    p.add_argument("--enable-exec", action="store_true", help="-k: as for apply")
    p.add_argument("-n", "--namespace", help="the inventory's namespace (default: the kubeconfig context's)")
    p.add_argument("--history", action="store_true", help="list the last runs recorded (at most 10)")
    p.add_argument("-o", "--output", choices=["text", "json"], default="text",
                   help="text, or one JSON object (docs/runner.md#krmfn-status)")  # fmt: skip
    p.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config)")
    p.add_argument("--context", help="kubeconfig context (default: its current-context)")
    p.add_argument("--retry-timeout", type=duration, default=30.0, metavar="DURATION",
                   help="how long one request retries connection errors, 429 and 5xx answers "
                   "(default 30s)")  # fmt: skip
    p.add_argument(
        "--timeout",
        type=duration,
        default=0.0,
        metavar="DURATION",
        help="bound the whole command, every request in flight included (default: none)",
    )
    return p


@dataclass
class Member:
    object: str
    step_index: int | None
    step: str
    health: Health
    detail: str = ""


@dataclass
class Report:
    name: str
    namespace: str
    tooling: str
    runs: list[RunRecord]
    lock: dict[str, Any] | None
    members: list[Member]
    jobs: list[dict[str, Any]]
    not_in_plan: list[str] | None
    """Members the last run's plan did not have; None when the plan's names were not recorded."""
    plan_count: int
    problems: list[str] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return not self.problems


def _fail(err: RunnerError | str) -> None:
    write_line(sys.stderr, f"krmfn status: {err}")


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv[1:])
    try:
        name = _name(args)
    except RunnerError as err:
        _fail(err)
        return EXIT_USAGE
    from krmfn.net.budget import Budget
    from krmfn.runner.cluster.kube import connect

    budget = Budget(args.timeout)
    run = RunContext(args, [])  # the inventory named by _name: status makes no plan
    try:
        api = run.connect(
            lambda a: connect(a.kubeconfig, a.context, retry_budget=a.retry_timeout, budget=budget)
        )
    except RunnerError as err:
        _fail(err)
        return EXIT_UNHEALTHY
    try:
        with interruptible(budget):
            report = collect(api, name, run.settle_namespace())
    except RunnerError as err:
        _fail(err)
        return EXIT_UNHEALTHY
    except KeyboardInterrupt:
        _fail("interrupted")
        return 128 + (budget.signum or signal.SIGINT)
    finally:
        run.close()
    if args.output == "json":
        sys.stdout.write(json.dumps(report_data(report, args.history), separators=(",", ":")) + "\n")
    else:
        write_text(sys.stdout, report, args.history)
    return 0 if report.healthy else EXIT_UNHEALTHY


def _name(args: argparse.Namespace) -> str:
    from krmfn.k8s.names import name_problem
    from krmfn.runner.errors import SourceError

    if args.applyset is not None:
        problem = name_problem("", "Secret", args.applyset)
        if problem is not None:
            raise SourceError(f"--applyset {args.applyset!r}: {problem}")
        return str(args.applyset)
    if not args.filename and not args.kustomize:
        raise SourceError("name the inventory: --applyset NAME, or -f/-k with the rendered app")
    from krmfn.runner.inventory.identity import identify
    from krmfn.runner.source import kustomize_build, read_files

    if args.kustomize:
        docs = kustomize_build(args.kustomize, alpha_plugins=args.enable_alpha_plugins or args.enable_exec,
                               enable_exec=args.enable_exec)  # fmt: skip
        directories = [args.kustomize]
    else:
        docs = read_files(args.filename)
        directories = [f for f in args.filename if Path(f).is_dir()]
    return identify(docs, None, directories, prune=True).name


def collect(api: Any, name: str, namespace: str, now: datetime | None = None) -> Report:
    """Reads the parent and its members (GET and LIST only) into a report."""
    from krmfn.runner.cluster.api import call
    from krmfn.runner.engine.differ import read_parent
    from krmfn.runner.inventory.inventory import lease_of
    from krmfn.runner.inventory.members import list_members
    from krmfn.runner.plan import key_of

    now = now or datetime.now(UTC)
    parent, live = read_parent(api, name, namespace, call)
    lease = lease_of(live)
    lock = None
    if lease is not None and not lease.expired(now):
        lock = {"holder": lease.holder, "run": lease.run, "since": lease.since.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "status": lease.status(now)}  # fmt: skip
    listed = list_members(api, parent, parent.group_kinds, parent.namespaces | {parent.namespace}, call=call)
    parent_key = key_of(live)
    members: list[Member] = []
    live_jobs: dict[str, dict[str, Any]] = {}
    for obj, _ in sorted(listed, key=lambda m: (_step_order(m[0]), key_of(m[0]))):
        key = key_of(obj)
        if key == parent_key:
            continue
        found = health(obj)
        detail = ""
        if key.group == "batch" and key.kind == "Job":
            ref = f"{key.namespace}/{key.name}"
            live_jobs[ref] = obj
            detail = _job_detail(parent, ref, obj)
        index = index_of(obj)
        step = str(annotations_of(obj).get(STEP) or (UNSTEPPED if index is None else f"step-{index}"))
        members.append(Member(str(key), index, step, found, detail))
    jobs = [
        {"job": ref, "specHash": record.spec_hash, "outcome": record.outcome, "live": ref in live_jobs}
        for ref, record in sorted(parent.jobs.items())
    ]
    count, planned = decode_plan(parent.last_plan)
    not_in_plan = None if planned is None else [m.object for m in members if m.object not in planned]
    report = Report(name, namespace, str(annotations_of(live).get(TOOLING, "")), parent.runs, lock, members,
                    jobs, not_in_plan, count)  # fmt: skip
    report.problems = _problems(report)
    return report


def _step_order(obj: dict[str, Any]) -> int:
    index = index_of(obj)
    return -1 if index is None else index


def _job_detail(parent: Parent, ref: str, job: dict[str, Any]) -> str:
    from krmfn.runner.engine.jobs import SPEC_HASH

    record = parent.jobs.get(ref)
    run = str(annotations_of(job).get(SPEC_HASH, ""))
    if record is None:
        return "no record in the inventory"
    same = "" if not run or run == record.spec_hash else f"; the live Job runs {run[:8]}"
    return f"recorded {record.outcome} for run hash {record.spec_hash[:8]}{same}"


def _problems(report: Report) -> list[str]:
    problems = []
    if report.lock is not None:
        problems.append(f"a run is in progress: {report.lock['holder']} ({report.lock['status']})")
    last = report.runs[-1] if report.runs else None
    if last is not None and last.result != "succeeded" and report.lock is None:
        where = f" at step {last.failed_step}" if last.failed_step else ""
        ended = "ended without recording its end (killed?)" if last.result == "running" else last.result
        problems.append(f"the last run {ended}{where}")
    if last is not None and last.timed_out and report.lock is None:
        steps = ", ".join(last.timed_out)
        problems.append(f"the last run went on past the timeout of step(s) {steps} (onTimeout: continue)")
    for member in report.members:
        if member.health.state != "current":
            problems.append(f"{member.object} is {member.health.state}: {member.health.message}")
    return problems


def _run_data(run: RunRecord) -> dict[str, Any]:
    data = run.data()
    data["seconds"] = run.seconds
    return data


def report_data(report: Report, history: bool) -> dict[str, Any]:
    steps: dict[str, dict[str, Any]] = {}
    for m in report.members:
        entry = steps.setdefault(m.step, {"name": m.step, "index": m.step_index, "objects": []})
        entry["objects"].append({"object": m.object, "state": m.health.state, "message": m.health.message,
                                 "detail": m.detail})  # fmt: skip
    last = report.runs[-1] if report.runs else None
    return {
        "inventory": {"name": report.name, "namespace": report.namespace, "tooling": report.tooling},
        "healthy": report.healthy,
        "problems": report.problems,
        "lock": report.lock,
        "lastRun": _run_data(last) if last is not None else None,
        "runs": [_run_data(r) for r in report.runs] if history else None,
        "steps": list(steps.values()),
        "jobs": report.jobs,
        "lastPlanObjects": report.plan_count,
        "notInLastPlan": report.not_in_plan,
    }


_MARK = {"current": "ok", "failed": "!!", "in-progress": "..", "not-found": "??"}


def _run_line(run: RunRecord) -> str:
    took = f" in {run.seconds:.1f}s" if run.seconds is not None else ""
    text = (
        ("delete " if run.command == "delete" else "")
        + f"{run.result}{took}, started {run.start}"
        + (f", ended {run.end}" if run.end else "")
    )
    if run.timed_out:
        text += f", went on past the timeout of {', '.join(run.timed_out)} (onTimeout: continue)"
    if run.failed_step:
        text += f", failed step {run.failed_step}"
    if run.error:
        text += f": {run.error}"
    return text


def write_text(out: TextIO, report: Report, history: bool) -> None:
    """Every line escaped: names, messages and the records come from the cluster."""
    lines = [f"inventory: Secret {report.namespace}/{report.name} ({report.tooling or 'no tooling'}), "
             f"{len(report.members)} member(s)"]  # fmt: skip
    if report.lock is not None:
        lines.append(
            f"in progress: run {report.lock['run']} by {report.lock['holder']} ({report.lock['status']})"
        )
    runs = report.runs if history else report.runs[-1:]
    if not runs:
        lines.append("last run: not recorded (applied by a krmfn older than the run records)")
    for run in runs:
        lines.append(f"{'run' if history else 'last run'}: {_run_line(run)}")
        durations = ", ".join(f"{s.name} {s.seconds:.1f}s {s.result}" for s in run.steps)
        if durations:
            lines.append(
                f"  steps: {durations}" + (f" (+{run.steps_left_out} more)" if run.steps_left_out else "")
            )
    step = None
    for m in report.members:
        if m.step != step:
            step = m.step
            lines.append(f"step {m.step}:")
        text = f"  {_MARK.get(m.health.state, '??')} {m.object}: {m.health.state}"
        if m.health.message:
            text += f" ({m.health.message})"
        if m.detail:
            text += f"; {m.detail}"
        lines.append(text)
    gone = [j for j in report.jobs if not j["live"]]
    for j in gone:
        lines.append(f"job {j['job']}: {j['outcome']} for run hash {j['specHash'][:8]}, deleted since")
    if report.not_in_plan:
        lines.append(
            f"not in the last plan ({len(report.not_in_plan)}): kept by prune opt-outs or a --no-prune run"
        )
        lines += [f"  {name}" for name in report.not_in_plan]
    elif report.not_in_plan is None and report.plan_count:
        lines.append(f"the last plan had {report.plan_count} object(s), too many to record which")
    lines.append("healthy" if report.healthy else f"not healthy: {'; '.join(report.problems[:5])}"
                 + (f" and {len(report.problems) - 5} more" if len(report.problems) > 5 else ""))  # fmt: skip
    write_lines(out, lines)
    out.flush()
