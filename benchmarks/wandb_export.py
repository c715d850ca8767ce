"""W&B export cost of a big run, offline: evalexport against the bare floor, side by side.

    python benchmarks/wandb_export.py --big-run 50,200,1000 [--repeat 3]

For each size (MB of rollouts, rows as the factory makes them, as ``mlflow_export.py --big-run``
writes them), alternated ``--repeat`` times (medians):

* evalexport: the whole ``evalexport wandb +wandb_mode=offline`` export in a fresh process
  (reading, hashing, both tables, the worker, ``wandb.init`` and the run's files);
* the floor: reading and hashing the three files once, then a worker in the same W&B
  environment that only calls ``wandb.init`` offline and logs the same two tables, built by
  evalexport beforehand (untimed), as the exporter logs them (a run's history keeps a table
  of at most ``wandb.Table.MAX_ROWS`` rows; a bigger one goes whole into a table artifact).

Prints the wall times, their ratio, the peak RSS of the evalexport process and of its worker,
and the worker's own memory (the largest anonymous memory of any process the export started,
sampled: without the staged table file W&B maps to hash it, which its RSS counts). Builds (or reuses) the wandb exporter's environment: needs the package index the first
time.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

FLOOR_BODY = """
def run(payload):
    import json, wandb
    run = wandb.init(
        project="floor", mode="offline", dir=payload["dir"],
        settings=wandb.Settings(silent=True, console="off", save_code=False, disable_git=True),
    )
    history, artifact = {}, None
    for key, path in payload["tables"]:
        table = json.loads(open(path, encoding="utf-8").read())
        rows = table["data"]
        if len(rows) <= wandb.Table.MAX_ROWS:
            history[key] = wandb.Table(columns=table["columns"], data=rows)
            continue
        if artifact is None:
            artifact = wandb.Artifact(f"run-{run.id}-tables", type="rollouts")
        size = wandb.Table.MAX_ARTIFACT_ROWS
        for number in range(0, len(rows), size):
            part = wandb.Table(columns=table["columns"], data=rows[number:number + size])
            artifact.add(part, f"{key}-{number // size}")
    if history:
        run.log(history)
    if artifact is not None:
        run.log_artifact(artifact)
    run.finish()
    return {"status": "succeeded", "exit_code": 0, "message": "floor", "details": {}}
