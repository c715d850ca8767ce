"""``ng_trajectory`` (schema 1.0) to ATIF v1.7 trajectories (SPEC §4).

One rollout becomes one trajectory:

* a ``system`` step with the system prompt of the first model call, when there is one;
* per turn, a ``user`` step with the question, then one ``agent`` step per model call of the
  turn. An agent step carries the model's tool calls (``arguments`` as a JSON object), the
  results of those calls as observations, its reasoning, its model and its token metrics;
  the turn's last agent step carries the turn's answer as its message;
* ``final_metrics`` summing the agent steps, and reward, task and rollout index in ``extra``
  (ATIF has no reward field).

Token stats follow the OpenAI usage convention: ``prompt_tokens`` already counts the cached
tokens, so ``cached_tokens`` is a subset of it, as ATIF requires. Questions and answers that are
not strings become JSON text. Anything the conversion cannot place (a tool result no model call
asked for, a model call a turn names but the record lacks) is refused with a
:class:`TrajectoryError` naming it; nothing is dropped silently.

The trajectory is built and validated with the ``atif`` package's models, imported on first use.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, final

if TYPE_CHECKING:
    import atif

__all__ = ["ATIF_SCHEMA_VERSION", "TrajectoryError", "TrajectoryIdentity", "convert_rollout"]

ATIF_SCHEMA_VERSION = "ATIF-v1.7"
NG_TRAJECTORY_SCHEMA = "1.0"


class TrajectoryError(ValueError):
    """A rollout's ``ng_trajectory`` cannot be converted; the message says what and where."""


