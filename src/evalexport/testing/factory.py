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
from typing import Any, final

from evalexport.masking import save_run_config
from evalexport.run import RunArtifacts
from evalexport.testing.gym_shapes import (
    AgentRun,
    ToolUse,
    input_message,
    unpublished_trajectory,
)

__all__ = ["CanarySecrets", "SampleRun", "make_rollout", "make_run", "make_two_turn_rollout"]

DEFAULT_AGENTS = ("aime24_math_simple_agent", "aime24_math_tool_agent")
MODEL = "nvidia/nemotron-nano-9b-v2"

_QUESTIONS = (
    "Find the remainder when $7^{2024}$ is divided by $1000$.",
    "Let $S$ be the set of positive integers $n \\le 1000$ with $n^2 + 1$ divisible by $5$. "
    "Find $|S|$.",
    "Compute the number of ordered pairs $(a, b)$ of integers with $a^2 + b^2 = 2025$.",
    "Trouvez la somme des chiffres de $2^{100}$ — answer as an integer.",
    "A regular hexagon has side length $6$. Find the square of its area.",
    "Find the least positive integer $n$ such that $n! $ ends in exactly $24$ zeros.",
    "∑_{k=1}^{20} k³ mod 997 = ?",
    "How many subsets of $\\{1, 2, \\dots, 12\\}$ contain no two consecutive integers?",
)


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


def run_config(benchmark: str, canaries: CanarySecrets) -> dict[str, Any]:
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


def _turn_texts(rng: random.Random, task_index: int) -> tuple[str, str, str]:
    question = _QUESTIONS[task_index % len(_QUESTIONS)]
    answer = str(rng.randint(0, 999))
    reasoning = f"Let me think step by step — check small cases first (n={rng.randint(2, 9)})."
    return question, answer, reasoning


def make_trajectory(
    rng: random.Random,
    task_index: int,
    rollout_index: int,
    *,
    use_tools: bool,
    publishes_turns: bool = True,
) -> dict[str, Any]:
    """An ``ng_trajectory`` as NeMo Gym writes it (see :mod:`evalexport.testing.gym_shapes`).

    An agent that publishes turns answers in one or two model calls, with parallel tool calls
    first when it uses tools; its reasoning comes as a summary or as content. One that does not
    leaves only its captured model call and the gaps rollout collection records.
    """
    question, answer, reasoning = _turn_texts(rng, task_index)
    task_id, rollout_id = str(task_index), f"{task_index}-{rollout_index}"
    if not publishes_turns:
        return unpublished_trajectory(task_id, rollout_id, question, f"\\boxed{{{answer}}}")
    prompt_content: str | list[str] = question
    if task_index % 4 == 3:  # multipart input happens
        prompt_content = [question, "Put the final answer in \\boxed{}."]
    run = AgentRun(
        task_id,
        rollout_id,
        [input_message("user", prompt_content)],
        model=MODEL,
        started_at=1_787_713_200.0 + 60 * task_index + rollout_index,
    )
    as_summary = rollout_index % 2 == 0
    if use_tools:
        run.turn(
            reasoning=reasoning,
            reasoning_as_summary=as_summary,
            tools=[
                ToolUse("python", {"code": f"print(pow(7, 2024, 1000))  # t{task_index}"}, "801"),
                ToolUse(
                    "lookup", {"query": "Legendre's formula", "top_k": 2}, "v_p(n!) = Σ ⌊n/p^k⌋"
                ),
            ],
            finish_reason="tool_calls",
            prompt_tokens=900 + 40 * task_index,
            completion_tokens=200 + rng.randint(0, 3000),
            cached_tokens=0,
        )
    run.turn(
        reasoning=f"{reasoning} So the answer is {answer}.",
        reasoning_as_summary=as_summary,
        answer=[f"The answer is \\boxed{{{answer}}}."],
        finish_reason="stop",
        prompt_tokens=1200 + 40 * task_index,
        completion_tokens=200 + rng.randint(0, 3000),
        cached_tokens=512,
    )
    return run.record(resolved=rng.random() < 0.45)


