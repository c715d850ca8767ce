"""Realistic finished runs on disk, for tests, benchmarks and the bundled example.

:func:`make_run` writes what an evaluation run leaves behind: rollouts with ``ng_trajectory``
records (multi-turn, tool calls, reasoning, cached tokens, unicode), aggregate metrics with the
real key names, and a saved config with planted canary secrets. Knobs break each rule of the
run directory, so a test can ask for exactly the broken run it needs.

This module does not import pytest: scripts use it too.
"""

from __future__ import annotations

import json
import os
import random
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, final

from evalexport.masking import save_run_config
from evalexport.run import RunArtifacts
from evalexport.testing.sample_rows import (
    MODEL,
    QUESTIONS,
    make_rollout,
    make_two_turn_rollout,
)

__all__ = ["CanarySecrets", "SampleRun", "make_rollout", "make_run", "make_two_turn_rollout"]

_MOVED: Final = {"make_trajectory": "evalexport.testing.sample_rows"}
"""Helpers this module exposed and that live elsewhere now: still importable from here, with a
``DeprecationWarning`` naming their home, until evalexport 0.6.0 (CHANGELOG, "Deprecated")."""


def __getattr__(name: str) -> object:
    """A moved helper (:data:`_MOVED`), imported from its home with a warning naming it."""
    home = _MOVED.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib
    import warnings

    warnings.warn(
        f"evalexport.testing.factory.{name} moved to {home}.{name}; import it from there "
        "(this alias goes in evalexport 0.6.0)",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module(home), name)


DEFAULT_AGENTS = ("aime24_math_simple_agent", "aime24_math_tool_agent")


@final
@dataclass(frozen=True)
class CanarySecrets:
    """Secret values planted in a run's config. None of them may ever appear in any output."""

    suffix: str = field(default_factory=lambda: secrets.token_hex(8))

    @property
    def by_key(self) -> dict[str, str]:
        """Secrets planted under secret keys, with the key they sit under."""
        s = self.suffix
        return {
            "policy_api_key": f"canary-policy-{s}",
            "hf_token": f"canary-hf-{s}",
            "wandb_api_key": f"canary-wandb-{s}",
            "mlflow_tracking_token": f"canary-mlflow-{s}",
            "judge_api_key": f"canary-judge-{s}",
            "apiKey": f"canary-apikey-{s}",
            "bearer_token": f"canary-bearer-{s}",
        }

    @property
    def in_values(self) -> dict[str, str]:
        """Secrets planted inside strings under non-secret keys (URLs, env lists, headers)."""
        s = self.suffix
        return {
            "url_password": f"canaryurlpw{s}",
            "env_assignment": f"canary-env-{s}",
            "authorization_header": f"canary-header-{s}",
            "openai_style_key": f"sk-canary{s}{s}",
            "query_token": f"canary-query-{s}",
        }

    @property
    def all(self) -> tuple[str, ...]:
        """Every canary planted, under secret-named keys and inside values."""
        return (*self.by_key.values(), *self.in_values.values())

    def found_in(self, text: str) -> list[str]:
        """The planted secrets that occur in ``text``; a test asserts this is empty."""
        return [secret for secret in self.all if secret in text]

    def found_in_tree(self, root: Path) -> list[str]:
        """``path: secret`` for every planted secret in any file under ``root``."""
        leaks: list[str] = []
        for path in sorted(root.rglob("*")) if root.is_dir() else [root]:
            if path.is_file():
                text = path.read_bytes().decode("utf-8", errors="replace")
                leaks.extend(f"{path}: {secret}" for secret in self.found_in(text))
        return leaks


