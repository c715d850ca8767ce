"""Batch export throughput: 200 small runs with 1, 2 and 4 workers, side by side.

    python benchmarks/batch_export.py [--runs 200]

Exports each run to ATIF through ``evalexport plan run`` machinery (one ``evalexport`` process
per export) and prints runs exported per second for each worker count, and the per-run overhead
of the batch against the same export done in-process.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    from evalexport.exporters.atif import AtifExporter
    from evalexport.plans.batch import run_tasks
    from evalexport.plans.model import resolve_tasks, validate_plan
    from evalexport.testing.factory import make_run

    with tempfile.TemporaryDirectory(prefix="batch-bench-") as scratch:
        root = Path(scratch) / "runs"
        benchmarks = [f"bench{i:03d}" for i in range(args.runs)]
        for seed, name in enumerate(benchmarks):
            make_run(root / name, benchmark=name, tasks=2, repeats=2, seed=seed)
        rows = []
        for workers in (1, 2, 4):
            plan = validate_plan(
                {
                    "job": {"benchmarks": benchmarks, "runs_root": str(root)},
                    "exports": {
                        "atif": {
                            "agent_version": "1",
                            "output_dirpath": f"{{run_dir}}/atif-{workers}",
                        }
                    },
                }
            )
            tasks = resolve_tasks(plan)
            start = time.perf_counter()
            outcomes = run_tasks(tasks, workers)
            seconds = time.perf_counter() - start
            assert all(o.result["status"] == "succeeded" for o in outcomes), outcomes[0].result
            rows.append((workers, seconds))

        exporter = AtifExporter()
        single = []
        for index, name in enumerate(benchmarks[:20]):
            rollouts = root / name / f"{name}_rollouts.jsonl"
            config = exporter.parse_config(
                {
                    "rollouts_jsonl_fpath": str(rollouts),
                    "agent_version": "1",
                    "output_dirpath": str(Path(scratch) / f"single-{index}"),
                }
            )
            from evalexport.run import RunArtifacts

            start = time.perf_counter()
            exporter.export(RunArtifacts.from_rollouts_path(rollouts), config)
            single.append(time.perf_counter() - start)
    in_process = statistics.median(single)
    print(f"{args.runs} runs of 8 rollouts each, exported to ATIF")
    print(f"{'workers':>7} {'seconds':>8} {'runs/s':>7} {'speed-up':>9}")
    for workers, seconds in rows:
        print(
            f"{workers:7d} {seconds:8.2f} {args.runs / seconds:7.1f} {rows[0][1] / seconds:8.2f}x"
        )
    per_run = rows[0][1] / args.runs
    print(
        f"single export in-process: {in_process * 1000:.1f} ms; batch with 1 worker: {per_run * 1000:.1f} ms "
        f"per run, so {1000 * (per_run - in_process):.0f} ms of overhead per run (an evalexport process each)"
    )


if __name__ == "__main__":
    main()
