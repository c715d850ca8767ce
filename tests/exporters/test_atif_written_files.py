"""An ATIF export that says "wrote N" wrote N distinct files, each the length of the bytes its
manifest line's hash was taken of.

The duplicate key of these tests is the one that once slipped through the first-line tracker:
``(0, 8)`` far past its task's array, then overtaken by the array's growth, then seen again.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from evalexport.backends.atif import file_outcome, files
from evalexport.backends.atif.manifest import staged_output_problem

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "aime24" / "aime24_rollouts.jsonl"
DUPLICATED_KEYS = [(0, 8), (0, 1), (0, 9), (0, 8)]


def _rows_with_keys(tmp_path: Path, keys: list[tuple[int, int]]) -> Path:
    """The example's first rows, renumbered to ``keys`` (Gym's model takes any indices)."""
    run_dir = tmp_path / "dup"
    run_dir.mkdir()
    rollouts = run_dir / "aime24_rollouts.jsonl"
    with EXAMPLE.open() as example, rollouts.open("w") as out:
        for (task, rollout), line in zip(keys, example, strict=False):
            row = json.loads(line)
            row["_ng_task_index"], row["_ng_rollout_index"] = task, rollout
            out.write(json.dumps(row) + "\n")
    return rollouts


def _export(cli, rollouts: Path, output: Path, *extra: str):
    return cli(
        "atif",
        f"+rollouts_jsonl_fpath={rollouts}",
        f"+output_dirpath={output}",
        "+agent_version=1.0",
        *extra,
    )


def test_a_key_seen_again_after_its_tasks_array_grew_past_it_fails_and_writes_nothing(
    cli, tmp_path
) -> None:
    rollouts = _rows_with_keys(tmp_path, DUPLICATED_KEYS)
    output = tmp_path / "out"
    run = _export(cli, rollouts, output)
    assert run.exit_code == 1, run.output
    assert "line 4: duplicate Gym rollout key (task 0, rollout 8), first on line 1" in run.stdout
    # No option accepts a repeated key, so the refusal says so rather than pointing to inspect.
    assert "no +allow_gaps or +relax option accepts a repeated one" in run.stdout
    assert "evalexport inspect" not in run.stdout
    assert not output.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dup"]
    dry = _export(cli, rollouts, output, "--dry-run")
    assert dry.exit_code == 1
    assert "duplicate Gym rollout key (task 0, rollout 8)" in dry.stdout
    assert "no +allow_gaps or +relax option accepts a repeated one" in dry.stdout


def test_inspect_does_not_accept_a_file_with_a_duplicate_key(cli, tmp_path) -> None:
    rollouts = _rows_with_keys(tmp_path, DUPLICATED_KEYS)
    report = json.loads(cli("inspect", str(rollouts), "--json").stdout)
    assert "duplicate Gym rollout key (task 0, rollout 8)" in json.dumps(report["atif"])


def test_a_duplicate_the_conversion_misses_is_caught_before_the_output_is_put_in_place(
    cli, tmp_path, monkeypatch
) -> None:
    # A conversion that forgets every key: the last check alone stands between the user and
    # an output that names 0-8.json twice with one of its hashes matching no file.
    monkeypatch.setattr(file_outcome.FirstLines, "earlier", lambda self, key, line_number: None)
    rollouts = _rows_with_keys(tmp_path, DUPLICATED_KEYS)
    output = tmp_path / "out"
    run = _export(cli, rollouts, output, "--json")
    assert run.exit_code == 1, run.output
    message = json.loads(run.stdout)["message"]
    assert "failed its own check of the files it wrote" in message
    assert "manifest.jsonl line 4 names 0-8.json a second time" in message
    assert not output.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dup"]


def test_a_file_cut_short_after_hashing_fails_the_export(cli, tmp_path, monkeypatch) -> None:
    written = files.write_trajectory

    def write_then_corrupt(line_number, converted, data, directory, output):
        row = written(line_number, converted, data, directory, output)
        if output is not None and line_number == 2:
            (output / row.file_name).write_bytes(data[:-1])
        return row

    monkeypatch.setattr(files, "write_trajectory", write_then_corrupt)
    rollouts = _rows_with_keys(tmp_path, [(0, 0), (0, 1), (0, 2)])
    output = tmp_path / "out"
    run = _export(cli, rollouts, output)
    assert run.exit_code == 1
    assert "0-1.json holds" in run.stdout
    assert "not the" in run.stdout
    assert "its manifest.jsonl line 2 expected_sha256 was taken of" in run.stdout
    assert not output.exists()


def _data(name: str) -> bytes:
    return f'{{"name": "{name}"}}'.encode()


def _sizes(names: list[str]) -> list[int]:
    return [len(_data(name)) for name in names]


def _staged(directory: Path, names: list[str], *, manifest: list[str] | None = None) -> Path:
    directory.mkdir()
    lines = []
    for name in names:
        data = _data(name)
        (directory / name).write_bytes(data)
        digest = hashlib.sha256(data).hexdigest()
        lines.append(json.dumps({"trajectory_path": name, "expected_sha256": digest}))
    (directory / "manifest.jsonl").write_text("".join(f"{line}\n" for line in manifest or lines))
    return directory


def test_a_staged_output_that_matches_its_manifest_passes(tmp_path) -> None:
    staged = _staged(tmp_path / "s", ["0-0.json", "0-1.json"])
    assert staged_output_problem(staged, 2, _sizes(["0-0.json", "0-1.json"])) is None


def test_a_reported_count_other_than_the_manifests_fails(tmp_path) -> None:
    staged = _staged(tmp_path / "s", ["0-0.json", "0-1.json"])
    assert staged_output_problem(staged, 3, _sizes(["0-0.json", "0-1.json"])) == (
        "manifest.jsonl names 2 trajectories, the export converted 3"
    )


def test_a_file_the_manifest_does_not_name_fails(tmp_path) -> None:
    staged = _staged(tmp_path / "s", ["0-0.json"])
    (staged / "0-1.json").write_text("{}")
    assert (
        staged_output_problem(staged, 1, _sizes(["0-0.json"]))
        == "1 files are not in manifest.jsonl: 0-1.json"
    )


def test_a_manifest_line_naming_a_missing_file_fails(tmp_path) -> None:
    staged = _staged(tmp_path / "s", ["0-0.json"])
    (staged / "0-0.json").unlink()
    assert staged_output_problem(staged, 1, _sizes(["0-0.json"])) == (
        "manifest.jsonl line 1 names 0-0.json, which was not written"
    )


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("not json", "manifest.jsonl line 1 is not a manifest entry"),
        ('{"trajectory_path": "0-0.json"}', "manifest.jsonl line 1 is not a manifest entry"),
        (
            '{"trajectory_path": "../x.json", "expected_sha256": ""}',
            "manifest.jsonl line 1 names '../x.json', which is not a file of the output",
        ),
    ],
)
def test_a_manifest_line_that_names_no_file_of_the_output_fails(
    tmp_path, line: str, problem: str
) -> None:
    staged = _staged(tmp_path / "s", [], manifest=[line])
    assert (staged_output_problem(staged, 1, [0]) or "").startswith(problem)


def test_a_file_of_another_length_than_the_bytes_hashed_fails(tmp_path) -> None:
    staged = _staged(tmp_path / "s", ["0-0.json"])
    (staged / "0-0.json").write_bytes(b"{}")
    assert staged_output_problem(staged, 1, _sizes(["0-0.json"])) == (
        "0-0.json holds 2 bytes, not the 20 its manifest.jsonl line 1 expected_sha256 was taken of"
    )


def test_a_manifest_line_naming_a_link_fails(tmp_path) -> None:
    staged = _staged(tmp_path / "s", ["0-0.json"])
    target = tmp_path / "target"
    target.write_bytes(_data("0-0.json"))
    (staged / "0-0.json").unlink()
    (staged / "0-0.json").symlink_to(target)
    assert staged_output_problem(staged, 1, _sizes(["0-0.json"])) == (
        "manifest.jsonl line 1 names 0-0.json, which is not a regular file"
    )
