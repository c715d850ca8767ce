"""Peak memory of each command on a run whose one rollout line is very long.

    python benchmarks/long_line_memory.py [--megabytes 50] [--with-workers]

A rollout with a long output (a model that never stopped) makes one line of tens of megabytes.
The reader holds one line at a time, so what bounds memory is how many copies of that line a
command holds at once. Copies the sample run ``examples/aime24`` into a scratch directory,
replaces its first rollout's answer text with ``--megabytes`` of text, and runs, each in a fresh
interpreter: ``inspect``, the ATIF export, and the MLflow (embedded SQLite) and W&B (offline)
dry runs and exports. Prints evalexport's own peak RSS and what it grew by after the imports,
as a multiple of the line. ``--with-workers`` also runs the real exports, which build the SDK
environments the first time (needs the package index); the workers run in processes of their
own, whose memory the SDK decides (W&B's loads the whole table), and are not counted.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "examples" / "aime24"

# The peak is VmHWM, reset after the imports (clear_refs 5): rusage's peak is carried over
# from the parent across exec, and would count the imports.
MEASURE = """
import json, sys
from pathlib import Path
from evalexport.cli import main
import evalexport.run, evalexport.spec.registry, pydantic, yaml  # the baseline's imports

def high_water_kib():
    status = Path("/proc/self/status").read_text()
    return int(next(l for l in status.splitlines() if l.startswith("VmHWM")).split()[1])

Path("/proc/self/clear_refs").write_text("5")
baseline = high_water_kib()
code = main(sys.argv[1:])
print(json.dumps({"code": code, "baseline_kib": baseline, "peak_kib": high_water_kib()}),
      file=sys.stderr)
"""


LENGTHEN = """
import json, sys
rollouts, megabytes = sys.argv[1], int(sys.argv[2])
lines = open(rollouts, encoding="utf-8").read().splitlines()
record = json.loads(lines[0])
text = "Let me check that once more. " * (megabytes * 1_000_000 // 29)
record["response"]["output"][0]["content"][0]["text"] = text
if sys.argv[3] == "both":  # the answer everywhere Gym records it: 4 copies on the line
    trajectory = record["ng_trajectory"]
    trajectory["invocations"][0]["conversation"][-1]["content"][0]["text"] = text
    trajectory["turns"][-1]["answer"][0]["content"][0]["text"] = text
    trajectory["model_calls"][-1]["response"]["output"][-1]["content"][0]["text"] = text
lines[0] = json.dumps(record)
open(rollouts, "w", encoding="utf-8").write("\\n".join(lines) + "\\n")
print(len(lines[0]))
"""


def long_line_run(directory: Path, megabytes: int, where: str) -> tuple[Path, int]:
    """The sample run with one long line, and that line's length in bytes. Written by another
    process: a child's peak RSS starts from its parent's (Linux keeps it across exec)."""
    run = directory / "aime24"
    shutil.copytree(SAMPLE, run)
    rollouts = run / "aime24_rollouts.jsonl"
    completed = subprocess.run(
        [sys.executable, "-c", LENGTHEN, str(rollouts), str(megabytes), where],
        capture_output=True,
        text=True,
        check=True,
    )
    return rollouts, int(completed.stdout)


def measure(arguments: list[str], cwd: Path) -> dict[str, int]:
    completed = subprocess.run(
        [sys.executable, "-c", MEASURE, *arguments],
        capture_output=True,
        text=True,
        cwd=cwd,
        check=False,
    )
    figures: dict[str, int] = json.loads(completed.stderr.strip().splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--megabytes", type=int, default=50)
    parser.add_argument("--with-workers", action="store_true")
    parser.add_argument(
        "--in-trajectory",
        action="store_true",
        help="put the long answer in the trajectory's conversation too, as Gym records it",
    )
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        where = "both" if options.in_trajectory else "response"
        rollouts, line_bytes = long_line_run(work, options.megabytes, where)
        line_mib = line_bytes / 2**20
        given = f"+rollouts_jsonl_fpath={rollouts}"
        commands = {
            "inspect": ["inspect", str(rollouts)],
            "atif --dry-run": [
                "atif",
                given,
                f"+output_dirpath={work / 'dry'}",
                "+agent_version=1",
                "--dry-run",
            ],
            "atif": ["atif", given, f"+output_dirpath={work / 'atif'}", "+agent_version=1"],
            "mlflow --dry-run": ["mlflow", given, "--dry-run"],
            "wandb --dry-run": ["wandb", given, "+wandb_mode=offline", "--dry-run"],
        }
        if options.with_workers:
            commands["mlflow"] = ["mlflow", given]
            commands["wandb"] = ["wandb", given, "+wandb_mode=offline"]
        print(f"one rollout line of {line_mib:.1f} MiB")
        print(f"{'command':<18} {'exit':>4} {'peak MiB':>9} {'grew MiB':>9} {'x line':>7}")
        for name, arguments in commands.items():
            figures = measure([*arguments, "--json"] if name != "inspect" else arguments, work)
            grown = (figures["peak_kib"] - figures["baseline_kib"]) / 1024
            print(
                f"{name:<18} {figures['code']:>4} {figures['peak_kib'] / 1024:>9.1f} "
                f"{grown:>9.1f} {grown / line_mib:>7.2f}"
            )


if __name__ == "__main__":
    main()
