"""``ng_trajectory`` records shaped exactly as NeMo Gym 0.7.0 writes them.

NeMo Gym's simple agent builds one root invocation whose ``conversation`` is the request input
followed by every output item, one turn per model call (its ``question`` the input so far, its
``answer`` the non-reasoning output, its ``reasoning_content`` the reasoning items), and one tool
record per executed function call. Rollout collection then adds the captured model calls and
dumps the record with ``model_dump(mode="json")``: every optional field is present, as ``null``
when unset. :class:`AgentRun` reproduces that, so tests and the example runs feed evalexport the
records Gym itself writes; under ``--with_gym`` each one is validated by Gym's own
``TrajectoryRecord``.

An agent that does not publish turns leaves ``invocations`` and ``turns`` empty and records the
gaps rollout collection adds (:func:`unpublished_trajectory`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal, final

__all__ = [
    "MODEL_REF",
    "AgentRun",
    "ToolUse",
    "input_message",
    "output_message",
    "reasoning_item",
    "unpublished_trajectory",
]

MODEL_REF = {"type": "responses_api_models", "name": "policy_model"}


def input_message(role: str, content: str | list[str]) -> dict[str, object]:
    """An ``EasyInputMessage`` as Gym dumps it; a list of strings becomes input_text parts."""
    body: object = (
        content
        if isinstance(content, str)
        else [{"text": text, "type": "input_text"} for text in content]
    )
    return {"content": body, "role": role, "type": "message", "phase": None}


def output_message(item_id: str, texts: list[str], status: str = "completed") -> dict[str, object]:
    """A Responses API output message item, as Gym's agents record one."""
    return {
        "id": item_id,
        "content": [
            {"annotations": [], "text": text, "type": "output_text", "logprobs": None}
            for text in texts
        ],
        "role": "assistant",
        "status": status,
        "type": "message",
        "phase": None,
    }


def reasoning_item(item_id: str, text: str, *, as_summary: bool = True) -> dict[str, object]:
    """A reasoning item: its text as a summary (OpenAI models) or as content (open models)."""
    if as_summary:
        return {
            "id": item_id,
            "summary": [{"text": text, "type": "summary_text"}],
            "type": "reasoning",
            "encrypted_content": None,
            "content": None,
        }
    return {
        "id": item_id,
        "summary": [],
        "type": "reasoning",
        "encrypted_content": None,
        "content": [{"text": text, "type": "reasoning_text"}],
    }


def generation_tokens(seed: int, prompt: int, completion: int) -> dict[str, list[Any]]:
    """A generation's token bundle as Gym's model servers attach it to its last output item:
    ``prompt`` prompt token IDs, ``completion`` generated ones and a log probability each
    (made up from ``seed``, the same every time)."""
    return {
        "prompt_token_ids": [(seed * 7919 + index) % 151_936 for index in range(prompt)],
        "generation_token_ids": [(seed * 104_729 + index) % 151_936 for index in range(completion)],
        "generation_log_probs": [
            round(-((seed + index) % 97) / 31, 6) for index in range(completion)
        ],
    }


@final
@dataclass(frozen=True)
class ToolUse:
    """One function call the model makes and what the tool answers."""

    name: str
    arguments: dict[str, object]
    output: str
    status: Literal["completed", "failed", "timeout"] = "completed"


