"""``ng_trajectory`` records as harnesses other than Gym's simple agent write them.

Gym's ``TrajectoryRecord`` accepts more than its simple agent writes, and Gym's own trajectory
acceptance fixture (``tests/unit_tests/fixtures/trajectory_acceptance_matrix.jsonl`` in
NVIDIA-NeMo/Gym) holds two such records, which Gym's strict ATIF exporter refuses. The two
functions here build records of the same shapes, with texts of their own:

- :func:`interleaved_trajectory`: a complete run whose messages are in the Responses API's
  easy-input form (no ``type``), whose two parallel tool calls have their results interleaved
  in the conversation (call, result, call, result), whose reasoning is only in the turn's copy,
  whose second turn's question holds only the new input, whose turns count steps before the
  tools ran, and whose model calls report ``stop`` even when they end in tool calls.
- :func:`failed_trajectory`: a failed run: the first model call got an HTTP 500, the retry was
  cut by ``max_output_tokens``; the conversation holds only the question, each turn's question
  is a string, and its reasoning copies are the harness's own notes.

Under ``--with_gym`` the tests check that Gym's model accepts both and that Gym's exporter
refuses both.
"""

from __future__ import annotations

from typing import Any

from evalexport.testing.gym_shapes import MODEL_REF

__all__ = ["failed_trajectory", "interleaved_trajectory"]


def _reference(call_id: str) -> dict[str, object]:
    return {
        "model_call_id": call_id,
        "model_ref": dict(MODEL_REF),
        "response_id": f"resp-{call_id}",
    }


def _model_call(
    call_id: str,
    span: tuple[float, float],
    request: list[dict[str, Any]],
    response: dict[str, object],
    metadata: dict[str, object],
    tokens: tuple[int, int, int, int, int],
) -> dict[str, object]:
    prompt, completion, reasoning, total, cached = tokens
    return {
        "model_call_id": call_id,
        "started_at": span[0],
        "completed_at": span[1],
        "duration_ms": (span[1] - span[0]) * 1000,
        "request": {"input": request},
        "response": response,
        "response_metadata": {
            "response_id": f"resp-{call_id}",
            "model_ref": dict(MODEL_REF),
            "model": "harness-policy",
            "dialect": "responses",
            **metadata,
        },
        "token_stats": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "reasoning_tokens": reasoning,
            "total_tokens": total,
            "cached_tokens": cached,
        },
    }


def _identity(task_id: str, rollout_id: str, invocation: dict[str, object]) -> dict[str, object]:
    """A record's first fields: its schema, its task and rollout, its one root invocation."""
    return {
        "schema_version": "1.0",
        "task_id": task_id,
        "rollout_id": rollout_id,
        "invocations": [invocation],
    }


def _turn(
    task_id: str, rollout_id: str, number: int, timestamp: float, **fields: object
) -> dict[str, object]:
    return {
        "invocation_id": "root",
        "task_id": task_id,
        "rollout_id": rollout_id,
        "turn_no": number,
        "timestamp": timestamp,
        **fields,
    }


def interleaved_trajectory(task_id: str, rollout_id: str) -> dict[str, object]:
    """A complete run in a harness's own shape (see the module's docstring)."""
    question = {"role": "user", "content": "Compare the two price lists."}
    calls = [
        {
            "type": "function_call",
            "call_id": f"{rollout_id}-{side}",
            "name": side,
            "arguments": "{}",
        }
        for side in ("north", "south")
    ]
    results = [
        {
            "type": "function_call_output",
            "call_id": call["call_id"],
            "output": f"{call['name']}: 12",
        }
        for call in calls
    ]
    answer = {"role": "assistant", "content": "Both lists price it at 12."}
    ok = {"status_code": 200, "response_status": "completed", "finish_reason": "stop"}
    first, second = f"{rollout_id}-c1", f"{rollout_id}-c2"
    invocation = {
        "kind": "agent_invocation",
        "invocation_id": "root",
        "status": "completed",
        "duration_ms": 3500,
        "model_calls": [_reference(first), _reference(second)],
        "conversation": [question, calls[0], results[0], calls[1], results[1], answer],
    }
    return {
        **_identity(task_id, rollout_id, invocation),
        "turns": [
            _turn(
                task_id,
                rollout_id,
                1,
                1.0,
                question=[question],
                answer=calls,
                reasoning_content=[
                    {
                        "type": "reasoning",
                        "content": [{"type": "reasoning_text", "text": "Ask both at once."}],
                    }
                ],
                resolved=None,
                step_count=0,
                model_calls=[_reference(first)],
            ),
            _turn(
                task_id,
                rollout_id,
                2,
                3.5,
                question=[question, *results],
                answer=[{"type": "message", **answer}],
                reasoning_content=None,
                resolved=True,
                step_count=2,
                model_calls=[_reference(second)],
            ),
        ],
        "model_calls": [
            _model_call(first, (1.0, 1.5), [question], {"output": calls}, ok, (20, 8, 3, 28, 0)),
            _model_call(second, (2.6, 3.5), results, {"output": [answer]}, ok, (34, 9, 0, 43, 20)),
        ],
        "tool_calls": [
            {
                "kind": "tool_call",
                "invocation_id": "root",
                "tool_call_id": call["call_id"],
                "tool_name": call["name"],
                "started_at": 1.5 + offset / 10,
                "completed_at": 2.5 - offset / 10,
                "duration_ms": 1000 - 200 * offset,
                "timing_source": "executor",
                "status": "completed",
                "output": result["output"],
            }
            for offset, (call, result) in enumerate(zip(calls, results, strict=True))
        ],
        "gaps": [],
    }


def failed_trajectory(task_id: str, rollout_id: str) -> dict[str, object]:
    """A failed run in a harness's own shape (see the module's docstring)."""
    first, second = f"{rollout_id}-c1", f"{rollout_id}-c2"
    request = [{"role": "user", "content": "Prove the lemma."}]
    invocation = {
        "kind": "agent_invocation",
        "invocation_id": "root",
        "status": "failed",
        "duration_ms": 95000,
        "error_type": "GenerationError",
        "model_calls": [_reference(first), _reference(second)],
        "conversation": [{"role": "user", "content": "Prove the lemma."}],
    }
    return {
        **_identity(task_id, rollout_id, invocation),
        "turns": [
            _turn(
                task_id,
                rollout_id,
                number,
                timestamp,
                question=question,  # the harness's new input, as a string
                answer=[],
                reasoning_content=[{"type": "reasoning", "content": note}],  # its own notes
                resolved=resolved,
                step_count=0,
                model_calls=[_reference(call_id)],
            )
            for number, timestamp, question, note, resolved, call_id in (
                (1, 20.0, "Prove the lemma.", "server error", None, first),
                (2, 22.0, "Try again, step by step.", "ran out of tokens", False, second),
            )
        ],
        "model_calls": [
            _model_call(
                first,
                (20.0, 21.0),
                request,
                {"error": {"message": "upstream unavailable"}},
                {
                    "status_code": 500,
                    "response_status": "failed",
                    "finish_reason": "stop",
                    "error_category": "upstream",
                },
                (11, 2, 2, 13, 0),
            ),
            _model_call(
                second,
                (22.0, 115.0),
                request,
                {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}},
                {
                    "status_code": 200,
                    "response_status": "incomplete",
                    "finish_reason": "max_output_tokens",
                },
                (30, 96, 96, 126, 8),
            ),
        ],
        "tool_calls": [],
        "gaps": [],
    }
