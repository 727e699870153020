"""The fault campaign's long profile on its own test control plane (a benchmark, not a test).

    python bench/chaos.py --runs 300 --seed 7            # prints every run, then the figures table
    python bench/chaos.py --runs 300 --seed 7 --json out.json

Same driver as the quick profile in the suite (tests/chaos/test_chaos_quick.py); see tests/chaos/campaign.py
for the faults and invariants and RELIABILITY.md for the latest figures. Exit status 1 if any invariant
was violated.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from chaos.campaign import Campaign  # noqa: E402
from cluster.cluster import Cluster, wait_until  # noqa: E402
from lightkube import ApiError  # noqa: E402
from lightkube.models.meta_v1 import ObjectMeta  # noqa: E402
from lightkube.resources.core_v1 import Namespace, ServiceAccount  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--seed", type=int, default=22)
    ap.add_argument("--json", type=Path, help="also write the figures and every run here")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (renders, run outputs)")
    args = ap.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="krmfn-chaos-"))
    cluster = Cluster(workdir / "cluster")
    cluster.up()
    try:
        client = cluster.client()
        namespace = f"chaos-{args.seed}"
        client.create(Namespace(metadata=ObjectMeta(name=namespace)))

        def has_sa() -> bool:
            try:
                client.get(ServiceAccount, "default", namespace=namespace)
            except ApiError:
                return False
            return True

        wait_until("default ServiceAccount", has_sa, 30)
        started = time.time()
        report = Campaign(
            cluster,
            namespace,
            workdir / "runs",
            seed=args.seed,
            runs=args.runs,
            log=lambda line: print(line, flush=True),
        ).run()
        print()
        print(report.table())
        if args.json:
            args.json.write_text(
                json.dumps(
                    {
                        "seed": args.seed,
                        "runs": args.runs,
                        "started": started,
                        "seconds": report.seconds,
                        "checks": dict(report.checks),
                        "violations": report.violations,
                        "records": [
                            {
                                "number": r.number,
                                "fault": r.fault,
                                "injected": r.injected,
                                "delay": r.delay,
                                "codes": r.codes,
                                "seconds": round(r.seconds, 2),
                                "changes": r.render.changes,
                                "violations": r.violations,
                                "errors": r.errors,
                            }
                            for r in report.records
                        ],
                    },
                    indent=1,
                )
            )
        return 1 if report.violations else 0
    finally:
        cluster.down()
        if args.keep:
            print(f"work directory kept: {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