@dataclass
class AgentRun:
    """Builds one rollout's ``ng_trajectory`` turn by turn, as Gym's simple agent records it."""

    task_id: str
    rollout_id: str
    prompt: list[dict[str, object]]
    model: str = "nvidia/nemotron-nano-9b-v2"
    started_at: float = 1_787_713_200.0
    invocation_id: str = "root"
    conversation: list[dict[str, object]] = field(init=False)
    turns: list[dict[str, object]] = field(default_factory=list)
    model_calls: list[dict[str, object]] = field(default_factory=list)
    tool_calls: list[dict[str, object]] = field(default_factory=list)
    invocation_refs: list[dict[str, object]] = field(default_factory=list)
    clock: float = field(init=False)

    def __post_init__(self) -> None:
        self.conversation = list(self.prompt)
        self.clock = self.started_at

    def _tick(self, seconds: float) -> float:
        self.clock = round(self.clock + seconds, 6)
        return self.clock

    def turn(
        self,
        *,
        reasoning: str | None = None,
        reasoning_as_summary: bool = True,
        answer: list[str] | None = None,
        tools: list[ToolUse] | None = None,
        finish_reason: str | None = None,
        status_code: int = 200,
        prompt_tokens: int = 900,
        completion_tokens: int = 350,
        cached_tokens: int | None = 256,
        with_model_call_id: bool = False,
        answered: bool = True,
        response_status: Literal["completed", "incomplete"] = "completed",
        token_ids: bool = False,
    ) -> AgentRun:
        """One model call: optional reasoning, then either tool calls or an answer message.

        ``token_ids=True`` puts the generation's token IDs and log probabilities on its last
        output item, as Gym's model servers do when asked to return them
        (``return_token_id_information``: ``prompt_token_ids``, ``generation_token_ids``,
        ``generation_log_probs``; Gym's item models then read it as the ``...ForTraining``
        variant).

        ``answered=False`` without tools is a call that returned no message (reasoning only, or
        nothing): Gym's simple agent then ends the run as ``incomplete``. ``response_status``
        is the Responses ``status`` the model server gave (``incomplete`` when truncated).
        """
        number = len(self.turns) + 1
        question = json.loads(json.dumps(self.conversation))
        timestamp = self._tick(0.5)
        output: list[dict[str, Any]] = []
        if reasoning is not None:
            output.append(
                reasoning_item(
                    f"rs_{self.rollout_id}_{number}", reasoning, as_summary=reasoning_as_summary
                )
            )
        calls = []
        for position, tool in enumerate(tools or []):
            call_id = f"call_{self.rollout_id}_{number}_{position}"
            calls.append(
                {
                    "arguments": json.dumps(tool.arguments),
                    "call_id": call_id,
                    "name": tool.name,
                    "type": "function_call",
                    "id": f"fc_{self.rollout_id}_{number}_{position}",
                    "status": "completed",
                    "namespace": None,
                }
            )
        output.extend(calls)
        if not calls and answered:
            output.append(
                output_message(
                    f"msg_{self.rollout_id}_{number}", answer or ["Done."], response_status
                )
            )
        if token_ids and output:
            output[-1].update(generation_tokens(number, prompt_tokens, completion_tokens))
        response_id = f"resp_{self.rollout_id}_{number}"
        model_call_id = f"mc_{self.rollout_id}_{number}"
        reference = {
            "model_call_id": None,
            "model_ref": dict(MODEL_REF),
            "response_id": response_id,
        }
        if with_model_call_id:
            reference["model_call_id"] = model_call_id
        self.turns.append(
            {
                "invocation_id": self.invocation_id,
                "task_id": self.task_id,
                "rollout_id": self.rollout_id,
                "turn_no": number,
                "timestamp": timestamp,
                "question": question,
                "answer": [item for item in output if item["type"] != "reasoning"],
                "reasoning_content": [item for item in output if item["type"] == "reasoning"]
                or None,
                "resolved": None,
                "step_count": len(self.tool_calls) + len(calls),
                "model_calls": [reference],
            }
        )
        completed_at = self._tick(2.25)
        reasoning_tokens = min(completion_tokens, 120) if reasoning else None
        self.model_calls.append(
            {
                "model_call_id": model_call_id,
                "started_at": timestamp,
                "completed_at": completed_at,
                "duration_ms": round((completed_at - timestamp) * 1000, 3),
                "request": {"model": self.model, "input": question, "max_output_tokens": 16384},
                "response": {
                    "id": response_id,
                    "object": "response",
                    "model": self.model,
                    "output": output,
                    "status": response_status,
                },
                "response_metadata": {
                    "response_id": response_id,
                    "model_ref": dict(MODEL_REF),
                    "model": self.model,
                    "dialect": "responses",
                    "status_code": status_code,
                    "response_status": response_status,
                    "finish_reason": finish_reason,
                    "upstream_attempted": True,
                    "response_source": "upstream",
                    "upstream_status_code": status_code,
                    "local_response_reason": None,
                    "error_category": None if status_code < 400 else "provider_error",
                    "latency_ttft_ms": 180.5,
                },
                "token_stats": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "reasoning_tokens": reasoning_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                    "cached_tokens": cached_tokens,
                },
            }
        )
        self.invocation_refs.append(
            {
                "model_call_id": model_call_id,
                "model_ref": dict(MODEL_REF),
                "response_id": response_id,
            }
        )
        self.conversation.extend(output)
        for call, tool in zip(calls, tools or [], strict=True):
            started = self._tick(0.1)
            completed = self._tick(0.4)
            self.tool_calls.append(
                {
                    "kind": "tool_call",
                    "invocation_id": self.invocation_id,
                    "tool_call_id": call["call_id"],
                    "sandbox_id": None,
                    "tool_name": tool.name,
                    "started_at": started,
                    "completed_at": completed,
                    "duration_ms": 400.0,
                    "timing_source": "executor",
                    "status": tool.status,
                    "error_type": None if tool.status == "completed" else f"tool_{tool.status}",
                    "output": tool.output,
                }
            )
            self.conversation.append(
                {
                    "call_id": call["call_id"],
                    "output": tool.output,
                    "type": "function_call_output",
                    "id": None,
                    "status": None,
                }
            )
        return self

    def record(
        self,
        *,
        status: Literal["completed", "failed", "incomplete", "unknown"] = "completed",
        resolved: bool | None = None,
        gaps: list[dict[str, object]] | None = None,
    ) -> dict[str, object]:
        """The ``ng_trajectory`` as rollout collection dumps it."""
        turns = json.loads(json.dumps(self.turns))
        if resolved is not None and turns:
            turns[-1]["resolved"] = resolved
        if resolved is None and gaps is None:
            gaps = [{"code": "resolution_unavailable", "invocation_id": "root", "detail": None}]
        return {
            "schema_version": "1.0",
            "task_id": self.task_id,
            "rollout_id": self.rollout_id,
            "invocations": [
                {
                    "kind": "agent_invocation",
                    "invocation_id": self.invocation_id,
                    "parent_invocation_id": None,
                    "spawned_by_tool_call_id": None,
                    "status": status,
                    "duration_ms": round((self.clock - self.started_at) * 1000, 3),
                    "error_type": None,
                    "model_calls": self.invocation_refs,
                    "conversation": self.conversation,
                }
            ],
            "turns": turns,
            "model_calls": self.model_calls,
            "tool_calls": self.tool_calls,
            "gaps": gaps or [],
        }