def run_config(benchmark: str, canaries: CanarySecrets) -> dict[str, object]:
    """A run config shaped like a real evaluation config, secrets included."""
    key = canaries.by_key
    value = canaries.in_values
    return {
        "benchmark": benchmark,
        "split": "benchmark",
        "num_repeats": 4,
        "policy_model_name": MODEL,
        "policy_base_url": "https://integrate.api.nvidia.com/v1",
        "policy_api_key": key["policy_api_key"],
        "hf_token": key["hf_token"],
        "HF_TOKEN": "${oc.env:HF_TOKEN}",
        "wandb_api_key": key["wandb_api_key"],
        "mlflow_tracking_token": key["mlflow_tracking_token"],
        "mlflow_tracking_uri": f"https://evals:{value['url_password']}@mlflow.example.com/",
        "judge": {
            "judge_api_key": key["judge_api_key"],
            "apiKey": key["apiKey"],
            "model": "meta/llama-3.3-70b-instruct",
            "endpoint": f"https://judge.example.com/v1?token={value['query_token']}&region=us",
        },
        "gateway": {
            "bearer_token": key["bearer_token"],
            "default_headers": {"Authorization": f"Bearer {value['authorization_header']}"},
            "notes": f"rotated key {value['openai_style_key']} on 2026-11-01",
        },
        "env": [
            f"HF_TOKEN={value['env_assignment']}",
            "HF_HOME=/data/hf",
            "CUDA_VISIBLE_DEVICES=0",
        ],
        "responses_create_params": {
            "max_output_tokens": 16384,
            "temperature": 0.6,
            "top_p": 0.95,
            "return_token_id_information": False,
        },
        "tokenizer_path": "nvidia/nemotron-nano-9b-v2",
        "skip_special_tokens": True,
        "input_cost_per_token": 1.5e-07,
        "num_speculative_tokens": 0,
        "key_metrics": ["pass@1[avg-of-4]/symbolic_accuracy"],
        "key_prefix": "eval/",
        "api_key_name": "POLICY_API_KEY",
        "answer_key": "expected_answer",
        "hf_hub_cache": "/data/hf/hub",
        "max_tokens": 16384,
    }


def _materialized_input(rollout: dict[str, object]) -> dict[str, object]:
    """The line of ``<stem>_materialized_inputs.jsonl`` that rollout collection wrote for
    ``rollout``: the task's input row (its request, its agent, the answer the verifier checks)
    stamped with the task and rollout index, one line a rollout."""
    keys = ("responses_create_params", "expected_answer", "agent_ref")
    indices = ("_ng_task_index", "_ng_rollout_index")
    return {key: rollout[key] for key in (*keys, *indices) if key in rollout}


def aggregate_metrics(
    agents: Sequence[str], tasks: int, repeats: int, rng: random.Random
) -> list[dict[str, object]]:
    """Aggregate metrics with the real key names, including a name that prefixes another."""
    entries = []
    for agent in agents:
        accuracy = round(rng.uniform(30, 60), 2)
        entries.append(
            {
                "agent_ref": {"name": agent},
                "agent_metrics": {
                    "mean/reward": round(accuracy / 100, 4),
                    "std/reward": round(rng.uniform(0.3, 0.5), 4),
                    "mean/output_tokens": round(rng.uniform(3000, 7000), 1),
                    f"pass@1[avg-of-{repeats}]/symbolic_accuracy": accuracy,
                    f"pass@1[avg-of-{repeats}]/symbolic_accuracy/std_dev_across_runs": round(
                        rng.uniform(1, 4), 2
                    ),
                    f"pass@1[avg-of-{repeats}]/no_answer": round(rng.uniform(0, 5), 2),
                    f"pass@1[avg-of-{repeats}]/no_answer/std_dev_across_runs": round(
                        rng.uniform(0, 1), 2
                    ),
                    f"pass@{repeats}/symbolic_accuracy": round(min(100.0, accuracy * 1.6), 2),
                    f"majority@{repeats}/symbolic_accuracy": round(accuracy * 1.2, 2),
                    "judge_model": "none (symbolic grading)",
                    "used_tools": "tool" in agent,
                    "per_sample_aggregate": {
                        "symbolic_accuracy": [round(rng.random(), 2) for _ in range(tasks)]
                    },
                },
                "key_metrics": {
                    f"pass@1[avg-of-{repeats}]/symbolic_accuracy": accuracy,
                    f"pass@{repeats}/symbolic_accuracy": round(min(100.0, accuracy * 1.6), 2),
                },
                "group_level_metrics": [
                    {"_ng_task_index": task, "mean/reward": round(rng.random(), 2), "sample": {}}
                    for task in range(tasks)
                ],
            }
        )
    return entries


@final
@dataclass(frozen=True)
class SampleRun:
    """A run the factory wrote: its files, the canaries planted in its config, its rollout count."""

    run: RunArtifacts
    canaries: CanarySecrets
    rollout_count: int

    @property
    def rollouts(self) -> Path:
        """The run's rollouts file."""
        return self.run.rollouts


