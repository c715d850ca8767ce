"""The shapes Gym's agents really record without ``ng_trajectory`` (#58), each from a row
built as Gym writes it (``tests.support.recorded_shapes``): refused strictly and by
``recorded_conversations`` alone, naming the relaxation that takes it; converted whole with it,
the trajectory holding what the row holds; valid for the ``atif`` models, for harbor's
validator (``--with_downloads``), and under ``--with_gym`` a row Gym's own models accept, whose
files Gym's reverify ingress reads or refuses for the reason the docs give."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import atif
import pytest

from tests.support import recorded_shapes
from tests.support.gym import GymOracle

SHAPES: dict[str, tuple[Callable[[int], dict[str, Any]], str]] = {
    "later user turns": (recorded_shapes.game_row, "later_turns"),
    "a last call without output": (recorded_shapes.unanswered_call_row, "unanswered_calls"),
    "an image in the prompt": (recorded_shapes.image_row, "images"),
    "aviary transitions": (recorded_shapes.transitions_row, "recorded_conversations"),
    "no indices": (
        lambda task: recorded_shapes.unindexed_row(recorded_shapes.game_row(task)),
        "unindexed_rows",
    ),
}
NEEDS = {
    "later user turns": ["later_turns", "recorded_conversations"],
    "a last call without output": ["recorded_conversations", "unanswered_calls"],
    "an image in the prompt": ["images", "recorded_conversations"],
    "aviary transitions": ["recorded_conversations"],
    "no indices": ["later_turns", "recorded_conversations", "unindexed_rows"],
}
"""Each shape's relaxations, exactly: what its trajectories record."""


def _run(tmp_path: Path, shape: str, rows: int = 3) -> Path:
    rollouts = tmp_path / "run" / "shape_rollouts.jsonl"
    rollouts.parent.mkdir()
    build = SHAPES[shape][0]
    rollouts.write_text("".join(json.dumps(build(task)) + "\n" for task in range(rows)))
    return rollouts


