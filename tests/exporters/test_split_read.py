"""A big rollouts file read on two cores (``evalexport.tables.split_read``): the helper
reads the end while the export reads the start, and the export is the sequential reader's,
byte for byte, whatever the rows hold and however the helper fares."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from evalexport.backends.mlflow.traces import TracesFile
from evalexport.interrupts import Interrupted
from evalexport.isolation.reaper import is_running
from evalexport.masking.scrubbing import known_secrets
from evalexport.progress import reading
from evalexport.reading import Cursor, PreparedRun, RunFileError, read_rollouts
from evalexport.run import RunArtifacts
from evalexport.tables import prepare as prepared_module
from evalexport.tables import split_read
from evalexport.tables.prepare import prepare
from evalexport.testing.factory import SampleRun

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "aime24"

SECRET = "tok-split-7c21d9e0"


@pytest.fixture
def split_everything(monkeypatch: pytest.MonkeyPatch) -> list[split_read.SecondPart]:
    """Every file is split (on any machine), and each helper's part is recorded."""
    monkeypatch.setattr(split_read, "SPLIT_ABOVE", 0)
    monkeypatch.setattr(split_read, "_cores", lambda: 2)
    parts: list[split_read.SecondPart] = []
    opened = split_read.split_reading

    def recorded(*args: Any, **kwargs: Any) -> Any:
        context = opened(*args, **kwargs)

        class Recording:
            def __enter__(self) -> split_read.SecondPart | None:
                part = context.__enter__()
                if part is not None:
                    parts.append(part)
                return part

            def __exit__(self, *exc: Any) -> bool | None:
                return context.__exit__(*exc)

        return Recording()

    monkeypatch.setattr(prepared_module, "split_reading", recorded)
    return parts


def _read(run: SampleRun, **options: Any) -> dict[str, object]:
    from evalexport.egress import Egress, sending

    with known_secrets([SECRET]), sending(Egress()) as gate:
        prepared = prepare(run.run, rollouts_table=True, **options)
    try:
        # The rows masked, the count the result says: the helper's lines counted as its own
        # (they were counted as this process's, and a split read said about half).
        return {**_described(prepared), "masked": gate.masked_lines()}
    finally:
        prepared.discard()


def _described(prepared: PreparedRun) -> dict[str, object]:
    assert prepared.rollouts_table is not None
    samples = prepared.samples_table
    assert samples is not None
    return {
        "fingerprint": prepared.fingerprint,
        "count": prepared.rollout_count,
        "evaluation": prepared.evaluation,
        "warnings": prepared.warnings(),
        "rollouts.json": prepared.rollouts_table.read_bytes(),
        "samples.json": samples.read_bytes(),
        "scratch": sorted(path.name for path in prepared.rollouts_table.parent.iterdir()),
    }


