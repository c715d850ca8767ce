"""Regenerate the runs in examples/ from the run factory: ``python examples/make_sample_runs.py``.

* ``aime24``: an agent that publishes its turns (tool calls, reasoning), one agent, strict ATIF
  export accepts every row;
* ``logic_puzzles``: an agent that publishes no turns, so every row records the
  ``turns_unavailable`` and ``conversation_unavailable`` gaps, as most agents' runs do.

Every record is one NeMo Gym's ``TrajectoryRecord`` accepts (the ``--with_gym`` tests check it).
The saved configs are masked; the planted values are fixed so the files do not change on rerun.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from evalexport.testing.factory import CanarySecrets, make_run

EXAMPLES = Path(__file__).resolve().parent


def main() -> None:
    for name, knobs in {
        "aime24": {"benchmark": "aime24", "agents": ("aime24_math_tool_agent",), "tasks": 8},
        "logic_puzzles": {
            "benchmark": "logic_puzzles",
            "agents": ("logic_puzzles_deepagents",),
            "tasks": 6,
            "repeats": 2,
            "publishes_turns": False,
        },
    }.items():
        directory = EXAMPLES / name
        shutil.rmtree(directory, ignore_errors=True)
        make_run(
            directory, canaries=CanarySecrets(suffix="0example0"), seed=2024, sidecars=True, **knobs
        )
        print(f"wrote {directory}")


if __name__ == "__main__":
    main()
