"""Hypothesis properties of the run-directory rules (SPEC §1)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from evalexport.run import RunArtifacts

STEMS = st.from_regex(r"[a-z][a-z0-9]{0,8}(_[a-z0-9]{1,6})?_rollouts", fullmatch=True)
OTHER_NAMES = st.from_regex(r"[a-z][a-z0-9_.-]{0,20}", fullmatch=True) | st.sampled_from(
    [
        "rollouts.jsonl",
        "gpqa_rollouts.jsonl",
        "x_rollouts.jsonl.bak",
        "rollouts.json",
        "notes_rollouts.jsonl.tmp",
        "_rollouts.jsonl",
        "rollouts.jsonl.gz",
    ]
)


def _is_rollouts_name(name: str) -> bool:
    return name == "rollouts.jsonl" or name.endswith("_rollouts.jsonl")


@given(stem=STEMS, others=st.sets(OTHER_NAMES, max_size=6), via_symlink=st.booleans())
def test_the_directory_rule_sees_exactly_the_other_runs_rollouts(
    stem: str, others: set[str], via_symlink: bool
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        run_dir = Path(directory) / "run"
        target_dir = Path(directory) / "target"
        run_dir.mkdir()
        target_dir.mkdir()
        rollouts = run_dir / f"{stem}.jsonl"
        if via_symlink:
            real = target_dir / f"{stem}.jsonl"
            real.write_text("{}\n")
            (target_dir / "decoy_rollouts.jsonl").write_text("{}\n")
            rollouts.symlink_to(real)
        else:
            rollouts.write_text("{}\n")
        others.discard(rollouts.name)
        for name in others:
            (run_dir / name).write_text("")
        run = RunArtifacts.from_rollouts_path(rollouts)

        assert run.run_dir == run_dir
        expected = sorted(name for name in others if _is_rollouts_name(name))
        assert [path.name for path in run.other_runs_in_directory()] == expected
        assert (run.shared_directory_reason() is None) == (not expected)


@given(stem=STEMS, has_metrics=st.booleans(), has_config=st.booleans(), has_rollouts=st.booleans())
def test_the_first_missing_required_file_is_named(
    stem: str, has_metrics: bool, has_config: bool, has_rollouts: bool
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        run = RunArtifacts.from_rollouts_path(Path(directory) / f"{stem}.jsonl")
        for present, path in (
            (has_rollouts, run.rollouts),
            (has_metrics, run.aggregate_metrics),
            (has_config, run.saved_config),
        ):
            if present:
                path.write_text("[]")
        reason = run.missing_file_reason(needs_metrics_and_config=True)
        if not has_rollouts:
            assert reason == f"Rollouts file not found: {run.rollouts}"
        elif not has_metrics:
            assert reason is not None
            assert reason.startswith(f"Aggregate metrics not found: {run.aggregate_metrics}. ")
            assert f"gym eval profile --inputs INPUTS.jsonl --rollouts {run.rollouts}" in reason
        elif not has_config:
            assert reason is not None
            assert reason.startswith(f"Saved run config not found: {run.saved_config}. ")
            assert f"evalexport save-config {run.rollouts} CONFIG.yaml" in reason
        else:
            assert reason is None
        for path in (
            run.aggregate_metrics,
            run.saved_config,
            run.sidecar_dir,
            run.export_marker("x"),
        ):
            assert path.parent == run.run_dir
            assert path.name.startswith(stem)