def make_rollout(
    rng: random.Random,
    task_index: int,
    rollout_index: int,
    agent: str,
    *,
    trajectory: bool = True,
    publishes_turns: bool = True,
) -> dict[str, Any]:
    """One rollout line as NeMo Gym's rollout collection writes it."""
    use_tools = "tool" in agent
    question, answer, _ = _turn_texts(rng, task_index)
    reward = 1.0 if rng.random() < 0.45 else 0.0
    record: dict[str, Any] = {
        "_ng_task_index": task_index,
        "_ng_rollout_index": rollout_index,
        "agent_ref": {"type": "responses_api_agents", "name": agent},
        "reward": reward,
        "expected_answer": answer if reward else str(rng.randint(0, 999)),
        "responses_create_params": {
            "input": [{"content": question, "role": "user", "type": "message"}],
            "max_output_tokens": 16384,
            "temperature": 0.6,
        },
        "response": {
            "id": f"resp_{task_index}-{rollout_index}",
            "object": "response",
            "model": MODEL,
            "output": [
                {
                    "id": f"msg_{task_index}-{rollout_index}",
                    "content": [
                        {"annotations": [], "text": f"\\boxed{{{answer}}}", "type": "output_text"}
                    ],
                    "role": "assistant",
                    "status": "completed",
                    "type": "message",
                }
            ],
            "usage": {"input_tokens": 1200, "output_tokens": rng.randint(200, 6000)},
        },
        "symbolic_correct": bool(reward),
    }
    if trajectory:
        record["ng_trajectory"] = make_trajectory(
            rng, task_index, rollout_index, use_tools=use_tools, publishes_turns=publishes_turns
        )
    return record


_CITIES = ("Paris", "Reykjavík", "São Paulo", "Nairobi", "Osaka", "Toronto", "Kraków", "Lima")


def make_two_turn_rollout(
    rng: random.Random, task_index: int, rollout_index: int, agent: str = "simple_agent"
) -> dict[str, Any]:
    """A two-turn tool agent's rollout, about 5 KB, shaped as NeMo Gym's own tests of its ATIF
    exporter build one (their ``_canonical_rollout``, in the nemo-gym repository).

    A system and a user message; turn 1 reasons and makes one ``get_weather`` call; its output
    follows; turn 2 reasons and answers. The captured model calls carry their metadata and
    token counts with compact request and response bodies, and unset optional fields are
    absent rather than ``null``, as in Gym's tests.
    """
    city = _CITIES[(task_index + rollout_index) % len(_CITIES)]
    celsius = rng.randint(-5, 34)
    call_id = f"call_{task_index}_{rollout_index}"
    task_id, rollout_id = f"task-{task_index}", f"rollout-{task_index}-{rollout_index}"
    model_ref = {"type": "responses_api_models", "name": "policy_model"}
    system = {
        "type": "message",
        "role": "system",
        "content": "You are a travel assistant. Look live data up with your tools.",
    }
    user = {
        "type": "message",
        "role": "user",
        "content": f"What is the weather in {city} now, in Celsius? Do I need an umbrella?",
    }
    first_reasoning = {
        "id": f"rs_{task_index}_{rollout_index}_1",
        "type": "reasoning",
        "summary": [
            {
                "type": "summary_text",
                "text": f"Current weather in {city}: call get_weather in Celsius, then judge "
                "the umbrella from the precipitation.",
            }
        ],
    }
    call = {
        "id": f"fc_{task_index}_{rollout_index}",
        "type": "function_call",
        "call_id": call_id,
        "name": "get_weather",
        "arguments": json.dumps({"city": city, "unit": "celsius"}, sort_keys=True),
        "status": "completed",
    }
    forecast = json.dumps(
        {
            "city": city,
            "temperature_c": celsius,
            "conditions": "light rain" if celsius % 3 == 0 else "partly cloudy",
            "precipitation_probability": round(rng.random(), 2),
            "wind_kph": rng.randint(0, 40),
        },
        ensure_ascii=False,
    )
    output = {"type": "function_call_output", "call_id": call_id, "output": forecast}
    second_reasoning = {
        "id": f"rs_{task_index}_{rollout_index}_2",
        "type": "reasoning",
        "summary": [
            {
                "type": "summary_text",
                "text": f"{celsius} °C; give the umbrella advice from the precipitation.",
            }
        ],
    }
    answer = {
        "id": f"msg_{task_index}_{rollout_index}",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [
            {
                "type": "output_text",
                "text": f"It is {celsius} °C in {city} now. Take an umbrella.",
                "annotations": [],
            }
        ],
    }
    first_question = [system, user]
    second_question = [system, user, first_reasoning, call, output]
    started = 1_787_713_200.0 + 60 * task_index + rollout_index
    prompt_1, completion_1 = 310 + rng.randint(0, 40), 60 + rng.randint(0, 80)
    prompt_2, completion_2 = prompt_1 + 120, 40 + rng.randint(0, 60)

    def turn(number: int, question: list[Any], answer_items: list[Any], reasoning: Any) -> Any:
        return {
            "invocation_id": "root",
            "task_id": task_id,
            "rollout_id": rollout_id,
            "turn_no": number,
            "timestamp": started + 2.0 * (number - 1),
            "question": question,
            "answer": answer_items,
            "reasoning_content": [reasoning],
            "resolved": number == 2,
            "step_count": 1,
            "model_calls": [{"model_call_id": f"model-call-{number}"}],
        }

    def model_call(number: int, prompt: int, completion: int, finish: str) -> Any:
        return {
            "model_call_id": f"model-call-{number}",
            "started_at": started + 2.0 * (number - 1),
            "completed_at": started + 2.0 * (number - 1) + 0.5,
            "duration_ms": 500.0,
            "request": {"input": f"model-visible-input-{number}"},
            "response": {"status": "completed", "output": f"model-visible-output-{number}"},
            "response_metadata": {
                "response_id": f"resp_{task_index}_{rollout_index}_{number}",
                "model_ref": model_ref,
                "model": MODEL,
                "dialect": "responses",
                "status_code": 200,
                "response_status": "completed",
                "finish_reason": finish,
                "latency_ttft_ms": 120.0 + number,
            },
            "token_stats": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "reasoning_tokens": completion // 2,
                "total_tokens": prompt + completion,
                "cached_tokens": 256 if number == 2 else 0,
            },
        }

    return {
        "_ng_task_index": task_index,
        "_ng_rollout_index": rollout_index,
        "agent_ref": {"type": "responses_api_agents", "name": agent},
        "reward": 1.0,
        "ng_trajectory": {
            "schema_version": "1.0",
            "task_id": task_id,
            "rollout_id": rollout_id,
            "invocations": [
                {
                    "invocation_id": "root",
                    "status": "completed",
                    "model_calls": [
                        {"model_call_id": "model-call-1"},
                        {"model_call_id": "model-call-2"},
                    ],
                    "conversation": [*second_question, second_reasoning, answer],
                }
            ],
            "turns": [
                turn(1, first_question, [call], first_reasoning),
                turn(2, second_question, [answer], second_reasoning),
            ],
            "model_calls": [
                model_call(1, prompt_1, completion_1, "tool_calls"),
                model_call(2, prompt_2, completion_2, "stop"),
            ],
            "tool_calls": [
                {
                    "invocation_id": "root",
                    "tool_call_id": call_id,
                    "tool_name": "get_weather",
                    "status": "completed",
                    "started_at": started + 1.0,
                    "completed_at": started + 1.25,
                    "duration_ms": 250.0,
                    "timing_source": "executor",
                    "output": forecast,
                }
            ],
            "gaps": [],
        },
    }