"""


def _mlflow_benchmark() -> Any:
    """``mlflow_export.py``: its big run (``make_rollouts``) and its export in a fresh process
    (``EXPORT_IN_A_PROCESS``, given the exporter's name), shared by both benchmarks."""
    path = Path(__file__).with_name("mlflow_export.py")
    spec = importlib.util.spec_from_file_location("_mlflow_export_benchmark", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _hash_once(paths: tuple[Path, ...]) -> None:
    for path in paths:
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            while chunk := handle.read(2**20):
                digest.update(chunk)


def big_run(
    sizes: list[int], repeat: int = 3, scratch_root: Path | None = None
) -> list[dict[str, Any]]:
    """Export each size ``repeat`` times both ways; print the table and return its rows."""
    from evalexport.backends.wandb.exporter import WandbExporter
    from evalexport.isolation import EnvironmentSpec, ensure_environment, run_worker
    from evalexport.run import RunArtifacts
    from evalexport.tables.prepare import prepare

    exporter = WandbExporter()
    shared = _mlflow_benchmark()
    requirement = exporter.Config.model_fields["requirement"].default
    environment = ensure_environment(EnvironmentSpec("wandb", (requirement,)))
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="wandb-big-", dir=scratch_root) as scratch_name:
        scratch = Path(scratch_name)
        body = scratch / "floor.py"
        body.write_text(FLOOR_BODY)
        for megabytes in sizes:
            rollouts: Path = shared.make_rollouts(scratch / f"run{megabytes}", megabytes)
            run = RunArtifacts.from_rollouts_path(rollouts)
            prepared = prepare(run, rollouts_table=True)  # the same tables, untimed
            assert prepared.rollouts_table is not None
            tables = [
                ["Rollouts", str(prepared.rollouts_table)],
                ["Samples", str(prepared.rollouts_table.with_name("samples.json"))],
            ]
            ours_runs: list[dict[str, Any]] = []
            unmasked_runs: list[dict[str, Any]] = []
            floors: list[float] = []
            try:
                for attempt in range(repeat):  # alternated, so load hits both alike
                    wandb_dir = scratch / f"wandb-{megabytes}-{attempt}"
                    (wandb_dir / "ours").mkdir(parents=True)
                    options = {
                        "rollouts_jsonl_fpath": str(rollouts),
                        "wandb_mode": "offline",
                        "wandb_project": f"big{megabytes}",
                    }
                    for masked in (True, False):  # the rows through the egress gate, or not
                        run.export_marker("wandb").unlink(missing_ok=True)  # export anew
                        where = wandb_dir / ("ours" if masked else "unmasked")
                        where.mkdir(exist_ok=True)
                        completed = subprocess.run(
                            [
                                sys.executable,
                                "-c",
                                shared.EXPORT_IN_A_PROCESS,
                                json.dumps({**options, "mask_rows": masked}),
                                "wandb",
                            ],
                            check=True,
                            capture_output=True,
                            text=True,
                            env={**os.environ, "WANDB_DIR": str(where)},
                        )
                        ours = json.loads(completed.stdout)
                        if ours["status"] != "succeeded":
                            raise SystemExit(f"the export failed: {ours['message']}")
                        (ours_runs if masked else unmasked_runs).append(ours)
                    floor_dir = wandb_dir / "floor"
                    floor_dir.mkdir()
                    start = time.perf_counter()
                    _hash_once((run.rollouts, run.aggregate_metrics, run.saved_config))
                    outcome = run_worker(
                        environment,
                        body,
                        {"dir": str(floor_dir), "tables": tables},
                        time_limit=3600,
                    )
                    floors.append(time.perf_counter() - start)
                    if outcome.result is None or outcome.result["status"] != "succeeded":
                        raise SystemExit(f"the floor failed: {outcome.log_tail()}")
            finally:
                prepared.discard()
            rows.append(
                {
                    "megabytes": megabytes,
                    "seconds": statistics.median(r["seconds"] for r in ours_runs),
                    "unmasked": statistics.median(r["seconds"] for r in unmasked_runs),
                    "floor": statistics.median(floors),
                    "rss_mb": max(r["rss_mb"] for r in ours_runs),
                    "worker_rss_mb": max(r["worker_rss_mb"] for r in ours_runs),
                    "worker_anonymous_mb": max(r["worker_anonymous_mb"] for r in ours_runs),
                }
            )
    print(
        f"{'rollouts':>9} {'evalexport s':>13} {'unmasked s':>11} {'floor s':>8} {'ratio':>6} "
        f"{'unmasked':>9} {'masking':>8} {'RSS MB':>7} {'worker RSS MB':>14} {'worker anon MB':>15}"
    )
    for row in rows:
        cost = row["seconds"] - row["unmasked"]
        print(
            f"{row['megabytes']:>6} MB {row['seconds']:13.2f} {row['unmasked']:11.2f} "
            f"{row['floor']:8.2f} {row['seconds'] / row['floor']:5.2f}x "
            f"{row['unmasked'] / row['floor']:8.2f}x {cost:+7.2f}s {row['rss_mb']:7.0f} "
            f"{row['worker_rss_mb']:14.0f} {row['worker_anonymous_mb']:15.0f}"
        )
    first, last = rows[0], rows[-1]
    print(
        f"peak memory from {first['megabytes']} MB to {last['megabytes']} MB: evalexport "
        f"{last['rss_mb'] / first['rss_mb']:.2f}x, its worker's own (anonymous) "
        f"{last['worker_anonymous_mb'] / max(first['worker_anonymous_mb'], 1):.2f}x (goal: within "
        "1.2x; its RSS also counts the staged table file W&B maps to hash it); "
        "time: goal within 1.3x of the floor with the rows masked (ratio), the default; "
        "masking: what the egress gate costs (evalexport s - unmasked s)"
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--big-run", default="50,200", help="comma-separated MB of rollouts")
    parser.add_argument("--repeat", type=int, default=3, help="attempts a size (medians)")
    args = parser.parse_args()
    big_run([int(size) for size in args.big_run.split(",")], args.repeat)


if __name__ == "__main__":
    main()