def make_run(
    directory: str | os.PathLike[str],
    *,
    benchmark: str = "aime24",
    agents: Sequence[str] = DEFAULT_AGENTS,
    tasks: int = 6,
    repeats: int = 4,
    seed: int = 0,
    canaries: CanarySecrets | None = None,
    aggregate: bool = True,
    saved_config: bool = True,
    mask_saved_config: bool = True,
    trajectory: bool = True,
    publishes_turns: bool = True,
    rows_without_trajectory: Iterable[int] = (),
    rows_with_gaps: Iterable[int] = (),
    malformed_lines: Iterable[int] = (),
    blank_lines: Iterable[int] = (),
    other_run_rollouts: str | None = None,
    sidecars: bool = False,
    stem: str | None = None,
) -> SampleRun:
    """Write a finished run into ``directory`` (created if needed) and describe it.

    Every record is one NeMo Gym's ``TrajectoryRecord`` accepts. ``publishes_turns=False``
    makes the run of an agent that publishes no turns (gaps ``turns_unavailable`` and
    ``conversation_unavailable`` on every row); ``rows_with_gaps`` get the
    ``resolution_unavailable`` gap a verifier without a verdict leaves.
    Rows are 0-based rollout positions; ``malformed_lines`` and ``blank_lines`` are 1-based
    line numbers of the written file. ``other_run_rollouts`` adds a second run's rollouts file
    of that name beside this one; ``mask_saved_config=False`` saves the config with live
    secrets, as a run saved by hand might. ``stem``: the rollouts file's name without
    ``.jsonl`` (default ``<benchmark>_rollouts``; a ``gym eval submit`` job's is ``rollouts``).
    """
    run_dir = Path(directory)
    run_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    canaries = canaries or CanarySecrets()
    rollouts_path = run_dir / f"{stem or f'{benchmark}_rollouts'}.jsonl"
    without = set(rows_without_trajectory)
    with_gaps = set(rows_with_gaps)
    malformed = set(malformed_lines)
    blanks = set(blank_lines)
    lines: list[str] = []
    inputs: list[str] = []
    row = 0
    for task_index in range(tasks):
        for position, agent in enumerate(agents):
            for repeat in range(repeats):
                # Gym numbers a task's rollouts across the agents it fans out to: the second
                # agent's first rollout of task 0 is rollout `repeats`, so that a task and a
                # rollout index name one row, as Gym's reward profiling and reverify require.
                record = make_rollout(
                    rng,
                    task_index,
                    position * repeats + repeat,
                    agent,
                    trajectory=trajectory and row not in without,
                    publishes_turns=publishes_turns,
                )
                recorded = record.get("ng_trajectory")
                if row in with_gaps and recorded and recorded["turns"]:
                    # The verifier reported no resolution: what simple agents then record.
                    recorded["turns"][-1]["resolved"] = None
                    recorded["gaps"] = [
                        {"code": "resolution_unavailable", "invocation_id": "root", "detail": None}
                    ]
                while len(lines) + 1 in blanks:
                    lines.append("")
                if len(lines) + 1 in malformed:
                    lines.append('{"_ng_task_index": 0, "reward": 1.0,')
                lines.append(json.dumps(record, ensure_ascii=False))
                inputs.append(json.dumps(_materialized_input(record), ensure_ascii=False) + "\n")
                row += 1
    rollouts_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    run = RunArtifacts.from_rollouts_path(rollouts_path)
    if aggregate:
        run.aggregate_metrics.write_text(
            json.dumps(aggregate_metrics(agents, tasks, repeats, rng), indent=2), encoding="utf-8"
        )
    if saved_config:
        config = run_config(benchmark, canaries)
        if mask_saved_config:
            save_run_config(config, rollouts_path)
        else:
            import yaml

            run.saved_config.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    if sidecars:
        datasets = run.sidecar_dir / "preprocessed_datasets"
        datasets.mkdir(parents=True, exist_ok=True)
        (datasets / f"{benchmark}.jsonl").write_text(
            "".join(json.dumps({"question": q}, ensure_ascii=False) + "\n" for q in QUESTIONS),
            encoding="utf-8",
        )
        run.materialized_inputs.write_text("".join(inputs), encoding="utf-8")
    if other_run_rollouts:
        (run_dir / other_run_rollouts).write_text(
            json.dumps(make_rollout(rng, 0, 0, agents[0])) + "\n", encoding="utf-8"
        )
    return SampleRun(run, canaries, row)
