"""Every read of a run is bounded and reads only regular files; a walk of the run directory
does not follow links out of it; none of it ends in a traceback or a hang."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from evalexport.reading import MAX_LINE_BYTES


def test_aggregate_metrics_that_are_a_device_are_refused_saying_what_they_are(
    cli, sample_run
) -> None:
    sample_run.run.aggregate_metrics.unlink()
    sample_run.run.aggregate_metrics.symlink_to("/dev/zero")
    for args in (
        ("inspect", str(sample_run.rollouts)),
        ("mlflow", f"+rollouts_jsonl_fpath={sample_run.rollouts}", "--dry-run"),
    ):
        run = cli(*args)
        assert "is a character device, not a regular file" in run.output, run.output
        assert "Traceback" not in run.output


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_rollouts_file_that_is_a_fifo_or_a_device_is_named_as_such(
    cli, tmp_path, kind: str
) -> None:
    rollouts = tmp_path / "run" / "aime24_rollouts.jsonl"
    rollouts.parent.mkdir()
    if kind == "fifo":
        os.mkfifo(rollouts)
    else:
        rollouts.symlink_to("/dev/zero")
    run = cli(
        "atif",
        f"+rollouts_jsonl_fpath={rollouts}",
        f"+output_dirpath={tmp_path / 'out'}",
        "+agent_version=1",
    )
    assert run.exit_code == 1
    what = "a FIFO (a named pipe)" if kind == "fifo" else "a character device"
    assert f"{rollouts} is {what}, not a regular file" in run.stdout
    assert "not found" not in run.stdout


def test_a_rollouts_file_without_a_line_break_is_refused_naming_the_line_and_the_limit(
    cli, make_sample_run, tmp_path
) -> None:
    sample = make_sample_run(agents=("aime24_math_tool_agent",))
    with sample.rollouts.open("wb") as handle:  # sparse: no line break in 576 MB
        handle.write(b"{")
        handle.truncate(MAX_LINE_BYTES + 64 * 1024 * 1024)
    expected = f"line 1 is longer than {MAX_LINE_BYTES // (1024 * 1024)} MiB"
    inspected = cli("inspect", str(sample.rollouts), "--json")
    assert expected in json.dumps(json.loads(inspected.stdout)["problems"])
    dry = cli("mlflow", f"+rollouts_jsonl_fpath={sample.rollouts}", "--dry-run")
    assert dry.exit_code == 1
    assert expected in dry.stdout
    atif = cli(
        "atif",
        f"+rollouts_jsonl_fpath={sample.rollouts}",
        f"+output_dirpath={tmp_path / 'out'}",
        "+agent_version=1",
    )
    assert atif.exit_code == 1
    assert "line 1: longer than 512 MiB, the longest line evalexport reads" in atif.stdout
    assert "names its agent" not in atif.stdout  # the line's own reason, not a guess (#46)


def test_evalrdl_reads_a_rollouts_file_without_a_line_break_no_further_than_the_limit(
    evalrdl_token, cli, sample_run
) -> None:
    with sample_run.rollouts.open("wb") as handle:  # sparse: no line break in 576 MB
        handle.truncate(MAX_LINE_BYTES + 64 * 1024 * 1024)
    dry = cli("evalrdl", f"+rollouts_jsonl_fpath={sample_run.rollouts}", "--dry-run")
    assert dry.exit_code == 1  # was: "would be uploaded", the whole file read into memory
    assert f"line 1 is longer than {MAX_LINE_BYTES // (1024 * 1024)} MiB" in dry.stdout


def test_a_link_out_of_the_run_directory_is_not_walked(evalrdl_token, cli, sample_run) -> None:
    (sample_run.run.run_dir / "rootfs").symlink_to("/")
    inspected = cli("inspect", str(sample_run.rollouts), "--json")
    assert inspected.exit_code == 0, inspected.output
    dry = cli("evalrdl", f"+rollouts_jsonl_fpath={sample_run.rollouts}", "--dry-run")
    assert dry.exit_code == 1
    assert "rootfs links to /, outside the run directory" in dry.stdout
    assert "Traceback" not in dry.output + inspected.output


def test_a_link_inside_the_run_directory_is_walked_once(
    evalrdl_token, cli, sample_run, tmp_path
) -> None:
    sidecars = sample_run.run.run_dir / "notes"
    sidecars.mkdir()
    (sidecars / "a.txt").write_text("a")
    (sample_run.run.run_dir / "notes-again").symlink_to(sidecars)
    dry = cli("evalrdl", f"+rollouts_jsonl_fpath={sample_run.rollouts}", "--dry-run", "--json")
    assert dry.exit_code == 0, dry.output
    planned = [Path(item["path"]).name for item in json.loads(dry.stdout)["plan"]["files"]]
    assert planned.count("a.txt") == 1


def test_a_link_back_round_the_run_directory_is_refused_before_the_upload_loops(
    evalrdl_token, cli, sample_run
) -> None:
    sidecars = sample_run.run.run_dir / "notes"
    sidecars.mkdir()
    (sidecars / "loop").symlink_to(sample_run.run.run_dir)
    dry = cli("evalrdl", f"+rollouts_jsonl_fpath={sample_run.rollouts}", "--dry-run")
    assert dry.exit_code == 1
    assert (
        f"{sidecars / 'loop'} links back to {sample_run.run.run_dir}, which holds it" in dry.stdout
    )
