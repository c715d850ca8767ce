"""ATIF export throughput and peak memory at two rollouts-file sizes, side by side.

    python benchmarks/atif_export.py [--small-mb 50] [--large-mb 200]

Generates two realistic rollouts files (multi-turn trajectories with tool calls) of about the
given sizes, exports each to ATIF in a fresh child process, and prints rollouts/s, MB/s and the
child's peak RSS. Peak memory should not grow with the file: rollouts stream through.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evalexport.testing.factory import DEFAULT_AGENTS, make_rollout

CHILD = """
import json, resource, sys, time
from evalexport.exporters.atif import AtifExporter
from evalexport.run import RunArtifacts
exporter = AtifExporter()
config = exporter.parse_config({"rollouts_jsonl_fpath": sys.argv[1], "output_dirpath": sys.argv[2], "agent_version": "bench"})
start = time.perf_counter()
result = exporter.export(RunArtifacts.from_rollouts_path(sys.argv[1]), config)
seconds = time.perf_counter() - start
assert result.status == "succeeded", result.message
print(json.dumps({"seconds": seconds, "count": result.details["trajectory_count"],
                  "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def write_rollouts(path: Path, target_bytes: int) -> int:
    rng = random.Random(7)
    written = rows = 0
    with path.open("w", encoding="utf-8") as handle:
        while written < target_bytes:
            task, agent = divmod(rows, len(DEFAULT_AGENTS))
            line = (
                json.dumps(
                    make_rollout(rng, task, rows % 4, DEFAULT_AGENTS[agent]), ensure_ascii=False
                )
                + "\n"
            )
            handle.write(line)
            written += len(line.encode())
            rows += 1
    return rows


def measure(directory: Path, megabytes: int) -> dict[str, float]:
    rollouts = directory / f"bench{megabytes}_rollouts.jsonl"
    rows = write_rollouts(rollouts, megabytes * 1_000_000)
    output = directory / f"atif{megabytes}"
    completed = subprocess.run(
        [sys.executable, "-c", CHILD, str(rollouts), str(output)],
        capture_output=True,
        text=True,
        check=True,
    )
    figures = json.loads(completed.stdout)
    size_mb = rollouts.stat().st_size / 1e6
    return {
        "file_mb": size_mb,
        "rollouts": rows,
        "seconds": figures["seconds"],
        "rollouts_per_s": rows / figures["seconds"],
        "mb_per_s": size_mb / figures["seconds"],
        "peak_rss_mib": figures["peak_rss_kib"] / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--small-mb", type=int, default=50)
    parser.add_argument("--large-mb", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="atif-bench-") as scratch:
        started = time.perf_counter()
        rows = [measure(Path(scratch), size) for size in (args.small_mb, args.large_mb)]
        total = time.perf_counter() - started
    print(
        f"{'file MB':>8} {'rollouts':>9} {'export s':>9} {'rollouts/s':>11} {'MB/s':>7} {'peak RSS MiB':>13}"
    )
    for row in rows:
        print(
            f"{row['file_mb']:8.1f} {row['rollouts']:9d} {row['seconds']:9.2f} "
            f"{row['rollouts_per_s']:11.0f} {row['mb_per_s']:7.2f} {row['peak_rss_mib']:13.1f}"
        )
    small, large = rows
    print(
        f"file size ratio {large['file_mb'] / small['file_mb']:.2f}x, "
        f"peak memory ratio {large['peak_rss_mib'] / small['peak_rss_mib']:.2f}x "
        f"(total benchmark time {total:.0f} s)"
    )


if __name__ == "__main__":
    main()
