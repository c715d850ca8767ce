"""One ``ng_trajectory`` record made an ATIF document (NeMo Gym's strict profile): the root
invocation's conversation makes the steps (:mod:`.steps`), each recorded turn must agree with
the step it describes and brings its model call (:mod:`.step_details`), and every model call
the record holds is accounted for, as Gym's exporter accounts for it."""

from __future__ import annotations

from typing import Any

from evalexport.trajectory.conversation import Item, ItemError, read_items
from evalexport.trajectory.profile import (
    ATIF_SCHEMA_VERSION,
    CONVERSION_PROFILE,
    REFERENCE_EXPORTER,
    TURNS_UNAVAILABLE,
    TrajectoryIdentity,
)
from evalexport.trajectory.record import (
    ModelCallRecord,
    ModelCallReference,
    TrajectoryRecord,
    TurnRecord,
)
from evalexport.trajectory.relaxations import Relaxations
from evalexport.trajectory.step_details import (
    add_token_metrics,
    check_completed,
    describe_step,
    final_metrics,
)
from evalexport.trajectory.steps import AgentGroup, StepBuilder, TrajectoryError

__all__ = ["RecordConversion"]


class RecordConversion:
    """The conversion of one record: checked as it is made, its document built on demand."""

    def __init__(
        self, trajectory: TrajectoryRecord, gap_codes: tuple[str, ...], relax: Relaxations
    ) -> None:
        self.trajectory = trajectory
        self.relax = relax
        self.without_turns = TURNS_UNAVAILABLE in gap_codes and not trajectory.turns
        if not trajectory.task_id.strip() or not trajectory.rollout_id.strip():
            raise TrajectoryError("ng_trajectory", "task_id and rollout_id cannot be blank")
        if len(trajectory.invocations) != 1:
            raise TrajectoryError(
                "ng_trajectory.invocations",
                f"expected exactly one root invocation, got {len(trajectory.invocations)}",
            )
        invocation = self.invocation = trajectory.invocations[0]
        where = "ng_trajectory.invocations[0]"
        if not invocation.invocation_id.strip():
            raise TrajectoryError(f"{where}.invocation_id", "cannot be blank")
        if (
            invocation.parent_invocation_id is not None
            or invocation.spawned_by_tool_call_id is not None
        ):
            raise TrajectoryError(where, "subagent invocations are not supported")
        if invocation.status != "completed" and not relax.permits("failures"):
            raise TrajectoryError(
                f"{where}.status", f"expected completed, got {invocation.status!r}"
            )
        if invocation.error_type is not None and not relax.permits("failures"):
            raise TrajectoryError(
                f"{where}.error_type",
                f"completed invocation records error {invocation.error_type!r}",
            )
        self.calls = trajectory.model_calls
        self.by_id: dict[str, list[int]] = {}
        self.by_response: dict[tuple[str, str, str], list[int]] = {}
        for index, call in enumerate(self.calls):
            if call.model_call_id and call.model_call_id.strip():
                self.by_id.setdefault(call.model_call_id, []).append(index)
            metadata = call.response_metadata
            if (
                metadata.model_ref is not None
                and metadata.response_id
                and metadata.response_id.strip()
            ):
                key = (metadata.model_ref.type, metadata.model_ref.name, metadata.response_id)
                self.by_response.setdefault(key, []).append(index)

    def document(
        self, identity: TrajectoryIdentity, agent_name: str, task: int, rollout: int
    ) -> dict[str, Any]:
        """The ATIF document of the record, its steps checked against its turns and calls."""
        answers = () if self.without_turns else [turn.answer for turn in self.trajectory.turns]
        builder = StepBuilder(self.invocation, self.trajectory.tool_calls, self.relax, answers)
        steps, groups = builder.build()
        if not self.without_turns and len(self.trajectory.turns) > len(groups):
            self._add_unanswered_steps(builder)
        used = set() if self.without_turns else self._apply_turns(groups)
        add_token_metrics(groups)  # ``token_ids`` relaxed: what the items carry
        surplus = [call.as_json() for index, call in enumerate(self.calls) if index not in used]
        names = [group.step.model_name for group in groups]
        model_name = names[0] if None not in names and len(set(names)) == 1 else None
        agent: dict[str, object] = {"name": agent_name, "version": identity.agent_version}
        if model_name is not None:
            agent["model_name"] = model_name
        invocation = self.invocation
        source: dict[str, object] = {
            "format": "ng_trajectory",
            "schema_version": self.trajectory.schema_version,
            "task_id": self.trajectory.task_id,
            "rollout_id": self.trajectory.rollout_id,
            "task_index": task,
            "rollout_index": rollout,
            "invocation_id": invocation.invocation_id,
            "invocation_status": invocation.status,
        }
        if invocation.error_type is not None:  # kept with ``failures`` relaxed
            source["invocation_error_type"] = invocation.error_type
        if invocation.duration_ms is not None:
            source["invocation_duration_ms"] = invocation.duration_ms
        nemo_gym: dict[str, object] = {
            "exporter": dict(REFERENCE_EXPORTER),
            "source": source,
            "conversion": {"profile": CONVERSION_PROFILE, "status": "complete"},
        }
        if surplus:
            nemo_gym["surplus_model_calls"] = surplus
        return {
            "schema_version": ATIF_SCHEMA_VERSION,
            "session_id": identity.session_id,
            "trajectory_id": f"{identity.session_id}:{task}:{rollout}",
            "agent": agent,
            "steps": [step.to_json() for step in steps],
            "final_metrics": final_metrics(groups, len(steps)),
            "extra": {"nemo_gym": nemo_gym},
        }

    def _add_unanswered_steps(self, builder: StepBuilder) -> None:
        """With ``failures`` relaxed, each turn past the conversation's last agent step whose
        answer is empty (a model call that returned nothing) becomes an empty agent step."""
        turns = self.trajectory.turns[len(builder.groups) :]
        if turns and all(turn.answer == [] for turn in turns) and self.relax.permits("failures"):
            for _ in turns:
                builder.add_unanswered_step()

    def _resolve(self, ref: ModelCallReference, path: str) -> tuple[int, ModelCallRecord]:
        if ref.model_call_id is not None and not ref.model_call_id.strip():
            raise TrajectoryError(f"{path}.model_call_id", "cannot be blank")
        if ref.response_id is not None and not ref.response_id.strip():
            raise TrajectoryError(f"{path}.response_id", "cannot be blank")
        if ref.model_call_id:
            candidates = self.by_id.get(ref.model_call_id, [])
            if not candidates:
                raise TrajectoryError(path, f"unknown model_call_id {ref.model_call_id!r}")
            what = "model_call_id"
        else:
            assert ref.model_ref is not None
            assert ref.response_id is not None
            key = (ref.model_ref.type, ref.model_ref.name, ref.response_id)
            candidates = self.by_response.get(key, [])
            if not candidates:
                raise TrajectoryError(
                    path,
                    f"model_ref {ref.model_ref.name!r} and response_id {ref.response_id!r} "
                    "do not match a captured model call",
                )
            what = "model_ref and response_id"
        if len(candidates) > 1:
            raise TrajectoryError(path, f"{what} match more than one captured model call")
        index = candidates[0]
        call = self.calls[index]
        if call.model_call_id is not None and not call.model_call_id.strip():
            raise TrajectoryError(
                f"ng_trajectory.model_calls[{index}].model_call_id", "cannot be blank"
            )
        captured_response_id = call.response_metadata.response_id
        if captured_response_id is not None and not captured_response_id.strip():
            raise TrajectoryError(
                f"ng_trajectory.model_calls[{index}].response_metadata.response_id",
                "cannot be blank",
            )
        if ref.response_id is not None and ref.response_id != captured_response_id:
            raise TrajectoryError(path, "response_id conflicts with the captured model call")
        if ref.model_ref is not None and ref.model_ref != call.response_metadata.model_ref:
            raise TrajectoryError(path, "model_ref conflicts with the captured model call")
        return index, call

    def _apply_turns(self, groups: list[AgentGroup]) -> set[int]:
        turns = self.trajectory.turns
        if len(turns) != len(groups):
            raise TrajectoryError(
                "ng_trajectory.turns",
                f"expected one turn for each of {len(groups)} agent steps, got {len(turns)}",
            )
        used: set[int] = set()
        tool_calls_so_far = 0
        for index, (turn, group) in enumerate(zip(turns, groups, strict=True)):
            path = f"ng_trajectory.turns[{index}]"
            differing = self._check_turn_copy(turn, group, index, path)
            tool_calls_so_far += group.tool_call_count
            if turn.step_count != tool_calls_so_far and not self.relax.permits("turn_copies"):
                raise TrajectoryError(
                    f"{path}.step_count",
                    f"does not match the cumulative tool-call count {tool_calls_so_far}",
                )
            if len(turn.model_calls) != 1:
                raise TrajectoryError(
                    f"{path}.model_calls",
                    f"expected exactly one captured model call, got {len(turn.model_calls)}",
                )
            call_index, call = self._resolve(turn.model_calls[0], f"{path}.model_calls[0]")
            if call_index in used:
                raise TrajectoryError(
                    f"{path}.model_calls[0]", "model call is referenced by more than one turn"
                )
            used.add(call_index)
            check_completed(call, group.step, path, self.relax)
            describe_step(group, turn, call, path, differing)
        self._check_invocation_calls(used)
        return used

    def _check_turn_copy(
        self, turn: TurnRecord, group: AgentGroup, index: int, path: str
    ) -> dict[str, object]:
        """Check the turn's copies of its step's items; return those that differ and are kept
        verbatim (``turn_copies`` relaxed), by field name."""
        if turn.invocation_id != self.invocation.invocation_id:
            raise TrajectoryError(f"{path}.invocation_id", "does not match the root invocation")
        if turn.turn_no != index + 1:
            raise TrajectoryError(f"{path}.turn_no", "turns must be ordered sequentially from 1")
        differing: dict[str, object] = {}
        for name, expected, meaning in (
            ("question", group.question, "the model-visible conversation prefix"),
            ("answer", group.answer, "the exported agent answer"),
            ("reasoning_content", group.reasoning or None, "the exported reasoning"),
        ):
            copy = getattr(turn, name)
            if _verbatim_copy(copy, expected):
                continue
            # A copy kept verbatim needs no relaxation to be read: count those only if it agrees.
            reading = self.relax.trial() if self.relax.allowed else self.relax
            try:
                canonical = None if copy is None else read_items(copy, f"{path}.{name}", reading)
            except ItemError:
                if not self.relax.permits("turn_copies"):
                    raise
                differing[name] = copy
                continue
            if not _same_items(canonical, expected):
                if not self.relax.permits("turn_copies"):
                    raise TrajectoryError(f"{path}.{name}", f"does not match {meaning}")
                differing[name] = copy
                continue
            self.relax.adopt(reading)
        return differing

    def _check_invocation_calls(self, used: set[int]) -> None:
        path = "ng_trajectory.invocations[0].model_calls"
        referenced = [
            self._resolve(ref, f"{path}[{index}]")[0]
            for index, ref in enumerate(self.invocation.model_calls)
        ]
        if len(referenced) != len(set(referenced)):
            raise TrajectoryError(path, "must not reference a captured model call more than once")
        missing = used - set(referenced)
        if missing:
            raise TrajectoryError(
                path,
                "must reference every turn-selected model call; "
                f"missing model_calls indices: {sorted(missing)}",
            )


def _verbatim_copy(copy: Any, expected: list[Item] | None) -> bool:
    """Whether a turn's copy holds the very items of the conversation, field for field.

    Then its canonical form is theirs too: every field of a convertible item is a string, a
    list or ``null``, where Python's == is JSON equality, so the copy need not be read again.
    """
    return expected is not None and copy == [item.raw for item in expected]


def _same_items(copy: Any, expected: Any) -> bool:
    if copy is None or expected is None:
        return copy is None and expected is None
    # Canonical items hold only strings, lists and objects, where == is JSON equality.
    return [item.canonical for item in copy] == [item.canonical for item in expected]
