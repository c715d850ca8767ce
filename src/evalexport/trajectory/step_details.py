"""What one step of a trajectory says beyond its conversation: its model call, checked as
completed, described as ATIF describes a step (time, model, reasoning effort, evidence), its
token metrics, and the trajectory's totals."""

from __future__ import annotations

from datetime import UTC, datetime

from evalexport.trajectory.record import ModelCallRecord, TurnRecord
from evalexport.trajectory.relaxations import Relaxations
from evalexport.trajectory.steps import AgentGroup, Step, TrajectoryError

__all__ = ["add_token_metrics", "check_completed", "describe_step", "final_metrics", "step_metrics"]

_INCOMPLETE_FINISH_REASONS = frozenset(
    {
        "aborted", "canceled", "cancelled", "content_filter", "failed", "incomplete", "length",
        "max_output_tokens", "max_tokens", "model_context_window_exceeded", "pause_turn",
        "refusal", "timed_out", "timeout",
    }
)  # fmt: skip


def check_completed(call: ModelCallRecord, step: Step, path: str, relax: Relaxations) -> None:
    """Refuse a model call that did not prove a complete response, unless relaxed: ``failures``
    for a failed or truncated call, ``finish_reasons`` for a reason contradicting the output.
    The step's model-call evidence keeps every field either relaxation lets through."""
    metadata = call.response_metadata
    if metadata.response_status not in (None, "completed") and not relax.permits("failures"):
        raise TrajectoryError(path, f"model call is {metadata.response_status!r}, not completed")
    if metadata.error_category is not None and not relax.permits("failures"):
        raise TrajectoryError(
            path, f"model call records provider error {metadata.error_category!r}"
        )
    if (
        metadata.status_code is not None
        and not 200 <= metadata.status_code < 300
        and not relax.permits("failures")
    ):
        raise TrajectoryError(
            path, f"model call returned non-success status {metadata.status_code}"
        )
    if metadata.model is not None and not metadata.model.strip():
        raise TrajectoryError(f"{path}.model_calls[0].model", "cannot be blank")
    reason = metadata.finish_reason
    if reason is None:
        return
    if not reason.strip():
        raise TrajectoryError(f"{path}.model_calls[0].finish_reason", "cannot be blank")
    normalized = reason.strip().lower()
    if normalized in _INCOMPLETE_FINISH_REASONS:
        if relax.permits("failures"):
            return  # a truncated call: its reason need not prove completion
        raise TrajectoryError(
            path, f"finish reason {reason!r} indicates an incomplete model response"
        )
    uses_tools = bool(step.tool_calls)
    if metadata.dialect == "chat":
        allowed = {"tool_calls", "function_call"} if uses_tools else {"stop"}
        if normalized not in allowed and not relax.permits("finish_reasons"):
            raise TrajectoryError(
                path, f"Chat finish reason {reason!r} does not prove a completed response"
            )
    if metadata.dialect == "messages":
        allowed = {"tool_use"} if uses_tools else {"end_turn", "stop_sequence"}
        if normalized not in allowed and not relax.permits("finish_reasons"):
            raise TrajectoryError(
                path, f"Messages stop reason {reason!r} does not prove a completed response"
            )
    if (
        uses_tools
        and normalized in {"stop", "end_turn", "stop_sequence"}
        and not relax.permits("finish_reasons")
    ):
        raise TrajectoryError(path, f"finish reason {reason!r} contradicts the captured tool calls")
    if (
        not uses_tools
        and normalized in {"tool_calls", "tool_use", "function_call"}
        and not relax.permits("finish_reasons")
    ):
        raise TrajectoryError(
            path, f"finish reason {reason!r} contradicts the captured text-only output"
        )


