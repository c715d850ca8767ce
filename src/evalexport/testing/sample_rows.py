"""The factory's rollout rows: each one NeMo Gym's ``TrajectoryRecord`` accepts, as an
evaluation of the aime24 kind leaves them (multi-turn, tool calls, reasoning, cached tokens,
unicode), made from a seeded random generator so a run is the same run each time."""

from __future__ import annotations

import json
import random
from typing import Any

from evalexport.testing.gym_shapes import (
    AgentRun,
    ToolUse,
    input_message,
    unpublished_trajectory,
)

__all__ = ["MODEL", "QUESTIONS", "make_rollout", "make_trajectory", "make_two_turn_rollout"]

MODEL = "nvidia/nemotron-nano-9b-v2"

QUESTIONS = (
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


def _turn_texts(rng: random.Random, task_index: int) -> tuple[str, str, str]:
    question = QUESTIONS[task_index % len(QUESTIONS)]
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
) -> dict[str, object]:
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
    record: dict[str, object] = {
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
        captured = make_trajectory(
            rng, task_index, rollout_index, use_tools=use_tools, publishes_turns=publishes_turns
        )
        record["ng_trajectory"] = captured
        if publishes_turns:  # the response's usage is the captured calls' total, as Gym's is
            response = record["response"]
            assert isinstance(response, dict)
            response["usage"] = captured_usage(captured)
    return record


def captured_usage(trajectory: dict[str, Any]) -> dict[str, int]:
    """The usage a rollout's response reports: the token counts of the model calls its turns
    made, summed (what NeMo Gym's ``rollout_token_count_mismatch`` health check compares)."""
    calls = trajectory["model_calls"]
    return {
        "input_tokens": sum(call["token_stats"]["prompt_tokens"] for call in calls),
        "output_tokens": sum(call["token_stats"]["completion_tokens"] for call in calls),
    }


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

    def turn(
        number: int, question: list[Any], answer_items: list[object], reasoning: object
    ) -> Any:
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