@final
@dataclass(frozen=True)
class TrajectoryIdentity:
    """Who made the trajectory and where it belongs, from the exporter's options."""

    session_id: str
    agent_version: str
    agent_name: str | None = None
    """Overrides the rollout's ``agent_ref.name`` when set."""


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _content_text(content: Any) -> str:
    """The text of an OpenAI-style content field: a string or a list of typed parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, Mapping))
    return _as_text(content)


def _response_items(model_call: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    response = model_call.get("response")
    output = response.get("output") if isinstance(response, Mapping) else None
    return [item for item in output or [] if isinstance(item, Mapping)]


def _response_text(model_call: Mapping[str, Any]) -> str:
    return "".join(
        _content_text(item.get("content"))
        for item in _response_items(model_call)
        if item.get("type") == "message"
    )


def _response_reasoning(model_call: Mapping[str, Any]) -> str | None:
    parts: list[str] = []
    for item in _response_items(model_call):
        if item.get("type") != "reasoning":
            continue
        for field in ("summary", "content"):
            value = item.get(field)
            if isinstance(value, list):
                parts.extend(p.get("text", "") for p in value if isinstance(p, Mapping))
            elif isinstance(value, str):
                parts.append(value)
    text = "\n".join(part for part in parts if part)
    return text or None


def _system_prompt(model_calls: Iterable[Mapping[str, Any]]) -> str | None:
    for model_call in model_calls:
        request = model_call.get("request")
        if not isinstance(request, Mapping):
            continue
        if isinstance(request.get("instructions"), str) and request["instructions"]:
            return str(request["instructions"])
        for message in request.get("input") or request.get("messages") or []:
            if isinstance(message, Mapping) and message.get("role") in ("system", "developer"):
                return _content_text(message.get("content"))
        return None
    return None


class _Converter:
    """Converts one rollout; ``where`` prefixes every error (``line 12``)."""

    def __init__(self, record: Mapping[str, Any], where: str) -> None:
        import atif

        self.atif = atif
        self.record = record
        self.where = where
        trajectory = record.get("ng_trajectory")
        if not isinstance(trajectory, Mapping):
            raise TrajectoryError(f"{where}: the rollout has no ng_trajectory record")
        self.trajectory = trajectory
        self.model_calls = self._index("model_calls", "model_call_id")
        self.tool_results = self._index("tool_calls", "tool_call_id")
        self.placed_tool_results: set[str] = set()
        self.steps: list[atif.Step] = []

    def _index(self, field: str, key: str) -> dict[str, Mapping[str, Any]]:
        items = self.trajectory.get(field) or []
        if not isinstance(items, list):
            raise TrajectoryError(f"{self.where}: ng_trajectory.{field} is not a list")
        index: dict[str, Mapping[str, Any]] = {}
        for position, item in enumerate(items):
            if not isinstance(item, Mapping) or not isinstance(item.get(key), str):
                raise TrajectoryError(
                    f"{self.where}: ng_trajectory.{field}[{position}] has no {key}"
                )
            if item[key] in index:
                raise TrajectoryError(f"{self.where}: duplicate {key} {item[key]!r}")
            index[item[key]] = item
        return index

    def _add_step(self, **fields: Any) -> None:
        self.steps.append(self.atif.Step(step_id=len(self.steps) + 1, **fields))

    def convert(self, identity: TrajectoryIdentity) -> atif.Trajectory:
        version = self.trajectory.get("schema_version", NG_TRAJECTORY_SCHEMA)
        if version != NG_TRAJECTORY_SCHEMA:
            raise TrajectoryError(
                f"{self.where}: ng_trajectory schema_version {version!r} is not supported "
                f"(supported: {NG_TRAJECTORY_SCHEMA!r})"
            )
        turns = self.trajectory.get("turns") or []
        if not isinstance(turns, list) or not turns:
            raise TrajectoryError(f"{self.where}: ng_trajectory has no turns")
        if system := _system_prompt(self.model_calls.values()):
            self._add_step(source="system", message=system)
        for turn in turns:
            self._convert_turn(turn)
        unplaced = sorted(set(self.tool_results) - self.placed_tool_results)
        if unplaced:
            raise TrajectoryError(
                f"{self.where}: tool calls {', '.join(unplaced)} were run but no model call "
                "of a turn requested them"
            )
        return self._trajectory(identity)

    def _convert_turn(self, turn: Any) -> None:
        if not isinstance(turn, Mapping):
            raise TrajectoryError(f"{self.where}: a turn is not an object")
        turn_label = f"turn {turn.get('turn_no', '?')}"
        self._add_step(
            source="user", message=_as_text(turn.get("question")), timestamp=turn.get("timestamp")
        )
        call_ids = turn.get("model_calls") or []
        for position, call_id in enumerate(call_ids):
            model_call = self.model_calls.get(call_id)
            if model_call is None:
                raise TrajectoryError(
                    f"{self.where}: {turn_label} names model call {call_id!r}, "
                    "which the ng_trajectory does not hold"
                )
            last = position == len(call_ids) - 1
            self._add_agent_step(model_call, turn if last else None)
        if not call_ids:
            reasoning = turn.get("reasoning_content")
            self._add_step(
                source="agent",
                message=_as_text(turn.get("answer")),
                reasoning_content=reasoning if isinstance(reasoning, str) and reasoning else None,
            )

    def _add_agent_step(
        self, model_call: Mapping[str, Any], closing_turn: Mapping[str, Any] | None
    ) -> None:
        tool_calls = [
            self._tool_call(item)
            for item in _response_items(model_call)
            if item.get("type") == "function_call"
        ]
        results = [
            self._observation_result(call.tool_call_id)
            for call in tool_calls
            if call.tool_call_id in self.tool_results
        ]
        message = _response_text(model_call)
        reasoning = _response_reasoning(model_call)
        if closing_turn is not None:
            message = _as_text(closing_turn.get("answer")) or message
            turn_reasoning = closing_turn.get("reasoning_content")
            if isinstance(turn_reasoning, str) and turn_reasoning:
                reasoning = turn_reasoning
        metadata = model_call.get("response_metadata")
        model_name = metadata.get("model") if isinstance(metadata, Mapping) else None
        self._add_step(
            source="agent",
            message=message,
            model_name=model_name if isinstance(model_name, str) else None,
            reasoning_content=reasoning,
            tool_calls=tool_calls or None,
            observation=self.atif.Observation(results=results) if results else None,
            metrics=self._metrics(model_call),
            extra={"model_call_id": model_call["model_call_id"]},
        )

    def _tool_call(self, item: Mapping[str, Any]) -> atif.ToolCall:
        call_id = item.get("call_id") or item.get("id")
        name = item.get("name")
        if not isinstance(call_id, str) or not isinstance(name, str):
            raise TrajectoryError(f"{self.where}: a function call has no call_id or name")
        raw = item.get("arguments")
        extra = None
        try:
            arguments = json.loads(raw) if isinstance(raw, str) else raw
        except json.JSONDecodeError:
            arguments = None
        if not isinstance(arguments, dict):
            # Kept verbatim and flagged: models do emit arguments that are not a JSON object.
            arguments, extra = {}, {"raw_arguments": _as_text(raw)}
        return self.atif.ToolCall(
            tool_call_id=call_id, function_name=name, arguments=arguments, extra=extra
        )

    def _observation_result(self, call_id: str) -> atif.ObservationResult:
        self.placed_tool_results.add(call_id)
        result = self.tool_results[call_id]
        extra = {
            key: result[key]
            for key in ("tool_name", "status", "started_at", "ended_at", "invocation_id")
            if result.get(key) is not None
        }
        return self.atif.ObservationResult(
            source_call_id=call_id, content=_as_text(result.get("output")), extra=extra or None
        )

    def _metrics(self, model_call: Mapping[str, Any]) -> atif.Metrics | None:
        stats = model_call.get("token_stats")
        if not isinstance(stats, Mapping):
            return None
        prompt, completion, cached = (
            stats.get(key) for key in ("prompt_tokens", "completion_tokens", "cached_tokens")
        )
        if isinstance(prompt, int) and isinstance(cached, int) and cached > prompt:
            raise TrajectoryError(
                f"{self.where}: model call {model_call['model_call_id']} reports "
                f"{cached} cached tokens out of {prompt} prompt tokens; prompt_tokens must "
                "include the cached ones"
            )
        reasoning = stats.get("reasoning_tokens")
        return self.atif.Metrics(
            prompt_tokens=prompt,
            completion_tokens=completion,
            cached_tokens=cached,
            extra={"reasoning_tokens": reasoning} if isinstance(reasoning, int) else None,
        )

    def _trajectory(self, identity: TrajectoryIdentity) -> atif.Trajectory:
        agent_steps = [step for step in self.steps if step.source == "agent"]

        def total(field: str) -> int:
            return sum(getattr(step.metrics, field) or 0 for step in agent_steps if step.metrics)

        agent_ref = self.record.get("agent_ref")
        agent_name = identity.agent_name or (
            agent_ref.get("name") if isinstance(agent_ref, Mapping) else None
        )
        if not isinstance(agent_name, str) or not agent_name:
            raise TrajectoryError(
                f"{self.where}: the rollout has no agent_ref.name; pass +agent_name=NAME"
            )
        model_names = [step.model_name for step in agent_steps if step.model_name]
        task_index = self.record.get("_ng_task_index")
        rollout_index = self.record.get("_ng_rollout_index")
        trajectory_id = self.trajectory.get("rollout_id") or f"{task_index}/{rollout_index}"
        return self.atif.Trajectory(
            schema_version=ATIF_SCHEMA_VERSION,
            session_id=identity.session_id,
            trajectory_id=str(trajectory_id),
            agent=self.atif.Agent(
                name=agent_name,
                version=identity.agent_version,
                model_name=model_names[0] if model_names else None,
            ),
            steps=self.steps,
            final_metrics=self.atif.FinalMetrics(
                total_prompt_tokens=total("prompt_tokens"),
                total_completion_tokens=total("completion_tokens"),
                total_cached_tokens=total("cached_tokens"),
                total_steps=len(self.steps),
            ),
            extra={
                "reward": self.record.get("reward"),
                "task_index": task_index,
                "rollout_index": rollout_index,
                "task_id": self.trajectory.get("task_id"),
                "rollout_id": self.trajectory.get("rollout_id"),
            },
        )


def convert_rollout(
    record: Mapping[str, Any], identity: TrajectoryIdentity, where: str
) -> atif.Trajectory:
    """Convert one rollout line to an ATIF trajectory validated by the ``atif`` models.

    ``where`` names the rollout in errors (``"line 12"``). Raises :class:`TrajectoryError`.
    Coverage gaps are the caller's to refuse (strict export refuses them before converting).
    """
    from pydantic import ValidationError

    try:
        return _Converter(record, where).convert(identity)
    except ValidationError as error:
        first = error.errors()[0]
        location = ".".join(str(part) for part in first["loc"])
        raise TrajectoryError(
            f"{where}: the converted trajectory is not valid ATIF ({location}: {first['msg']})"
        ) from None
