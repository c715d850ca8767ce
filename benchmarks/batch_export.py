"""Batch export: the pool's per-export overhead and its scaling with workers.

    python benchmarks/batch_export.py [--runs 200] [--rollouts 40]

Exports each of ``--runs`` runs to ATIF with ``plan run``'s pool (:mod:`evalexport.plans.pool`)
with 1 and 2 workers, and the same exports in this process, one after another. Prints runs per
second, the per-export overhead of the pool against in-process (the goal: 10 ms or less), the
speed-up of 2 workers over 1 (the goal: 1.8x or more on 2 cores) and, for comparison, what one
``evalexport`` process per export costs (how batches ran before the pool).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _plan(benchmarks: list[str], root: Path, label: str) -> object:
    from evalexport.plans.model import validate_plan

    return validate_plan(
        {
            "job": {"benchmarks": benchmarks, "runs_root": str(root)},
            "exports": {
                "atif": {"agent_version": "1", "output_dirpath": f"{{run_dir}}/atif-{label}"}
            },
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--rollouts", type=int, default=40, help="rollouts per run (tasks x 2)")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes; the median counts")
    args = parser.parse_args()
    from evalexport.plans.batch import export_task, run_tasks
    from evalexport.plans.model import resolve_tasks
    from evalexport.testing.factory import DEFAULT_AGENTS, make_run

    with tempfile.TemporaryDirectory(prefix="batch-bench-") as scratch:
        root = Path(scratch) / "runs"
        benchmarks = [f"bench{i:03d}" for i in range(args.runs)]
        for seed, name in enumerate(benchmarks):
            make_run(
                root / name,
                benchmark=name,
                agents=DEFAULT_AGENTS[:1],  # ATIF keys rows by (task, rollout): one agent
                tasks=args.rollouts // 2,
                repeats=2,
                seed=seed,
            )

        def clean() -> None:
            for name in benchmarks:
                for output in (root / name).glob("atif-*"):
                    shutil.rmtree(output)

        def timed_pass(label: str, run: object) -> float:
            seconds = []
            for _ in range(args.repeats):
                clean()
                tasks = resolve_tasks(_plan(benchmarks, root, label))  # type: ignore[arg-type]
                start = time.perf_counter()
                statuses = run(tasks)  # type: ignore[operator]
                seconds.append(time.perf_counter() - start)
                assert set(statuses) == {"succeeded"}, statuses
            return statistics.median(seconds)

        in_process = timed_pass(
            "in-process", lambda tasks: [export_task(task).status.value for task in tasks]
        )
        pooled = {
            workers: timed_pass(
                f"pool-{workers}",
                lambda tasks, workers=workers: [
                    outcome.result.status.value for outcome in run_tasks(tasks, workers)
                ],
            )
            for workers in (1, 2)
        }
        sample = benchmarks[: min(20, args.runs)]
        clean()
        start = time.perf_counter()
        for name in sample:
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "evalexport",
                    "atif",
                    f"+rollouts_jsonl_fpath={root / name / f'{name}_rollouts.jsonl'}",
                    "+agent_version=1",
                    f"+output_dirpath={root / name / 'atif-process'}",
                ],
                check=True,
                capture_output=True,
            )
        per_process = (time.perf_counter() - start) / len(sample)

    n = args.runs
    per_export = in_process / n
    overhead = pooled[1] / n - per_export
    print(f"{n} runs of {args.rollouts} rollouts each, exported to ATIF; {os.cpu_count()} CPUs")
    print(f"{'how':>22} {'seconds':>8} {'runs/s':>7} {'ms/run':>7}")
    for label, seconds in (
        ("in this process", in_process),
        ("pool, 1 worker", pooled[1]),
        ("pool, 2 workers", pooled[2]),
    ):
        print(f"{label:>22} {seconds:8.2f} {n / seconds:7.1f} {1000 * seconds / n:7.1f}")
    print(f"{'a process per export':>22} {'':8} {1 / per_process:7.1f} {1000 * per_process:7.1f}")
    print(
        f"pool overhead per export: {1000 * overhead:.1f} ms (goal <= 10 ms); "
        f"a process per export: {1000 * (per_process - per_export):.0f} ms"
    )
    print(f"2 workers over 1: {pooled[1] / pooled[2]:.2f}x (goal >= 1.8x)")


if __name__ == "__main__":
    main()
