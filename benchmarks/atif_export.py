"""ATIF export throughput: a bare JSON parse, NeMo Gym's own exporter and evalexport, side by side.

    python benchmarks/atif_export.py [--small-mb 50] [--large-mb 200] [--two-turn-mb 105]
                                     [--repeat 3] [--gym-env DIR] [--drop-caches] [--breakdown]

Generates rollouts files of real-shaped NeMo Gym records, every record one Gym's
``TrajectoryRecord`` accepts, in two shapes:

* ``tool-agent``: ~10 KB rows of a math agent that reasons and makes parallel tool calls, as
  rollout collection dumps them (full request and response bodies, ``null`` for unset fields),
  at ``--small-mb`` and ``--large-mb``;
* ``two-turn``: ~5.6 KB rows of a two-turn agent with one tool call and reasoning, as Gym's own
  exporter tests build them, at ``--two-turn-mb``.

On each file, in fresh child processes, it times:

* ``json.loads`` of every line, and nothing else: the floor any exporter stands on;
* the same, writing for each line the very trajectory file the exporters write (their bytes
  read before the clock starts, from a reference export made first): the floor with the file
  system's share, which on some machines is most of an export's time;
* ``nemo_gym.atif_export.export_rollouts_to_atif``, in a NeMo Gym 0.7.0 environment (built on
  first use in ``--gym-env``, default ``~/.cache/evalexport/gym-benchmark-env``, ~420 MB);
* ``evalexport atif``, as installed here.

It prints trajectories/s, MB/s (from the median of ``--repeat`` rounds, the contestants taking
turns) and peak RSS (of the largest process) of each, evalexport's speed as
a ratio to Gym's and to the bare parse, and evalexport's peak memory growth from the small file
to the large one. The two exporters' outputs are compared file for file, too.

Files are written under the system's temporary directory (``TMPDIR``): its file system is
measured too. ``--drop-caches`` (root) empties the page cache before each contestant, for
figures that do not depend on the order the contestants run in.

``--breakdown`` prints instead where evalexport's CPU time per row goes, stage by stage, in one
process (see :func:`breakdown`).
"""

from __future__ import annotations

import argparse
import filecmp
import gc
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

from evalexport.testing.factory import make_rollout, make_two_turn_rollout
from evalexport.testing.gym import ensure_gym_environment

AGENT = "aime24_math_tool_agent"
SHAPES = {
    "tool-agent": lambda rng, task, rollout: make_rollout(rng, task, rollout, AGENT),
    "two-turn": make_two_turn_rollout,
}
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
BARE_WITH_FILES = (
    """
import json, os, sys
# The very files the exporters write, read before the clock starts: the floor writes them.
REFERENCE = sys.argv[3]
FILES = {name: open(os.path.join(REFERENCE, name), "rb").read()
         for name in os.listdir(REFERENCE) if name.endswith(".json")}
def run(rollouts, output):
    os.mkdir(output)
    count = 0
    with open(rollouts, "rb") as handle:
        for line in handle:
            row = json.loads(line)
            count += 1
            name = f"{row['_ng_task_index']}-{row['_ng_rollout_index']}.json"
            with open(os.path.join(output, name), "wb") as file:
                file.write(FILES[name])
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
from evalexport.backends.atif.exporter import AtifExporter
from evalexport.spec.options import parse_options
from evalexport.run import RunArtifacts
from evalexport.pipeline import export_run
def run(rollouts, output):
    exporter = AtifExporter()
    config = parse_options(exporter, {"rollouts_jsonl_fpath": rollouts, "output_dirpath": output,
                                    "session_id": "bench", "agent_version": "1.0"})
    result = export_run(exporter, RunArtifacts.from_rollouts_path(rollouts), config)
    assert result.status == "succeeded", result.message
    return result.details["trajectory_count"]
"""
    + _MEASURE
)


def write_rollouts(path: Path, target_bytes: int, shape: str) -> int:
    rng = random.Random(7)
    written = rows = 0
    with path.open("w", encoding="utf-8") as handle:
        while written < target_bytes:
            task, rollout = divmod(rows, 4)
            line = json.dumps(SHAPES[shape](rng, task, rollout), ensure_ascii=False) + "\n"
            handle.write(line)
            written += len(line.encode())
            rows += 1
    return rows


DROP_CACHES = Path("/proc/sys/vm/drop_caches")