def describe_step(
    group: AgentGroup,
    turn: TurnRecord,
    call: ModelCallRecord,
    path: str,
    differing_copies: dict[str, object],
) -> None:
    """Give an agent step its turn's timestamp and its model call's model, metrics and evidence
    (with the turn's copies that differ from the conversation, kept verbatim)."""
    step = group.step
    try:
        moment = datetime.fromtimestamp(turn.timestamp, UTC)
    except (OverflowError, OSError, ValueError):
        raise TrajectoryError(
            f"{path}.timestamp",
            f"{turn.timestamp!r} cannot be represented as an ISO 8601 timestamp",
        ) from None
    step.timestamp = moment.isoformat().replace("+00:00", "Z")
    step.model_name = call.response_metadata.model
    step.llm_call_count = 1
    step.metrics = step_metrics(call, path)
    turn_facts: dict[str, object] = {"turn_no": turn.turn_no, "step_count": turn.step_count}
    if turn.resolved is not None:
        turn_facts["resolved"] = turn.resolved
    evidence: dict[str, object] = {
        "turn": turn_facts,
        "model_call": call.as_json(),
    }
    if group.source_items:
        evidence["source_items"] = group.source_items
    if differing_copies:
        evidence["turn_copies"] = differing_copies
    step.extra = {"nemo_gym": evidence}


def step_metrics(call: ModelCallRecord, path: str) -> dict[str, object] | None:
    """The step's ``metrics`` from its model call's usage (``None`` when it recorded none);
    counts that contradict one another are refused."""
    stats = call.token_stats
    prompt, completion = stats.prompt_tokens, stats.completion_tokens
    reasoning, total, cached = stats.reasoning_tokens, stats.total_tokens, stats.cached_tokens
    if total is not None:
        for name, value in (
            ("prompt_tokens", prompt),
            ("completion_tokens", completion),
            ("reasoning_tokens", reasoning),
            ("cached_tokens", cached),
        ):
            if value is not None and value > total:
                raise TrajectoryError(
                    path, f"model-call {name} {value} exceeds total_tokens {total}"
                )
        if prompt is not None and completion is not None and prompt + completion > total:
            raise TrajectoryError(
                path, "model-call prompt_tokens plus completion_tokens exceeds total_tokens"
            )
    if cached is not None and prompt is not None and cached > prompt:
        raise TrajectoryError(
            path, "model-call cached_tokens exceeds prompt_tokens; cached tokens must be a subset"
        )
    if reasoning is not None and completion is not None and reasoning > completion:
        raise TrajectoryError(
            path,
            "model-call reasoning_tokens exceeds completion_tokens; reasoning tokens must be a subset",
        )
    if all(value is None for value in (prompt, completion, reasoning, total, cached)):
        return None
    metrics: dict[str, object] = {
        name: value
        for name, value in (
            ("prompt_tokens", prompt),
            ("completion_tokens", completion),
            ("cached_tokens", cached),
        )
        if value is not None
    }
    extra = {
        name: value
        for name, value in (("reasoning_tokens", reasoning), ("total_tokens", total))
        if value is not None
    }
    if extra:
        metrics["extra"] = extra
    return metrics


def final_metrics(groups: list[AgentGroup], total_steps: int) -> dict[str, object]:
    """The trajectory's ``final_metrics``: its steps' token counts added up, as Gym adds them
    (a total only where every agent step counted it)."""
    metrics = [group.step.metrics for group in groups]
    final: dict[str, object] = {}
    if metrics and all(metric is not None for metric in metrics):
        for key, name in (
            ("total_prompt_tokens", "prompt_tokens"),
            ("total_completion_tokens", "completion_tokens"),
            ("total_cached_tokens", "cached_tokens"),
        ):
            values: list[int] = [
                value
                for metric in metrics
                if metric is not None and (value := metric.get(name)) is not None
            ]
            if len(values) == len(metrics):
                final[key] = sum(values)
    final["total_steps"] = total_steps
    return final


def add_token_metrics(groups: list[AgentGroup]) -> None:
    """With ``token_ids`` relaxed: each agent step's generation token IDs and log probabilities
    (carried by the generation's last output item, where Gym's model servers put them) in its
    ``metrics``, as ATIF v1.7 names them. A step holding two generations' bundles is refused:
    ATIF's step metrics hold one."""
    for group in groups:
        carriers = [item for item in (*group.reasoning, *group.answer) if item.tokens is not None]
        if not carriers:
            continue
        if len(carriers) > 1:
            raise TrajectoryError(
                carriers[1].path,
                f"a second generation's token IDs in one agent step (the first at "
                f"{carriers[0].path}); ATIF's step metrics hold one generation's",
            )
        tokens = carriers[0].tokens
        assert tokens is not None
        group.step.metrics = {**(group.step.metrics or {}), **tokens}
