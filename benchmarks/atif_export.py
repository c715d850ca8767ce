"""ATIF export throughput: a bare JSON parse, NeMo Gym's own exporter and evalexport, side by side.

    python benchmarks/atif_export.py [--small-mb 50] [--large-mb 200] [--gym-env DIR]

Generates two rollouts files of real-shaped NeMo Gym records (one agent that calls tools and
reasons; every record one Gym's ``TrajectoryRecord`` accepts) of about the given sizes. On each
file, in fresh child processes, it times:

* ``json.loads`` of every line, and nothing else: the floor any exporter stands on;
* ``nemo_gym.atif_export.export_rollouts_to_atif``, in a NeMo Gym 0.7.0 environment (built on
  first use in ``--gym-env``, default ``~/.cache/evalexport/gym-benchmark-env``, ~420 MB);
* ``evalexport atif``, as installed here.

It prints trajectories/s, MB/s and peak RSS (of the largest process) of each, evalexport's speed as
a ratio to Gym's and to the bare parse, and evalexport's peak memory growth from the small file
to the large one. The two exporters' outputs are compared file for file, too.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evalexport.testing.factory import make_rollout
from evalexport.testing.gym import ensure_gym_environment

AGENT = "aime24_math_tool_agent"
_MEASURE = """
import json, resource, sys, time
start = time.perf_counter()
count = run(sys.argv[1], sys.argv[2])
seconds = time.perf_counter() - start
peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
           resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print(json.dumps({"seconds": seconds, "count": count, "peak_rss_kib": peak}))
"""
BARE = (
    """
import json
def run(rollouts, output):
    count = 0
    with open(rollouts, "rb") as handle:
        for line in handle:
            json.loads(line)
            count += 1
    return count
"""
    + _MEASURE
)
GYM = (
    """
from pathlib import Path
from nemo_gym.atif_export import ExportAtifConfig, export_rollouts_to_atif
def run(rollouts, output):
    config = ExportAtifConfig(rollouts_jsonl_fpath=Path(rollouts), output_dirpath=Path(output),
                              session_id="bench", agent_version="1.0")
    return export_rollouts_to_atif(config).trajectory_count
"""
    + _MEASURE
)
EVALEXPORT = (
    """
from evalexport.exporters.atif import AtifExporter
from evalexport.run import RunArtifacts
def run(rollouts, output):
    exporter = AtifExporter()
    config = exporter.parse_config({"rollouts_jsonl_fpath": rollouts, "output_dirpath": output,
                                    "session_id": "bench", "agent_version": "1.0"})
    result = exporter.export(RunArtifacts.from_rollouts_path(rollouts), config)
    assert result.status == "succeeded", result.message
    return result.details["trajectory_count"]
"""
    + _MEASURE
)


def write_rollouts(path: Path, target_bytes: int) -> int:
    rng = random.Random(7)
    written = rows = 0
    with path.open("w", encoding="utf-8") as handle:
        while written < target_bytes:
            task, rollout = divmod(rows, 4)
            line = json.dumps(make_rollout(rng, task, rollout, AGENT), ensure_ascii=False) + "\n"
            handle.write(line)
            written += len(line.encode())
            rows += 1
    return rows


def _run(python: str, program: str, rollouts: Path, output: Path) -> dict[str, float]:
    os.sync()  # the previous contestant's writes must not be flushed on this one's time
    completed = subprocess.run(
        [python, "-c", program, str(rollouts), str(output)],
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise SystemExit(f"benchmark child failed:\n{completed.stderr[-3000:]}")
    figures: dict[str, float] = json.loads(completed.stdout.strip().splitlines()[-1])
    return figures


def measure(directory: Path, megabytes: int, gym_python: Path) -> dict[str, dict[str, float]]:
    rollouts = directory / f"bench{megabytes}_rollouts.jsonl"
    rows = write_rollouts(rollouts, megabytes * 1_000_000)
    size_mb = rollouts.stat().st_size / 1e6
    results = {}
    for name, python, program in (
        ("bare json.loads", sys.executable, BARE),
        ("NeMo Gym 0.7.0", str(gym_python), GYM),
        ("evalexport", sys.executable, EVALEXPORT),
    ):
        figures = _run(python, program, rollouts, directory / f"{name.split()[0]}{megabytes}")
        assert figures["count"] == rows, (name, figures, rows)
        results[name] = {
            "file_mb": size_mb,
            "rows": rows,
            "seconds": figures["seconds"],
            "per_s": rows / figures["seconds"],
            "mb_per_s": size_mb / figures["seconds"],
            "peak_rss_mib": figures["peak_rss_kib"] / 1024,
        }
    gym_out, our_out = directory / f"NeMo{megabytes}", directory / f"evalexport{megabytes}"
    comparison = filecmp.dircmp(gym_out, our_out)
    same = not (comparison.left_only or comparison.right_only) and all(
        filecmp.cmp(gym_out / name, our_out / name, shallow=False)
        for name in comparison.common_files
    )
    results["evalexport"]["same_files_as_gym"] = float(same)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--small-mb", type=int, default=50)
    parser.add_argument("--large-mb", type=int, default=200)
    parser.add_argument(
        "--gym-env", type=Path, default=Path.home() / ".cache" / "evalexport" / "gym-benchmark-env"
    )
    args = parser.parse_args()
    gym_python = ensure_gym_environment(args.gym_env)
    started = time.perf_counter()
    by_size = {}
    with tempfile.TemporaryDirectory(prefix="atif-bench-") as scratch:
        for size in (args.small_mb, args.large_mb):
            by_size[size] = measure(Path(scratch), size, gym_python)
    print(
        f"{'file':>7} {'contestant':<16} {'traj/s':>8} {'MB/s':>7} {'seconds':>8} {'peak RSS MiB':>13}"
    )
    for size, results in by_size.items():
        for name, row in results.items():
            print(
                f"{row['file_mb']:5.0f}MB {name:<16} {row['per_s']:8.0f} {row['mb_per_s']:7.2f} "
                f"{row['seconds']:8.2f} {row['peak_rss_mib']:13.1f}"
            )
        ours, gym, bare = (
            results["evalexport"],
            results["NeMo Gym 0.7.0"],
            results["bare json.loads"],
        )
        print(
            f"  {size} MB ({ours['rows']} rows of {ours['file_mb'] * 1e6 / ours['rows'] / 1e3:.1f} KB): "
            f"evalexport is {ours['per_s'] / gym['per_s']:.1f}x Gym's throughput and takes "
            f"{ours['seconds'] / bare['seconds']:.2f}x the bare parse's time; "
            f"same files as Gym: {'yes' if ours['same_files_as_gym'] else 'NO'}"
        )
    small, large = (by_size[size]["evalexport"] for size in (args.small_mb, args.large_mb))
    print(
        f"evalexport peak memory {small['peak_rss_mib']:.1f} -> {large['peak_rss_mib']:.1f} MiB "
        f"({large['peak_rss_mib'] / small['peak_rss_mib']:.2f}x for "
        f"{large['file_mb'] / small['file_mb']:.1f}x the file); "
        f"total benchmark time {time.perf_counter() - started:.0f} s"
    )


if __name__ == "__main__":
    main()