def _run(
    python: str,
    program: str,
    rollouts: Path,
    output: Path,
    reference: Path,
    *,
    drop_caches: bool = False,
) -> dict[str, float]:
    os.sync()  # the previous contestant's writes must not be flushed on this one's time
    if drop_caches:
        DROP_CACHES.write_text("3\n")
    completed = subprocess.run(
        [python, "-c", program, str(rollouts), str(output), str(reference)],
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise SystemExit(f"benchmark child failed:\n{completed.stderr[-3000:]}")
    figures: dict[str, float] = json.loads(completed.stdout.strip().splitlines()[-1])
    return figures


CONTESTANTS: Final = ("bare json.loads", "json.loads+files", "NeMo Gym 0.7.0", "evalexport")


def measure(
    directory: Path,
    shape: str,
    megabytes: int,
    gym_python: Path,
    *,
    repeat: int = 1,
    drop_caches: bool = False,
) -> dict[str, dict[str, float]]:
    """Each contestant's figures on one generated file: the median time of ``repeat`` rounds
    (the contestants take turns in each round) and the largest peak RSS."""
    directory = directory / f"{shape}-{megabytes}"
    directory.mkdir()
    rollouts = directory / "bench_rollouts.jsonl"
    rows = write_rollouts(rollouts, megabytes * 1_000_000, shape)
    size_mb = rollouts.stat().st_size / 1e6
    programs = dict(
        zip(
            CONTESTANTS,
            (
                (sys.executable, BARE),
                (sys.executable, BARE_WITH_FILES),
                (str(gym_python), GYM),
                (sys.executable, EVALEXPORT),
            ),
            strict=True,
        )
    )
    reference = directory / "reference"  # the files every exporter writes: the floor writes them
    _run(sys.executable, EVALEXPORT, rollouts, reference, reference)
    seconds: dict[str, list[float]] = {name: [] for name in CONTESTANTS}
    peaks: dict[str, list[float]] = {name: [] for name in CONTESTANTS}
    same = True
    for _ in range(repeat):
        for name, (python, program) in programs.items():
            output = directory / name.split()[0]
            figures = _run(python, program, rollouts, output, reference, drop_caches=drop_caches)
            assert figures["count"] == rows, (name, figures, rows)
            seconds[name].append(figures["seconds"])
            peaks[name].append(figures["peak_rss_kib"] / 1024)
        gym_out, our_out = directory / "NeMo", directory / "evalexport"
        comparison = filecmp.dircmp(gym_out, our_out)
        same = same and not (comparison.left_only or comparison.right_only)
        same = same and all(
            filecmp.cmp(gym_out / file, our_out / file, shallow=False)
            for file in comparison.common_files
        )
        for name in CONTESTANTS:  # a large run's 100,000 files must not crowd the next one
            shutil.rmtree(directory / name.split()[0], ignore_errors=True)
    results = {}
    for name in CONTESTANTS:
        median = statistics.median(seconds[name])
        results[name] = {
            "file_mb": size_mb,
            "rows": rows,
            "seconds": median,
            "per_s": rows / median,
            "mb_per_s": size_mb / median,
            "peak_rss_mib": max(peaks[name]),
        }
    results["evalexport"]["same_files_as_gym"] = float(same)
    shutil.rmtree(directory)
    return results


def _cpu_per_line(work: Callable[[int, bytes], object], lines: list[bytes]) -> float:
    """Microseconds of CPU per line of ``work``, the best of three rounds; each line's result
    is dropped at once, as an export drops it, so the garbage collector works as it does
    there."""
    best = math.inf
    for _ in range(3):
        gc.collect()
        started = time.process_time()
        for number, line in enumerate(lines, 1):
            work(number, line)
        best = min(best, time.process_time() - started)
    return best / len(lines) * 1e6


def breakdown(rows_per_shape: int = 2000) -> None:
    """Where evalexport's CPU time per row goes, stage by stage, on one core.

    Each figure is a pipeline one stage longer than the one before, run over every line:
    reading the line as strict JSON, then validating its ``ng_trajectory`` record, then
    converting it to an ATIF document, then encoding the file's bytes, then the whole of the
    export's work on a line (file written and hashed). A stage's cost is its figure less the
    one before it. The bare ``json.loads`` of the same lines is the reference.
    """
    from evalexport.backends.atif import files
    from evalexport.trajectory.convert import (
        ConvertedTrajectory,
        TrajectoryIdentity,
        convert_rollout,
    )
    from evalexport.trajectory.record import validate_record
    from evalexport.trajectory.strict_json import loads_strict_line

    identity = TrajectoryIdentity("bench", "1.0")

    def convert(line: bytes) -> ConvertedTrajectory:
        # As the export converts: strings are searched for lone surrogates only when the line
        # holds a surrogate escape, the one way a lone surrogate gets in.
        surrogate = files.may_hold_lone_surrogate(line)
        return convert_rollout(loads_strict_line(line), identity, check_strings=surrogate)

    for shape, make in SHAPES.items():
        rng = random.Random(7)
        lines = [
            json.dumps(make(rng, *divmod(row, 4)), ensure_ascii=False).encode() + b"\n"
            for row in range(rows_per_shape)
        ]
        figures = {
            "bare json.loads": _cpu_per_line(lambda _, line: json.loads(line), lines),
            "strict parse": _cpu_per_line(lambda _, line: loads_strict_line(line), lines),
            "+ validate record": _cpu_per_line(
                lambda _, line: validate_record(loads_strict_line(line)["ng_trajectory"]), lines
            ),
            "+ convert": _cpu_per_line(lambda _, line: convert(line), lines),
            "+ encode": _cpu_per_line(lambda _, line: convert(line).encode(), lines),
        }
        with tempfile.TemporaryDirectory(prefix="atif-breakdown-") as output:
            job = files._Job(identity, frozenset(), Path(output))
            figures["+ write file and sha256"] = _cpu_per_line(
                lambda number, line: files._convert_line(number, line, job),  # noqa: B023
                lines,
            )
        size = sum(map(len, lines)) / len(lines)
        print(f"{shape}: {len(lines)} rows of {size / 1e3:.1f} KB, microseconds of CPU per row")
        for name, micros in figures.items():
            print(f"  {name:<26} {micros:8.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--small-mb", type=int, default=50)
    parser.add_argument("--large-mb", type=int, default=200)
    parser.add_argument("--two-turn-mb", type=int, default=105)
    parser.add_argument(
        "--gym-env", type=Path, default=Path.home() / ".cache" / "evalexport" / "gym-benchmark-env"
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="rounds per file; times are their medians"
    )
    parser.add_argument("--breakdown", action="store_true", help=breakdown.__doc__)
    parser.add_argument(
        "--drop-caches",
        action="store_true",
        help="empty the page cache before each contestant (needs root): on a VM whose page "
        "cache grows into memory the host has not backed yet, creating a file costs ten times "
        "as much once the cache has grown, and the later contestants would pay for it",
    )
    args = parser.parse_args()
    if args.breakdown:
        breakdown()
        return
    gym_python = ensure_gym_environment(args.gym_env)
    started = time.perf_counter()
    measured: list[tuple[str, int, dict[str, dict[str, float]]]] = []
    with tempfile.TemporaryDirectory(prefix="atif-bench-") as scratch:
        for shape, size in (
            ("tool-agent", args.small_mb),
            ("tool-agent", args.large_mb),
            ("two-turn", args.two_turn_mb),
        ):
            measured.append(
                (
                    shape,
                    size,
                    measure(
                        Path(scratch),
                        shape,
                        size,
                        gym_python,
                        repeat=args.repeat,
                        drop_caches=args.drop_caches,
                    ),
                )
            )
    print(
        f"{'file':>7} {'shape':<11} {'contestant':<16} {'traj/s':>8} {'MB/s':>7} {'seconds':>8} "
        f"{'peak RSS MiB':>13}"
    )
    for shape, _size, results in measured:
        for name, row in results.items():
            print(
                f"{row['file_mb']:5.0f}MB {shape:<11} {name:<16} {row['per_s']:8.0f} "
                f"{row['mb_per_s']:7.2f} {row['seconds']:8.2f} {row['peak_rss_mib']:13.1f}"
            )
    print()
    for shape, size, results in measured:
        ours, gym, bare, floor = (
            results["evalexport"],
            results["NeMo Gym 0.7.0"],
            results["bare json.loads"],
            results["json.loads+files"],
        )
        print(
            f"{shape} {size} MB ({ours['rows']:.0f} rows of "
            f"{ours['file_mb'] * 1e6 / ours['rows'] / 1e3:.1f} KB): evalexport is "
            f"{ours['per_s'] / gym['per_s']:.1f}x Gym's throughput and takes "
            f"{ours['seconds'] / bare['seconds']:.2f}x the bare parse's time "
            f"({ours['seconds'] / floor['seconds']:.2f}x parse and files); "
            f"same files as Gym: {'yes' if ours['same_files_as_gym'] else 'NO'}"
        )
    small, large = (results["evalexport"] for _, _, results in measured[:2])
    print(
        f"evalexport peak memory {small['peak_rss_mib']:.1f} -> {large['peak_rss_mib']:.1f} MiB "
        f"({large['peak_rss_mib'] / small['peak_rss_mib']:.2f}x for "
        f"{large['file_mb'] / small['file_mb']:.1f}x the file); "
        f"total benchmark time {time.perf_counter() - started:.0f} s"
    )


if __name__ == "__main__":
    main()