def _sequential(run: SampleRun, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    with monkeypatch.context() as patch:
        patch.setattr(split_read, "SPLIT_ABOVE", 2**62)
        return _read(run)


def _rewrite(run: SampleRun, change: Callable[[list[str]], list[str]]) -> None:
    lines = run.rollouts.read_text(encoding="utf-8").splitlines()
    run.rollouts.write_text("\n".join(change(lines)) + "\n", encoding="utf-8")


def _second_half(lines: list[str]) -> range:
    return range(len(lines) // 2 + 1, len(lines))


def _odd_second_half(lines: list[str]) -> list[str]:
    """Rows the second half holds and the first does not: what the merge must get right."""
    out = list(lines)
    late = _second_half(lines)
    for position in late:
        record = json.loads(out[position])
        if position == late[0]:
            record["_ng_task_index"] = "task-7"  # not an integer: the whole column is text
            record["response"]["output"][-1]["content"][0]["text"] += f" {SECRET}"
            record["note"] = "Bearer " + SECRET
        if position == late[1]:
            record["reward"] = float("nan")  # read by json, written by json: NaN
            record["score_kind"] = "graded"  # a number in the other rows: no column
        if position == late[2]:
            record["ng_trajectory"]["turns"][0]["timestamp"] = 10**20  # left out, counted
        if position == late[3]:
            record["text\u2028field"] = "lone \ud800 surrogate"
            record["ng_trajectory"]["turns"][0]["timestamp"] = 1.0  # the earliest, here only
        if position != late[1]:
            record["score_kind"] = 1
        # The lone surrogate as JSON's escape, the rest as UTF-8.
        out[position] = json.dumps(record, ensure_ascii=position == late[3])
    for position in range(len(lines) // 2 + 1):
        record = json.loads(out[position])
        record["score_kind"] = 2
        out[position] = json.dumps(record, ensure_ascii=False)
    out.insert(len(out) // 2, "   ")  # blank lines about the middle, and at the end
    out.insert(len(out) // 2, "")
    return [*out, "", "  "]


def test_a_split_read_writes_what_the_sequential_reader_writes(
    make_sample_run: Callable[..., SampleRun],
    monkeypatch: pytest.MonkeyPatch,
    split_everything: list[split_read.SecondPart],
) -> None:
    run = make_sample_run(tasks=6, repeats=4)
    _rewrite(run, _odd_second_half)
    sequential = _sequential(run, monkeypatch)
    assert not split_everything
    split = _read(run)
    assert [part.taken for part in split_everything] == [True]
    done = split_everything[0].done
    assert done is not None
    assert 0 < done.rollouts < run.rollout_count
    assert split == sequential  # the scratch too: the helper's rows removed once joined
    assert split["masked"] == sequential["masked"] != []  # the helper's row, by its line
    rows = json.loads(split["rollouts.json"])["data"]  # type: ignore[arg-type]
    assert len(rows) == run.rollout_count
    for name in ("rollouts.json", "samples.json"):
        text = split[name].decode()  # type: ignore[union-attr]
        assert SECRET not in text
        assert "****" in text
    samples = json.loads(split["samples.json"])  # type: ignore[arg-type]
    assert "score_kind" not in samples["columns"]
    task_column = samples["columns"].index("task_index")
    assert {type(row[task_column]) for row in samples["data"]} == {str}
    assert split["evaluation"].left_out == 1  # type: ignore[attr-defined]
    assert split["evaluation"].started_at == 1.0  # type: ignore[attr-defined]


def _lines(*lengths: int, last_break: bool = True) -> bytes:
    """JSON-object lines of these lengths, line breaks counted (1: a blank line)."""
    lines = [b"\n" if n == 1 else b'{"x":"' + b"a" * (n - 9) + b'"}\n' for n in lengths]
    content = b"".join(lines)
    return content if last_break else content[:-1]


@pytest.mark.parametrize(
    ("content", "middle"),
    [
        (_lines(10, 20, 12), 15),  # within a line: the next one
        (_lines(10, 10), 10),  # at a line's start: that line
        (_lines(10, 10), 9),  # at a line break: the next line
        (_lines(10, 40), 25),  # no line past it: the end
        (_lines(10, 40, last_break=False), 25),  # the last line, without a line break
        (_lines(1, 1, 1, 1), 2),  # blank lines
        (_lines(12), 0),  # the middle of an empty start: all of it
    ],
)
def test_both_readers_meet_at_the_first_line_that_starts_past_the_middle(
    tmp_path: Path, content: bytes, middle: int
) -> None:
    path = tmp_path / "rollouts.jsonl"
    path.write_bytes(content)
    with path.open("rb") as handle:
        start = split_read.part_start(handle, middle)
    assert start >= middle
    assert start in (0, len(content)) or content[start - 1 : start] == b"\n"
    assert b"\n" not in content[max(middle - 1, 0) : start - 1]
    run = _Paths(path)
    cursor = Cursor()
    with path.open("rb") as handle:
        list(read_rollouts(run, handle, cursor=cursor, end=middle))  # type: ignore[arg-type]
    assert cursor.offset == start


class _Paths:
    def __init__(self, rollouts: Path) -> None:
        self.rollouts = rollouts


def test_a_line_across_the_middle_too_long_to_read_is_no_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(split_read, "CHUNK", 4)
    monkeypatch.setattr(split_read, "MAX_LINE_BYTES", 20)
    path = tmp_path / "rollouts.jsonl"
    path.write_bytes(b"x" * 30 + b"\n{}\n")
    with path.open("rb") as handle, pytest.raises(ValueError, match="too long"):
        split_read.part_start(handle, 5)
    with path.open("rb") as handle:  # within the limit, found across chunks
        assert split_read.part_start(handle, 15) == 31


def _helper_fails(monkeypatch: pytest.MonkeyPatch, code: str) -> None:
    monkeypatch.setattr(split_read, "_helper_command", lambda: [sys.executable, "-c", code])


@pytest.mark.parametrize(
    "helper",
    [
        "import sys; sys.exit(3)",  # it fails
        "print('not an answer')",  # it answers nonsense
        "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",  # it is killed
    ],
    ids=["fails", "answers-nonsense", "killed"],
)
def test_a_helper_that_fails_leaves_the_export_the_sequential_readers(
    make_sample_run: Callable[..., SampleRun],
    monkeypatch: pytest.MonkeyPatch,
    split_everything: list[split_read.SecondPart],
    helper: str,
) -> None:
    run = make_sample_run(tasks=6, repeats=4)
    _rewrite(run, _odd_second_half)
    sequential = _sequential(run, monkeypatch)
    _helper_fails(monkeypatch, helper)
    assert _read(run) == sequential
    assert [part.taken for part in split_everything] == [False]


def test_a_bad_line_in_the_second_half_is_named_as_the_sequential_reader_names_it(
    make_sample_run: Callable[..., SampleRun],
    monkeypatch: pytest.MonkeyPatch,
    split_everything: list[split_read.SecondPart],
) -> None:
    run = make_sample_run(tasks=6, repeats=4, blank_lines=[3, 30])
    lines = run.rollouts.read_text(encoding="utf-8").splitlines()
    bad = len(lines) - 3  # 1-based: in the helper's part
    _rewrite(run, lambda lines: [*lines[: bad - 1], '{"reward": 1.0,', *lines[bad:]])
    with pytest.raises(RunFileError) as sequential:
        _sequential(run, monkeypatch)
    with pytest.raises(RunFileError) as split:
        _read(run)
    assert f"line {bad} is not valid JSON" in str(sequential.value)
    assert str(split.value) == str(sequential.value)
    assert [part.taken for part in split_everything] == [False]
    assert not split_everything[0].directory.exists()  # the scratch is gone


def test_a_file_changed_while_it_was_read_is_refused(
    make_sample_run: Callable[..., SampleRun],
    monkeypatch: pytest.MonkeyPatch,
    split_everything: list[split_read.SecondPart],
) -> None:
    """The fingerprint must be of the bytes exported: bytes the helper read and this process
    hashed differently are no run to export."""
    run = make_sample_run(tasks=6, repeats=4)
    waited = split_read.SecondPart.wait

    def then_changed(self: split_read.SecondPart) -> Any:
        answer = waited(self)
        with run.rollouts.open("ab") as handle:  # a writer still at work
            handle.write(run.rollouts.read_bytes().splitlines(keepends=True)[0])
        return answer

    monkeypatch.setattr(split_read.SecondPart, "wait", then_changed)
    with pytest.raises(RunFileError, match="changed while it was read"):
        _read(run)
    assert not split_everything[0].directory.parent.exists()


def test_a_stop_during_the_read_ends_the_helper_and_leaves_no_scratch(
    make_sample_run: Callable[..., SampleRun],
    monkeypatch: pytest.MonkeyPatch,
    split_everything: list[split_read.SecondPart],
) -> None:
    run = make_sample_run(tasks=6, repeats=4)
    # A helper that never answers: the stop comes while it works.
    _helper_fails(monkeypatch, "import time; time.sleep(600)")

    def stopped(self: split_read.SecondPart) -> Any:
        raise Interrupted(15)

    monkeypatch.setattr(split_read.SecondPart, "wait", stopped)
    with pytest.raises(Interrupted):
        _read(run)
    (part,) = split_everything
    assert not is_running(part.process.pid)
    assert part.process.returncode is not None
    assert not part.directory.parent.exists()


def test_not_split_where_each_rollout_is_told_against_the_verdicts_or_traced_in_order(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    split_everything: list[split_read.SecondPart],
) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "run")
    example = RunArtifacts.from_rollouts_path(tmp_path / "run" / "aime24_rollouts.jsonl")
    assert example.rollout_verdicts.is_file()
    for options in ({"health": True}, {"row_files": [TracesFile]}):
        prepare(example, rollouts_table=True, **options).discard()
    assert split_everything == []
    prepare(example, rollouts_table=True).discard()  # without them: split
    assert [part.taken for part in split_everything] == [True]


def test_the_helper_is_told_its_secrets_on_its_input_never_in_its_arguments(
    make_sample_run: Callable[..., SampleRun],
    monkeypatch: pytest.MonkeyPatch,
    split_everything: list[split_read.SecondPart],
) -> None:
    run = make_sample_run(tasks=6, repeats=4)
    _read(run)
    (part,) = split_everything
    assert part.taken
    assert not any(SECRET in argument for argument in part.process.args)  # type: ignore[union-attr]


def test_the_helpers_answer_is_typed(tmp_path: Path) -> None:
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(b'{"size_bytes": "12"}', type=split_read.PartDone)
    job = split_read.PartJob(str(tmp_path / "r.jsonl"), 10, str(tmp_path), [SECRET], True)
    assert msgspec.json.decode(msgspec.json.encode(job), type=split_read.PartJob) == job


@pytest.mark.parametrize(
    "late_rows",
    ["a field of their own", "mixed among themselves"],
)
def test_halves_of_other_columns_make_the_sequential_readers_samples_table(
    make_sample_run: Callable[..., SampleRun],
    monkeypatch: pytest.MonkeyPatch,
    split_everything: list[split_read.SecondPart],
    late_rows: str,
) -> None:
    """The samples table copies rows as noted only when every row of both halves has its
    columns: halves each alike within but not with each other, or a second half whose rows
    differ among themselves, are read and written again, as the sequential reader does."""
    run = make_sample_run(tasks=6, repeats=4)

    def late_field(lines: list[str]) -> list[str]:
        out = list(lines)
        for position in _second_half(lines):
            record = json.loads(out[position])
            # Mixed: the helper's first rows (about the middle) have the other half's columns.
            mixed = position >= len(lines) * 3 // 4 and position % 2
            if late_rows == "a field of their own" or mixed:
                record["phase"] = "late"
            out[position] = json.dumps(record, ensure_ascii=False)
        return out

    _rewrite(run, late_field)
    sequential = _sequential(run, monkeypatch)
    split = _read(run)
    assert [part.taken for part in split_everything] == [True]
    assert split == sequential
    assert "phase" not in json.loads(split["samples.json"])["columns"]  # type: ignore[arg-type]


@pytest.mark.parametrize("helper", ["answers", "fails"])
def test_progress_counts_both_readers_and_never_goes_back(
    make_sample_run: Callable[..., SampleRun],
    monkeypatch: pytest.MonkeyPatch,
    split_everything: list[split_read.SecondPart],
    helper: str,
) -> None:
    """While the helper reads the end, each byte read here stands for two: a log's "about N
    s left" is the export's, not twice it. If the helper fails, the count waits there for
    this reader, which then reads the rest."""
    run = make_sample_run(tasks=6, repeats=4)
    if helper == "fails":
        _helper_fails(monkeypatch, "import sys; sys.exit(3)")
    reports: list[tuple[int, int]] = []
    with reading(lambda done, total: reports.append((done, total))):
        _read(run)
    size = run.rollouts.stat().st_size
    assert {total for _, total in reports} == {size}
    done = [done for done, _ in reports]
    assert done == sorted(done)
    assert done[-1] == size
    # Half of the whole reported once this reader has read about a quarter of the lines.
    lines = len(run.rollouts.read_bytes().splitlines())
    assert 0.15 * lines < sum(1 for d in done if d < size // 2) < 0.35 * lines
    (part,) = split_everything
    assert part.taken is (helper == "answers")


@pytest.mark.parametrize("interpreter", ["frozen", "no executable", "one core"])
def test_not_split_where_no_helper_can_run_or_help(
    make_sample_run: Callable[..., SampleRun],
    monkeypatch: pytest.MonkeyPatch,
    split_everything: list[split_read.SecondPart],
    interpreter: str,
) -> None:
    run = make_sample_run(tasks=6, repeats=4)
    sequential = _sequential(run, monkeypatch)
    if interpreter == "frozen":
        monkeypatch.setattr(sys, "frozen", True, raising=False)
    elif interpreter == "no executable":
        monkeypatch.setattr(sys, "executable", "")
    else:
        monkeypatch.setattr(split_read, "_cores", lambda: 1)
    assert _read(run) == sequential
    assert split_everything == []


_KILLED_DURING_THE_READ = """
import sys
from pathlib import Path
from evalexport.tables import prepare as prepared
from evalexport.tables import split_read
from evalexport.run import RunArtifacts
split_read.SPLIT_ABOVE = 0
split_read._cores = lambda: 2
pid_file = sys.argv[2]
split_read._helper_command = lambda: [
    sys.executable, "-c",
    "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(600)",
    pid_file,
]
prepared.prepare(RunArtifacts.from_rollouts_path(Path(sys.argv[1])), rollouts_table=True)
"""


def test_an_export_killed_outright_during_the_read_leaves_no_helper_and_no_scratch(
    make_sample_run: Callable[..., SampleRun], tmp_path: Path
) -> None:
    """SIGKILL runs no ``finally``: the reaper every launch is told of ends the helper and
    removes the scratch it was writing into."""
    run = make_sample_run(tasks=6, repeats=4)
    pid_file = tmp_path / "helper.pid"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    driver = subprocess.Popen(
        [sys.executable, "-c", _KILLED_DURING_THE_READ, str(run.rollouts), str(pid_file)],
        env={**os.environ, "TMPDIR": str(scratch)},
    )
    deadline = time.monotonic() + 60  # bounds a failing test; no speed is asserted
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    helper = int(pid_file.read_text())
    assert is_running(helper)
    assert [path.name for path in scratch.iterdir()] != []  # the read's scratch
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    while (is_running(helper) or any(scratch.iterdir())) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not is_running(helper), "the helper outlived the export"
    assert list(scratch.iterdir()) == []
