"""ATIF export throughput: a bare JSON parse, NeMo Gym's own exporter and evalexport, side by side.

    python benchmarks/atif_export.py [--files SHAPE:SIZE ...] [--repeat 3] [--gym-env DIR]
                                     [--before SRC] [--drop-caches] [--breakdown]

Generates rollouts files of real-shaped NeMo Gym records, every record one Gym's
``TrajectoryRecord`` accepts, in three shapes:

* ``tool-agent``: ~10 KB rows of a math agent that reasons and makes parallel tool calls, as
  rollout collection dumps them (full request and response bodies, ``null`` for unset fields),
  beside the row's own request and response;
* ``two-turn``: ~5.6 KB rows of a two-turn agent with one tool call and reasoning, as Gym's own
  exporter tests build them;
* ``trajectory``: ~9.7 KB rows that hold what a trajectory is built from and nothing else (the
  indices, ``agent_ref``, ``ng_trajectory``), made by the factory's Gym agent
  (:class:`evalexport.testing.gym_shapes.AgentRun`, as Gym's simple agent records a run): a
  system and a user message, a turn that reasons and makes two parallel tool calls, a turn that
  reasons and answers, each model call captured with its request and response
  (:func:`make_trajectory_rollout`; ``tests/trajectory/test_gym_parity.py`` holds the shape to
  Gym's own models and exporter under ``--with_gym``).

``--files`` names the files, each ``SHAPE:SIZE`` with a size in rows (``20000rows``) or
megabytes (``105MB``, ``1GB``); the default is the ``trajectory`` shape at 20,000 rows and the
two others at their usual sizes. Every file is measured in the one run.

On each file, in fresh child processes, it times:

* ``json.loads`` of every line, and nothing else: the parse any exporter stands on;
* the same, writing for each line the very trajectory file the exporters write (their bytes
  read before the clock starts, from a reference export made first): **the floor**, the parse
  with the file system's share, which on some machines is most of an export's time;
* ``nemo_gym.atif_export.export_rollouts_to_atif``, in a NeMo Gym 0.7.0 environment (built on
  first use in ``--gym-env``, default ``~/.cache/evalexport/gym-benchmark-env``, ~420 MB);
* evalexport in one process, and evalexport with its pool of processes (one a core this
  benchmark may use: run under ``taskset -c 0,1`` for two), side by side;
* with ``--before SRC``, evalexport as it was (``SRC``: the ``src`` directory of an earlier
  checkout, put first on ``PYTHONPATH``), for a before and after in the same run.

It prints, from the median of ``--repeat`` rounds (the contestants taking turns), each
contestant's seconds, trajectories/s and peak RSS (of the largest process), and each one's time
as a ratio to the floor measured in the same round; evalexport's peak memory from the smallest
file to the largest. Each exporter's output, Gym's included, is compared file for file with the
reference export (evalexport's own record of the export, ``.evalexport-atif``, aside), so each
with Gym's, and removed before the next contestant runs.

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
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from evalexport.testing.factory import make_rollout, make_two_turn_rollout

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout: its tests' kit
from evalexport.testing.gym_shapes import AgentRun, ToolUse, input_message
from tests.support.gym import ensure_gym_environment

AGENT = "aime24_math_tool_agent"
_CASES = ("ledger", "relay", "orbit", "harbor", "quartz", "meadow", "signal", "lantern")


def make_trajectory_rollout(rng: random.Random, task: int, rollout: int) -> dict[str, Any]:
    """A row that holds what its trajectory is built from (indices, ``agent_ref``,
    ``ng_trajectory``), its ``ng_trajectory`` as Gym's simple agent records a run: a system and
    a user message; turn 1 reasons and makes two parallel tool calls, whose outputs follow;
    turn 2 reasons and answers; both model calls captured with their request, response,
    metadata and token counts; every unset field ``null``, as rollout collection dumps it."""
    case = _CASES[(task + rollout) % len(_CASES)]
    run = AgentRun(
        f"task-{task}",
        f"rollout-{task}-{rollout}",
        [
            input_message("system", "Use the tools when a record must be read or searched."),
            input_message("user", f"Do the two {case} records of case {task} agree?"),
        ],
        model="nvidia/nemotron-nano-9b-v2",
        started_at=1_787_713_200.0 + 60 * task + rollout,
    )
    run.turn(
        reasoning=f"Search the {case} index and read record {rollout} before comparing.",
        tools=[
            ToolUse("search", {"query": f"{case} {task}", "top_k": 2}, f"2 hits for {case}"),
            ToolUse("read", {"path": f"/records/{case}/{rollout}.txt"}, f"{case}: {rng.random()}"),
        ],
        finish_reason="tool_calls",
        prompt_tokens=310 + rng.randint(0, 40),
        completion_tokens=60 + rng.randint(0, 80),
        cached_tokens=0,
    )
    run.turn(
        reasoning="Both records hold the same value; say so.",
        answer=[f"The two {case} records of case {task} agree."],
        finish_reason="stop",
        prompt_tokens=430 + rng.randint(0, 40),
        completion_tokens=40 + rng.randint(0, 60),
        cached_tokens=256,
    )
    return {
        "_ng_task_index": task,
        "_ng_rollout_index": rollout,
        "agent_ref": {"type": "responses_api_agents", "name": "simple_agent"},
        "ng_trajectory": run.record(resolved=rng.random() < 0.5),
    }


SHAPES: Final[dict[str, Callable[[random.Random, int, int], dict[str, Any]]]] = {
    "tool-agent": lambda rng, task, rollout: make_rollout(rng, task, rollout, AGENT),
    "two-turn": make_two_turn_rollout,
    "trajectory": make_trajectory_rollout,
}
DEFAULT_FILES: Final = ("trajectory:20000rows", "two-turn:105MB", "tool-agent:50MB")
OWN_RECORD: Final = ".evalexport-atif"
"""evalexport's record of an export, beside Gym's files in its output (not Gym's)."""

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
import os
WORKERS = int(os.environ.get("ATIF_BENCHMARK_WORKERS", "0"))
if WORKERS:  # one process, or a pool of this many, whatever the file's size
    try:
        from evalexport.backends.atif import files
    except ImportError:  # evalexport before the file work moved (--before)
        from evalexport.trajectory import files
    files.default_workers = lambda path: WORKERS
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
FLOOR: Final = "json.loads+files"
GYM_NAME: Final = "NeMo Gym 0.7.0"
ONE_PROCESS: Final = "evalexport 1 process"


def pool_name(workers: int) -> str:
    return f"evalexport pool of {workers}"


def write_rollouts(
    path: Path, target_bytes: int | None, shape: str, *, rows: int | None = None
) -> int:
    """Write ``rows`` rows of ``shape`` (or rows until ``target_bytes``); return how many.

    Each row has its own ``(task, rollout)`` key: four rollouts a task."""
    rng = random.Random(7)
    written = count = 0
    with path.open("w", encoding="utf-8") as handle:
        while (count < rows) if rows is not None else (written < (target_bytes or 0)):
            task, rollout = divmod(count, 4)
            line = json.dumps(SHAPES[shape](rng, task, rollout), ensure_ascii=False) + "\n"
            handle.write(line)
            written += len(line.encode())
            count += 1
    return count


DROP_CACHES = Path("/proc/sys/vm/drop_caches")


def _run(
    python: str,
    program: str,
    rollouts: Path,
    output: Path,
    reference: Path,
    *,
    drop_caches: bool = False,
    environment: dict[str, str] | None = None,
) -> dict[str, float]:
    os.sync()  # the previous contestant's writes must not be flushed on this one's time
    if drop_caches:
        DROP_CACHES.write_text("3\n")
    completed = subprocess.run(
        [python, "-c", program, str(rollouts), str(output), str(reference)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **(environment or {})},
    )
    if completed.returncode != 0:
        raise SystemExit(f"benchmark child failed:\n{completed.stderr[-3000:]}")
    figures: dict[str, float] = json.loads(completed.stdout.strip().splitlines()[-1])
    return figures


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def contestants(
    gym_python: Path, before: Path | None
) -> dict[str, tuple[str, str, dict[str, str]]]:
    """Each contestant's ``(python, program, environment)``, in the order they take turns."""
    ours = sys.executable
    entries: dict[str, tuple[str, str, dict[str, str]]] = {
        "bare json.loads": (ours, BARE, {}),
        FLOOR: (ours, BARE_WITH_FILES, {}),
        GYM_NAME: (str(gym_python), GYM, {}),
    }
    if before is not None:
        path = os.pathsep.join(filter(None, (str(before), os.environ.get("PYTHONPATH"))))
        entries["evalexport before, 1 process"] = (
            ours,
            EVALEXPORT,
            {"PYTHONPATH": path, "ATIF_BENCHMARK_WORKERS": "1"},
        )
        if usable_cores() > 1:
            entries[f"evalexport before, pool of {usable_cores()}"] = (
                ours,
                EVALEXPORT,
                {"PYTHONPATH": path, "ATIF_BENCHMARK_WORKERS": str(usable_cores())},
            )
    entries[ONE_PROCESS] = (ours, EVALEXPORT, {"ATIF_BENCHMARK_WORKERS": "1"})
    if usable_cores() > 1:
        workers = str(usable_cores())
        entries[pool_name(usable_cores())] = (ours, EVALEXPORT, {"ATIF_BENCHMARK_WORKERS": workers})
    return entries


def _same_files(reference: Path, output: Path) -> bool:
    """Whether ``output`` holds the reference's files, byte for byte (evalexport's own record
    aside)."""
    comparison = filecmp.dircmp(reference, output, ignore=[OWN_RECORD])
    if comparison.left_only or comparison.right_only:
        return False
    return all(
        filecmp.cmp(reference / file, output / file, shallow=False)
        for file in comparison.common_files
    )


def measure(
    directory: Path,
    shape: str,
    size: str,
    gym_python: Path,
    *,
    repeat: int = 1,
    drop_caches: bool = False,
    before: Path | None = None,
) -> dict[str, dict[str, float]]:
    """Each contestant's figures on one generated file: the median time of ``repeat`` rounds
    (the contestants take turns in each round), its median ratio to the floor's time in the
    same round, and the largest peak RSS."""
    directory = directory / f"{shape}-{size}"
    directory.mkdir()
    rollouts = directory / "bench_rollouts.jsonl"
    target_bytes, row_count = _size(size)
    rows = write_rollouts(rollouts, target_bytes, shape, rows=row_count)
    size_mb = rollouts.stat().st_size / 1e6
    programs = contestants(gym_python, before)
    reference = directory / "reference"  # the files every exporter writes: the floor writes them
    _run(sys.executable, EVALEXPORT, rollouts, reference, reference)
    seconds: dict[str, list[float]] = {name: [] for name in programs}
    ratios: dict[str, list[float]] = {name: [] for name in programs}
    peaks: dict[str, list[float]] = {name: [] for name in programs}
    same = True
    for _ in range(repeat):
        for index, (name, (python, program, environment)) in enumerate(programs.items()):
            output = directory / f"out-{index}"
            figures = _run(
                python,
                program,
                rollouts,
                output,
                reference,
                drop_caches=drop_caches,
                environment=environment,
            )
            assert figures["count"] == rows, (name, figures, rows)
            seconds[name].append(figures["seconds"])
            peaks[name].append(figures["peak_rss_kib"] / 1024)
            if name == GYM_NAME or name.startswith("evalexport"):
                # Gym's files and each evalexport's are the reference's, so each the others'.
                same = same and _same_files(reference, output)
            # Removed at once: a contestant's files left for the round's end would crowd the
            # page cache of those after it (a VM pays for memory it has not backed yet), and
            # the round's order would be part of its figures.
            shutil.rmtree(output, ignore_errors=True)
        for name in programs:
            ratios[name].append(seconds[name][-1] / seconds[FLOOR][-1])
    results: dict[str, dict[str, float]] = {}
    for name in programs:
        median = statistics.median(seconds[name])
        results[name] = {
            "file_mb": size_mb,
            "rows": rows,
            "seconds": median,
            "to_floor": statistics.median(ratios[name]),
            "per_s": rows / median,
            "peak_rss_mib": max(peaks[name]),
            "same_files_as_gym": float(same),
        }
    shutil.rmtree(directory)
    return results


def _size(size: str) -> tuple[int | None, int | None]:
    """``(target bytes, rows)`` of ``20000rows``, ``105MB`` or ``1GB``."""
    matched = re.fullmatch(r"(\d+)(rows|MB|GB)", size, flags=re.IGNORECASE)
    if matched is None:
        raise SystemExit(f"a size is a number of rows or MB or GB (20000rows, 105MB): {size!r}")
    number, unit = int(matched.group(1)), matched.group(2).lower()
    if unit == "rows":
        return None, number
    return number * (1_000_000 if unit == "mb" else 1_000_000_000), None


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
    export's work on a line (the file written and hashed). A stage's cost is its figure less
    the one before it. The bare ``json.loads`` of the same lines, and of the same lines with
    their files written (the floor's work), are the reference.
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
            directory = os.open(output, os.O_RDONLY | os.O_DIRECTORY)
            try:
                figures["+ write file and sha256"] = _cpu_per_line(
                    lambda number, line: files._convert_line(number, line, job, directory),  # noqa: B023
                    lines,
                )
            finally:
                os.close(directory)
        size = sum(map(len, lines)) / len(lines)
        print(f"{shape}: {len(lines)} rows of {size / 1e3:.1f} KB, microseconds of CPU per row")
        for name, micros in figures.items():
            print(f"  {name:<26} {micros:8.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--files",
        nargs="+",
        default=list(DEFAULT_FILES),
        metavar="SHAPE:SIZE",
        help=f"the files to measure, in one run (shapes: {', '.join(SHAPES)}); default: "
        f"{' '.join(DEFAULT_FILES)}",
    )
    parser.add_argument(
        "--gym-env", type=Path, default=Path.home() / ".cache" / "evalexport" / "gym-benchmark-env"
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="rounds per file; times are their medians"
    )
    parser.add_argument(
        "--before",
        type=Path,
        help="the src directory of an earlier evalexport, measured beside this one",
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
    files = [entry.split(":", 1) for entry in args.files]
    for entry in files:
        if len(entry) != 2 or entry[0] not in SHAPES:
            raise SystemExit(f"--files takes SHAPE:SIZE with a shape of {', '.join(SHAPES)}")
        _size(entry[1])
    gym_python = ensure_gym_environment(args.gym_env)
    started = time.perf_counter()
    measured: list[tuple[str, str, dict[str, dict[str, float]]]] = []
    with tempfile.TemporaryDirectory(prefix="atif-bench-") as scratch:
        for shape, size in files:
            figures = measure(
                Path(scratch),
                shape,
                size,
                gym_python,
                repeat=args.repeat,
                drop_caches=args.drop_caches,
                before=args.before,
            )
            measured.append((shape, size, figures))
    print(f"{usable_cores()} usable cores; medians of {args.repeat} rounds")
    print(
        f"{'file':>8} {'shape':<11} {'contestant':<28} {'traj/s':>7} {'seconds':>8} "
        f"{'to floor':>9} {'peak RSS MiB':>13}"
    )
    for shape, _size_text, results in measured:
        for name, row in results.items():
            print(
                f"{row['file_mb']:6.0f}MB {shape:<11} {name:<28} {row['per_s']:7.0f} "
                f"{row['seconds']:8.2f} {row['to_floor']:8.2f}x {row['peak_rss_mib']:13.1f}"
            )
    print()
    for shape, size, results in measured:
        floor = results[FLOOR]
        ours = {name: row for name, row in results.items() if name.startswith("evalexport")}
        said = "; ".join(
            f"{name} {row['to_floor']:.2f}x the floor ({results[GYM_NAME]['seconds'] / row['seconds']:.1f}x Gym's speed)"
            for name, row in ours.items()
        )
        print(
            f"{shape} {size} ({floor['rows']:.0f} rows of "
            f"{floor['file_mb'] * 1e6 / floor['rows'] / 1e3:.1f} KB, floor {floor['seconds']:.2f} s): "
            f"{said}; same files as Gym: "
            f"{'yes' if all(row['same_files_as_gym'] for row in ours.values()) else 'NO'}"
        )
    by_size = sorted(measured, key=lambda entry: entry[2][FLOOR]["file_mb"])
    small, large = by_size[0][2][ONE_PROCESS], by_size[-1][2][ONE_PROCESS]
    print(
        f"evalexport (1 process) peak memory {small['peak_rss_mib']:.1f} -> "
        f"{large['peak_rss_mib']:.1f} MiB for {small['file_mb']:.0f} -> {large['file_mb']:.0f} MB; "
        f"total benchmark time {time.perf_counter() - started:.0f} s"
    )


if __name__ == "__main__":
    main()
