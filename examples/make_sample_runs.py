"""Regenerate the runs in examples/ from the run factory: ``python examples/make_sample_runs.py``.

* ``aime24``: an agent that publishes its turns (tool calls, reasoning), one agent, strict ATIF
  export accepts every row. Its rows carry what NeMo Gym's ``math_with_judge`` resources server
  (the environment of Gym's aime24 config) adds when it verifies one (``library_reward``,
  ``extracted_answer``), and its aggregate metrics are what Gym's own aggregation gives for
  them: the server's ``/aggregate_metrics`` (``compute_aggregate_metrics`` with its
  ``compute_metrics`` and ``get_key_metrics``), run by NeMo Gym 0.7.0 itself in its own
  environment (built under ``$EVALEXPORT_GYM_ENV_DIR``, else ``.venv/test-cache/gym/env``; it
  needs Python 3.13 and the package index the first time). So ``mean/reward`` is the rollouts'
  mean reward, as ``evalexport inspect`` counts it. Its health reports and its one failed
  attempt are written by Gym's code too (``run_health_checks``, the failure row rollout
  collection records for an HTTP 502).
* ``logic_puzzles``: an agent that publishes no turns, so every row records the
  ``turns_unavailable`` and ``conversation_unavailable`` gaps, as most agents' runs do.

Every record is one NeMo Gym's ``TrajectoryRecord`` accepts (the ``--with_gym`` tests check it).
The saved configs are masked; the planted values are fixed so the files do not change on rerun.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

from evalexport.testing.factory import CanarySecrets, make_run

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout: its tests' kit

EXAMPLES = Path(__file__).resolve().parent
MATH_SERVER = "aime24_math_with_judge"
"""The name the math environment server has in the sample run (its config's server key)."""
_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")


def as_math_verified(rollouts: Path) -> None:
    """Give each row what Gym's math server adds when it verifies it: the answer it extracted
    from the final message (``extracted_answer``) and the reward its library check gave
    (``library_reward``, the row's reward: no judge was asked)."""
    rows = [json.loads(line) for line in rollouts.read_text(encoding="utf-8").splitlines()]
    for row in rows:
        texts = [
            part.get("text", "")
            for item in row["response"]["output"]
            if item.get("type") == "message"
            for part in item.get("content") or []
        ]
        found = _BOXED.findall(texts[-1]) if texts else []
        row["extracted_answer"] = found[-1] if found else None
        row["library_reward"] = row["reward"]
    rollouts.write_text(
        "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8"
    )


def write_gyms_files(rollouts: Path, agent: str) -> None:
    """What NeMo Gym 0.7.0 itself writes beside these rollouts, by its own code: the aggregate
    metrics (its math server's aggregation, :meth:`GymOracle.aggregate_math`), the health
    reports (``run_health_checks``, as ``gym eval run`` runs it after collection) and one
    failed attempt (an HTTP 502 of the agent, as rollout collection records it)."""
    from tests.support.gym import GymOracle, ensure_gym_environment

    directory = os.environ.get("EVALEXPORT_GYM_ENV_DIR") or str(
        EXAMPLES.parent / ".venv" / "test-cache" / "gym" / "env"
    )
    oracle = GymOracle(ensure_gym_environment(Path(directory)))
    try:
        aggregate = [oracle.aggregate_math(rollouts, agent, MATH_SERVER)]
        metrics = rollouts.with_name(f"{rollouts.stem}_aggregate_metrics.json")
        metrics.write_text(json.dumps(aggregate, indent=2) + "\n", encoding="utf-8")
        oracle.health(rollouts, rollouts.parent)
        failure = oracle.failure_row(502, "Bad Gateway", "http://127.0.0.1:8000/run")
        failure.update(
            _ng_task_index=3,
            _ng_rollout_index=1,
            agent_ref={"type": "responses_api_agents", "name": agent},
        )
        failures = rollouts.with_name(f"{rollouts.stem}_failures.jsonl")
        failures.write_text(json.dumps(failure, separators=(",", ":")) + "\n", encoding="utf-8")
    finally:
        oracle.close()


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
        sample = make_run(
            directory, canaries=CanarySecrets(suffix="0example0"), seed=2024, sidecars=True, **knobs
        )
        if name == "aime24":
            as_math_verified(sample.rollouts)
            write_gyms_files(sample.rollouts, "aime24_math_tool_agent")
        print(f"wrote {directory}")


if __name__ == "__main__":
    main()
