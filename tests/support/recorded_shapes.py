"""Rollout rows without ``ng_trajectory`` in the shapes NeMo Gym's own agents record them.

Gym's rollout observability, which writes ``ng_trajectory``, is off by default: a row holds its
conversation as the request (``responses_create_params``) and the response Gym's agent returned.
The agents of Gym 0.7.0's own example files record shapes beyond the simple agent's, and each
function here builds a row of one of them, with texts of its own:

- :func:`game_row`: an environment that answers as later ``user`` turns in ``response.output``
  (Gym's blackjack, grl_sokoban, grl_tetris, tales, example_multi_turn_gymnasium);
- :func:`unanswered_call_row`: a coding agent whose episode ended on a tool call, so its last
  call has no output (mini_swe_agent_2, wordle, gdpval);
- :func:`image_row`: a vision benchmark whose prompt carries an image as a base64 data URL
  (image_tools, circle_click, gui_coordinate, vlm_eval_kit);
- :func:`transitions_row`: Gym's aviary agent with ``return_transitions``: ``response.output``
  is the agent's input at each step, each a prefix of the next (aviary_gsm8k, aviary_hotpotqa);
- :func:`unindexed_row`: any of them as Gym's example files hold them, without
  ``_ng_task_index`` and ``_ng_rollout_index`` (58 of Gym 0.7.0's example files).

Each request is one Gym's ``NeMoGymResponseCreateParamsNonStreaming`` accepts and each response
one its ``NeMoGymResponse`` accepts (the transitions row: its aviary response); under
``--with_gym`` the tests ask Gym's own models (``GymOracle.conversation_errors``).
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = [
    "PIXEL_PNG",
    "game_row",
    "image_row",
    "transitions_row",
    "unanswered_call_row",
    "unindexed_row",
]

PIXEL_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
"""A 1x1 PNG, base64: the image a vision row's prompt carries."""
_MODEL = "policy_model"


def _message(role: str, text: str) -> dict[str, object]:
    """A message as Gym's agents put an environment's turn or a prompt: typed, no id."""
    return {"content": text, "role": role, "type": "message"}


def _answer(item_id: str, text: str) -> dict[str, object]:
    """An assistant message as Gym's model servers return it."""
    return {
        "id": item_id,
        "content": [{"annotations": [], "text": text, "type": "output_text", "logprobs": None}],
        "role": "assistant",
        "status": "completed",
        "type": "message",
    }


def _call(call_id: str, name: str, arguments: str) -> dict[str, object]:
    return {
        "arguments": arguments,
        "call_id": call_id,
        "name": name,
        "type": "function_call",
        "id": call_id,
        "status": "completed",
    }


def _output(call_id: str, text: str) -> dict[str, object]:
    return {"call_id": call_id, "output": text, "type": "function_call_output"}


def _reasoning(item_id: str, text: str) -> dict[str, object]:
    return {
        "id": item_id,
        "summary": [{"text": text, "type": "summary_text"}],
        "type": "reasoning",
    }


def _row(
    task: int,
    agent: str,
    given: list[dict[str, object]],
    output: list[Any],
    reward: float,
    **response: object,
) -> dict[str, Any]:
    return {
        "responses_create_params": {"input": given, "temperature": 1.0},
        "response": {
            "id": f"resp_{agent}_{task}",
            "created_at": 1764979200.0,
            "model": _MODEL,
            "object": "response",
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "status": "completed",
            "usage": {
                "input_tokens": 310,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 42,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 352,
            },
            **response,
        },
        "reward": reward,
        "_ng_task_index": task,
        "_ng_rollout_index": 0,
        "agent_ref": {"type": "responses_api_agents", "name": agent},
    }


def game_row(task: int = 0) -> dict[str, Any]:
    """A card game: the agent answers, the environment deals as a later ``user`` turn, the
    agent answers again."""
    return _row(
        task,
        "card_game_agent",
        [
            _message(
                "system", "You play Twenty-One. Answer <move>draw</move> or <move>hold</move>."
            ),
            _message("user", f"Your cards: 9, 4 (13). Table shows 10. Round {task}."),
        ],
        [
            _answer(f"msg_{task}_1", "<move>draw</move>"),
            _message("user", "Your cards: 9, 4, 6 (19). Table shows 10."),
            _answer(f"msg_{task}_2", "<move>hold</move>"),
        ],
        1.0,
    )


def unanswered_call_row(task: int = 0) -> dict[str, Any]:
    """A coding agent: a tool call answered, then a last call the episode ended on."""
    return _row(
        task,
        "shell_coding_agent",
        [_message("user", f"Make the test in tests/test_sum_{task}.py pass.")],
        [
            _reasoning(f"rs_{task}_1", "Look at the failing test first."),
            _call(f"call_{task}_1", "bash", '{"command": "pytest -q"}'),
            _output(f"call_{task}_1", "1 failed: expected 3, got 2"),
            _reasoning(f"rs_{task}_2", "Fix the off-by-one, then submit."),
            _call(f"call_{task}_2", "bash", '{"command": "echo COMPLETE_TASK_AND_SUBMIT"}'),
        ],
        0.0,
    )


def image_row(
    task: int = 0, image: str = PIXEL_PNG, media_type: str = "image/png"
) -> dict[str, Any]:
    """A vision question: the prompt's text and image parts, the agent's answer."""
    return _row(
        task,
        "vision_agent",
        [
            _message("system", "Answer with one word."),
            {
                "content": [
                    {"text": f"Question {task}: what colour is the pixel?", "type": "input_text"},
                    {
                        "detail": "high",
                        "type": "input_image",
                        "image_url": f"data:{media_type};base64,{image}",
                    },
                ],
                "role": "user",
                "type": "message",
            },
        ],
        [_answer(f"msg_{task}", "black")],
        1.0,
    )


def transitions_row(task: int = 0) -> dict[str, Any]:
    """Gym's aviary agent with ``return_transitions``: the input is empty, and each output
    entry is the agent's conversation after one environment step."""
    steps = [
        _message("user", f"What is {task} + 40?"),
        _reasoning(f"rs_{task}_1", "Use the calculator."),
        _call(f"call_{task}_1", "calculator", f'{{"expr": "{task} + 40"}}'),
        _output(f"call_{task}_1", str(task + 40)),
        _reasoning(f"rs_{task}_2", "Submit it."),
        _call(f"call_{task}_2", "submit_answer", f'{{"answer": "{task + 40}"}}'),
        _output(f"call_{task}_2", "Correct."),
    ]
    return _row(
        task,
        "aviary_calculator_agent",
        [],
        [copy.deepcopy(steps[:4]), copy.deepcopy(steps)],
        1.0,
        contains_transitions=True,
        env_id=f"calculator-{task}",
        group_id=f"calculator-{task}",
    )


def unindexed_row(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` as Gym's example files hold it: without its task and rollout indices."""
    return {k: v for k, v in row.items() if k not in ("_ng_task_index", "_ng_rollout_index")}
