"""Relaxations of NeMo Gym's strict ATIF profile that a user opts in to (``+relax=[...]``).

Gym's strict exporter refuses some rows that lose nothing in ATIF: a developer prompt, a message
in the Responses API's easy-input form, a failed or truncated run. Each relaxation names one
such family of refusals and says exactly what the trajectory holds instead; nothing is dropped.
A conversion asks :meth:`Relaxations.permits` at the very place it would refuse, so a
relaxation counts as *used* only by a row that needed it: that is what the trajectory, the
manifest line and the result record, and what ``evalexport inspect`` reports a run needs.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Final, Literal, cast, final, get_args

__all__ = ["RELAXATIONS", "Relaxation", "Relaxations", "known_relaxations"]

Relaxation = Literal[
    "developer_messages",
    "easy_input_messages",
    "empty_reasoning",
    "failures",
    "finish_reasons",
    "images",
    "interleaved_tool_results",
    "later_turns",
    "message_phases",
    "reasoning_segments",
    "recorded_conversations",
    "token_ids",
    "turn_copies",
    "unanswered_calls",
    "unindexed_rows",
    "unnamed_agents",
]

RELAXATIONS: Final[dict[Relaxation, str]] = {
    "developer_messages": (
        "a developer message before the agent's first output becomes an ATIF system step whose "
        'extra.nemo_gym.source_role is "developer"'
    ),
    "easy_input_messages": (
        'a message without "type" (the Responses API\'s easy-input form) is read as a message, '
        "an assistant message whose content is a string as the agent's answer, and a turn "
        "question given as a string as one user message (as Gym's agents read a string input)"
    ),
    "empty_reasoning": (
        "a reasoning item with neither summary nor content text (a model that reasoned "
        "silently) gives no reasoning_content; its id stays in extra.nemo_gym.source_items"
    ),
    "failures": (
        "a failed or incomplete invocation, model call, message or tool call is kept: the "
        "invocation's error_type goes to extra.nemo_gym.source, a model call's status, error "
        "and finish reason stay in its step's model-call evidence, a message's status in "
        "source_items.message_status, a tool's status and error_type in its call or result, "
        "arguments that are not a JSON object as written in the call's "
        "extra.nemo_gym.arguments_text (its arguments then {}), and a model call that answered "
        "nothing is an agent step with an empty message"
    ),
    "finish_reasons": (
        "a finish reason that contradicts the captured output (stop with tool calls, or a "
        "Chat/Messages reason that does not name completion) is kept as recorded in the "
        "step's model-call evidence"
    ),
    "images": (
        "an input_image part of a system or user message (a vision benchmark's prompt) is an "
        "ATIF v1.7 image part: a base64 data URL's image is written beside the trajectories "
        "as images/<sha256>.<ext> and the part's source names that file, an http(s) URL is "
        "named as it is; the part's detail (auto, low, high) is kept in the step's "
        "extra.nemo_gym.image_details. Files, video and images ATIF has no media type for "
        "(or that are no URL) stay refused. Gym 0.7.0's reverify ingress reads no multimodal "
        "step"
    ),
    "interleaved_tool_results": (
        "function calls that one turn's answer names together are one agent step even when "
        "the conversation interleaves their results (call, result, call, result)"
    ),
    "later_turns": (
        "a system or user message after the agent's first output (an environment that answers "
        "as a later user turn, as Gym's game agents record it, or a multi-turn history given "
        "as the input) is an ATIF step of its source in its place, and the agent steps after "
        "it are asked with it"
    ),
    "message_phases": (
        "a message's phase (commentary or final_answer) is kept in its step's "
        "extra.nemo_gym.source_items.message_phase (extra.nemo_gym.message_phase for a system "
        "or user step)"
    ),
    "reasoning_segments": (
        "several reasoning texts of one agent step are joined by a blank line into its "
        "reasoning_content; extra.nemo_gym.source_items.reasoning_segment_lengths gives each "
        "text's length in Unicode code points, so the boundaries can be restored"
    ),
    "recorded_conversations": (
        "a row without ng_trajectory (Gym's rollout observability is off by default) gets its "
        "trajectory from the conversation it records: responses_create_params.input, then "
        "response.output, as Gym's agents speak them (system and user steps; agent steps with "
        "their reasoning, messages and tool calls; the function outputs that answer them as "
        "observations; where an agent records its transitions, as Gym's aviary agent does, "
        "the last, which holds the others, with extra.nemo_gym.source.transitions their "
        "count); extra.nemo_gym.source says so (format responses_conversation) and "
        "keeps the response's id, status, model and usage and the row's reward; an item it "
        "does not know, a call without its output and an output without its call are refused"
    ),
    "token_ids": (
        "the token IDs and log probabilities Gym's model servers attach to a generation's "
        "last output item (prompt_token_ids, generation_token_ids, generation_log_probs) go to "
        "the metrics of the agent step holding that item, as ATIF v1.7's prompt_token_ids, "
        "completion_token_ids and logprobs; a bundle of three empty lists (nothing recorded) "
        "writes nothing; recorded routed_experts, which ATIF has no field for, is still refused "
        "(null records nothing), and so "
        "is a partial bundle or one on an item no agent step holds. Gym 0.7.0's reverify "
        "ingress refuses trajectories with token metadata: leave this out of files for reverify"
    ),
    "turn_copies": (
        "a turn whose question, answer or reasoning copy, or whose step_count, disagrees with "
        "the conversation is kept: the steps follow the conversation, each differing copy is "
        "kept verbatim in the step's extra.nemo_gym.turn_copies, and the step count stays in "
        "extra.nemo_gym.turn"
    ),
    "unanswered_calls": (
        "a function call the conversation holds no output for (the episode ended on it, or "
        "the agent ran only some of one response's calls) is kept as a call with no "
        "observation result; its extra.nemo_gym.recorded_output is null to say so"
    ),
    "unindexed_rows": (
        "a row without _ng_task_index or _ng_rollout_index (Gym's own example files, rows "
        "written before Gym numbered them) is numbered as Gym's health checks number it: the "
        "task index is its line's ordinal in the file, from 0, and the rollout index 0; the "
        "trajectory's file name and extra.nemo_gym.source carry those numbers"
    ),
    "unnamed_agents": (
        "a row that names no agent (no agent_ref.name and no environment server stamp, as "
        "older Gym rows) takes the agent name given by +agent_name=NAME, which it needs"
    ),
}
"""Every relaxation and what it changes: the registry the option, the README's table and the
tests are held to."""

assert set(RELAXATIONS) == set(get_args(Relaxation))
_NONE: Final[frozenset[Relaxation]] = frozenset()


def known_relaxations(names: Collection[str]) -> frozenset[Relaxation]:
    """``names`` as a set of relaxations; :class:`ValueError` naming any unknown one."""
    unknown = sorted(set(names) - set(RELAXATIONS))
    if unknown:
        raise ValueError(
            f"unknown relaxations {', '.join(unknown)}; known: {', '.join(sorted(RELAXATIONS))}"
        )
    return cast("frozenset[Relaxation]", frozenset(names))


@final
class Relaxations:
    """The relaxations one row may use, and those it did use."""

    __slots__ = ("allowed", "used")

    def __init__(self, allowed: Collection[str] = ()) -> None:
        self.allowed = known_relaxations(allowed) if allowed else _NONE
        self.used: set[str] = set()

    def permits(self, relaxation: Relaxation) -> bool:
        """Whether the strict refusal at hand is relaxed; a ``True`` records the use."""
        if relaxation in self.allowed:
            self.used.add(relaxation)
            return True
        return False

    def trial(self) -> Relaxations:
        """The same relaxations allowed, none used yet: for a reading that may be discarded
        (its uses count only once :meth:`adopt` takes them)."""
        trial = Relaxations()
        trial.allowed = self.allowed
        return trial

    def adopt(self, trial: Relaxations) -> None:
        """Count the relaxations ``trial`` used as used here."""
        if trial is not self:
            self.used |= trial.used

    def applied(self) -> tuple[str, ...]:
        """The relaxations used so far, sorted: what the row's trajectory records."""
        return tuple(sorted(self.used))