def _atif(cli, rollouts: Path, output: Path, relax: list[str]) -> dict[str, Any]:
    done = cli(
        "atif",
        f"+rollouts_jsonl_fpath={rollouts}",
        f"+output_dirpath={output}",
        "+agent_version=1.0",
        f"+relax=[{','.join(relax)}]",
        "--json",
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_shape_converts_whole_with_its_relaxations_and_only_with_them(
    cli, tmp_path, shape: str
) -> None:
    rollouts = _run(tmp_path, shape)
    needed = NEEDS[shape]
    for missing in needed:
        others = [name for name in needed if name != missing]
        refused = _atif(cli, rollouts, tmp_path / f"without-{missing}", others or ["failures"])
        assert refused["status"] == "failed", (missing, refused["message"])
        assert (
            f"relax=[{','.join(needed)}]" in refused["message"] or missing in (refused["message"])
        ), refused["message"]
    done = _atif(cli, rollouts, tmp_path / "atif", needed)
    assert done["status"] == "succeeded", done["message"]
    assert done["details"]["relaxation_counts"] == dict.fromkeys(needed, 3)
    for path in sorted((tmp_path / "atif").glob("*-*.json")):
        document = json.loads(path.read_text())
        atif.Trajectory.model_validate(document)
        assert document["extra"]["nemo_gym"]["relaxations"] == needed


def _steps(tmp_path: Path, shape: str, name: str = "0-0.json") -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = json.loads((tmp_path / "atif" / name).read_text())["steps"]
    return steps


def test_later_user_turns_are_user_steps_in_their_place(cli, tmp_path) -> None:
    _atif(cli, _run(tmp_path, "later user turns"), tmp_path / "atif", NEEDS["later user turns"])
    steps = _steps(tmp_path, "later user turns")
    assert [step["source"] for step in steps] == ["system", "user", "agent", "user", "agent"]
    assert steps[3]["message"] == "Your cards: 9, 4, 6 (19). Table shows 10."


def test_a_call_the_episode_ended_on_is_kept_without_a_result(cli, tmp_path) -> None:
    shape = "a last call without output"
    _atif(cli, _run(tmp_path, shape), tmp_path / "atif", NEEDS[shape])
    answered, last = [step for step in _steps(tmp_path, shape) if step.get("tool_calls")]
    assert [result["source_call_id"] for result in answered["observation"]["results"]] == [
        "call_0_1"
    ]
    assert "observation" not in last
    (call,) = last["tool_calls"]
    assert call["function_name"] == "bash"
    assert call["arguments"] == {"command": "echo COMPLETE_TASK_AND_SUBMIT"}
    assert call["extra"]["nemo_gym"]["recorded_output"] is None


def test_an_image_is_written_beside_the_trajectories_and_named_by_its_hash(cli, tmp_path) -> None:
    shape = "an image in the prompt"
    done = _atif(cli, _run(tmp_path, shape), tmp_path / "atif", NEEDS[shape])
    pixel = base64.b64decode(recorded_shapes.PIXEL_PNG)
    name = f"{hashlib.sha256(pixel).hexdigest()}.png"
    assert done["message"].startswith("wrote 3 ATIF trajectories and the 1 images they show")
    assert sorted(p.name for p in (tmp_path / "atif" / "images").iterdir()) == [name]
    assert (tmp_path / "atif" / "images" / name).read_bytes() == pixel
    user = _steps(tmp_path, shape)[1]
    assert user["message"] == [
        {"type": "text", "text": "Question 0: what colour is the pixel?"},
        {"type": "image", "source": {"media_type": "image/png", "path": f"images/{name}"}},
    ]
    assert user["extra"]["nemo_gym"]["image_details"] == ["high"]


def test_an_image_atif_has_no_media_type_for_stays_refused(cli, tmp_path) -> None:
    rollouts = tmp_path / "run" / "tiff_rollouts.jsonl"
    rollouts.parent.mkdir()
    row = recorded_shapes.image_row(0, media_type="image/tiff")
    rollouts.write_text(json.dumps(row) + "\n")
    refused = _atif(cli, rollouts, tmp_path / "atif", NEEDS["an image in the prompt"])
    assert refused["status"] == "failed"
    (rejected,) = refused["details"]["rejected_rows"]
    assert "responses_create_params.input[1].content[1].image_url: expected a base64" in rejected
    assert not (tmp_path / "atif").exists()


def test_transitions_are_read_as_the_last_which_holds_the_others(cli, tmp_path) -> None:
    shape = "aviary transitions"
    _atif(cli, _run(tmp_path, shape), tmp_path / "atif", NEEDS[shape])
    document = json.loads((tmp_path / "atif" / "0-0.json").read_text())
    assert document["extra"]["nemo_gym"]["source"]["transitions"] == 2
    calls = [step["tool_calls"][0]["function_name"] for step in document["steps"][1:]]
    assert calls == ["calculator", "submit_answer"]


def test_a_transition_that_is_no_prefix_of_the_last_is_refused(cli, tmp_path) -> None:
    rollouts = tmp_path / "run" / "t_rollouts.jsonl"
    rollouts.parent.mkdir()
    row = recorded_shapes.transitions_row(0)
    row["response"]["output"][0][0]["content"] = "Another question."
    rollouts.write_text(json.dumps(row) + "\n")
    refused = _atif(cli, rollouts, tmp_path / "atif", NEEDS["aviary transitions"])
    (rejected,) = refused["details"]["rejected_rows"]
    assert "response.output[0]: a transition that is not a prefix of the last" in rejected


def test_rows_without_indices_are_numbered_as_gyms_health_checks_number_them(cli, tmp_path) -> None:
    shape = "no indices"
    _atif(cli, _run(tmp_path, shape), tmp_path / "atif", NEEDS[shape])
    written = sorted(p.name for p in (tmp_path / "atif").glob("*-*.json"))
    assert written == ["0-0.json", "1-0.json", "2-0.json"]  # the line's ordinal, rollout 0
    source = json.loads((tmp_path / "atif" / "2-0.json").read_text())["extra"]["nemo_gym"]
    assert (source["source"]["task_index"], source["source"]["rollout_index"]) == (2, 0)


@pytest.mark.downloads
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_harbors_validator_passes_every_shape(cli, tmp_path, shape: str, harbor_validator) -> None:
    assert _atif(cli, _run(tmp_path, shape), tmp_path / "atif", NEEDS[shape])["status"] == (
        "succeeded"
    )
    for path in sorted((tmp_path / "atif").glob("*-*.json")):
        completed = harbor_validator(path)
        assert completed.returncode == 0, f"{path.name}: {completed.stdout}{completed.stderr}"


REVERIFY_REFUSES = {
    "an image in the prompt": "multimodal",
    "later user turns": "non-agent step 4 appears after agent output",
    "a last call without output": "has no observation result for tool call(s)",
    "no indices": "the rollouts: ",
}
"""What Gym 0.7.0's reverify ingress refuses of a shape, by its reason (its own rules: a
reverified request is text, ends where the agent's output begins, answers every call, and
joins the trajectory to a row by its indices); docs/exporters/atif.md says the same."""


@pytest.mark.gym
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_gyms_models_accept_the_row_and_its_reverify_reads_what_its_rules_allow(
    cli, gym_oracle: GymOracle, tmp_path, shape: str
) -> None:
    rollouts = _run(tmp_path, shape)
    for line in rollouts.read_text().splitlines():
        assert gym_oracle.conversation_errors(json.loads(line)) == {}
    assert _atif(cli, rollouts, tmp_path / "atif", NEEDS[shape])["status"] == "succeeded"
    read = gym_oracle.reverify(tmp_path / "atif" / "manifest.jsonl", rollouts)
    assert read["manifest_error"] is None
    if shape in REVERIFY_REFUSES:
        assert read["projected"] == []
        assert all(REVERIFY_REFUSES[shape] in reason for reason in read["refused"].values())
    else:
        assert read["refused"] == {}, read["refused"]