def unpublished_trajectory(
    task_id: str, rollout_id: str, prompt: str, answer: str, *, model: str = "gym-policy-model"
) -> dict[str, object]:
    """The record of an agent that publishes no turns: only captured model calls, and gaps."""
    response_id = f"chatcmpl-{rollout_id}"
    return {
        "schema_version": "1.0",
        "task_id": task_id,
        "rollout_id": rollout_id,
        "invocations": [],
        "turns": [],
        "model_calls": [
            {
                "model_call_id": f"mc_{rollout_id}",
                "started_at": 1_787_713_218.525783,
                "completed_at": 1_787_713_236.2685,
                "duration_ms": 17742.72,
                "request": {"messages": [{"role": "user", "content": prompt}], "model": model},
                "response": {
                    "id": response_id,
                    "object": "chat.completion",
                    "choices": [
                        {
                            "finish_reason": "stop",
                            "index": 0,
                            "message": {"role": "assistant", "content": answer},
                        }
                    ],
                },
                "response_metadata": {
                    "response_id": response_id,
                    "model_ref": dict(MODEL_REF),
                    "model": model,
                    "dialect": "chat",
                    "status_code": 200,
                    "response_status": None,
                    "finish_reason": "stop",
                    "upstream_attempted": None,
                    "response_source": None,
                    "upstream_status_code": None,
                    "local_response_reason": None,
                    "error_category": None,
                    "latency_ttft_ms": 17742.49,
                },
                "token_stats": {
                    "prompt_tokens": 6343,
                    "completion_tokens": 403,
                    "reasoning_tokens": None,
                    "total_tokens": 6746,
                    "cached_tokens": None,
                },
            }
        ],
        "tool_calls": [],
        "gaps": [
            {"code": "turns_unavailable", "invocation_id": None, "detail": None},
            {"code": "conversation_unavailable", "invocation_id": None, "detail": None},
        ],
    }
