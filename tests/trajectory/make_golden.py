"""Write tests/trajectory/golden/ with NeMo Gym's own exporter.

    python -m tests.trajectory.make_golden /path/to/gym-env/bin/python

Each case gets ``rollouts.jsonl`` and either ``expected/`` (the files Gym wrote) or
``refusal.json`` (the rows Gym refused, and its message).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

from tests.support.gym import GymOracle
from tests.trajectory.golden_cases import cases
from tests.trajectory.parity import rejected_lines

GOLDEN = Path(__file__).with_name("golden")
SESSION, VERSION = "golden", "1.4.0"


def write_golden(oracle: GymOracle, root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)
    for name, lines in cases().items():
        case = root / name
        case.mkdir(parents=True)
        rollouts = case / "rollouts.jsonl"
        rollouts.write_text("\n".join(lines) + "\n", encoding="utf-8")
        with tempfile.TemporaryDirectory() as scratch:
            output = Path(scratch) / "out"
            result = oracle.export_atif(rollouts, output, session_id=SESSION, agent_version=VERSION)
            if result.succeeded:
                shutil.copytree(output, case / "expected")
            else:
                refusal = {
                    "rejected_lines": sorted(rejected_lines(result.error or "")),
                    "gym_error": result.error,
                }
                (case / "refusal.json").write_text(
                    json.dumps(refusal, indent=2) + "\n", encoding="utf-8"
                )


def main() -> None:
    oracle = GymOracle(Path(sys.argv[1]))
    try:
        write_golden(oracle, GOLDEN)
    finally:
        oracle.close()
    print(f"wrote {GOLDEN} with nemo-gym {oracle.version}")


if __name__ == "__main__":
    main()