def aggregate_metrics(
    agents: Sequence[str], tasks: int, repeats: int, rng: random.Random
) -> list[dict[str, Any]]:
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
) -> SampleRun:
    """Write a finished run into ``directory`` (created if needed) and describe it.

    Every record is one NeMo Gym's ``TrajectoryRecord`` accepts. ``publishes_turns=False``
    makes the run of an agent that publishes no turns (gaps ``turns_unavailable`` and
    ``conversation_unavailable`` on every row); ``rows_with_gaps`` get the
    ``resolution_unavailable`` gap a verifier without a verdict leaves.
    Rows are 0-based rollout positions; ``malformed_lines`` and ``blank_lines`` are 1-based
    line numbers of the written file. ``other_run_rollouts`` adds a second run's rollouts file
    of that name beside this one; ``mask_saved_config=False`` saves the config with live
    secrets, as a run saved by hand might.
    """
    run_dir = Path(directory)
    run_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    canaries = canaries or CanarySecrets()
    rollouts_path = run_dir / f"{benchmark}_rollouts.jsonl"
    without = set(rows_without_trajectory)
    with_gaps = set(rows_with_gaps)
    malformed = set(malformed_lines)
    blanks = set(blank_lines)
    lines: list[str] = []
    row = 0
    for task_index in range(tasks):
        for agent in agents:
            for rollout_index in range(repeats):
                record = make_rollout(
                    rng,
                    task_index,
                    rollout_index,
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
            "".join(json.dumps({"question": q}, ensure_ascii=False) + "\n" for q in _QUESTIONS),
            encoding="utf-8",
        )
        run.materialized_inputs.write_text(
            "".join(
                json.dumps(
                    {"_ng_task_index": t, "input": _QUESTIONS[t % len(_QUESTIONS)]},
                    ensure_ascii=False,
                )
                + "\n"
                for t in range(tasks)
            ),
            encoding="utf-8",
        )
    if other_run_rollouts:
        (run_dir / other_run_rollouts).write_text(
            json.dumps(make_rollout(rng, 0, 0, agents[0])) + "\n", encoding="utf-8"
        )
    return SampleRun(run, canaries, row)
