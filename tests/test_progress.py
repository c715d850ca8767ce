"""Progress a log can show (``progress.py``, the CLI's stderr): a line per stage, and during
long work a line at most every few seconds with the rate and the time left; on stdout,
nothing but the result."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalexport.progress import INTERVAL_VARIABLE, ProgressLog, interval, reading
from evalexport.reading import prepare
from evalexport.results import ExportStatus

MIB = 1024 * 1024


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _fed(log: ProgressLog, clock: _Clock, reports: list[tuple[float, int, int]]) -> None:
    for at, done, total in reports:
        clock.now = 100.0 + at
        log(done, total)


def test_long_work_logs_a_line_per_interval_with_its_rate_and_the_time_left() -> None:
    clock, lines = _Clock(), []
    log = ProgressLog("mlflow: reading run.jsonl", every=5, clock=clock, emit=lines.append)
    _fed(log, clock, [(i / 2, i * MIB, 40 * MIB) for i in range(41)])
    assert lines == [
        "mlflow: reading run.jsonl: 10.0 MiB of 40.0 MiB (25%), 2.0 MiB/s, about 15 s left",
        "mlflow: reading run.jsonl: 20.0 MiB of 40.0 MiB (50%), 2.0 MiB/s, about 10 s left",
        "mlflow: reading run.jsonl: 30.0 MiB of 40.0 MiB (75%), 2.0 MiB/s, about 5 s left",
        "mlflow: reading run.jsonl: 40.0 MiB of 40.0 MiB (100%), 2.0 MiB/s, done in 20 s",
    ]


def test_the_last_second_is_not_said_to_be_about_under_a_second() -> None:
    clock, lines = _Clock(), []
    log = ProgressLog("atif", every=1, clock=clock, emit=lines.append)
    _fed(log, clock, [(0, 0, 100 * MIB), (5, 99 * MIB, 100 * MIB)])
    assert lines == ["atif: 99.0 MiB of 100.0 MiB (99%), 19.8 MiB/s, under 1 s left"]


def test_work_done_within_the_interval_logs_nothing() -> None:
    clock, lines = _Clock(), []
    log = ProgressLog("mlflow", "steps", every=5, clock=clock, emit=lines.append)
    _fed(log, clock, [(i, i, 4) for i in range(5)])
    assert lines == []


def test_steps_are_counted_as_steps_and_long_waits_in_minutes() -> None:
    clock, lines = _Clock(), []
    log = ProgressLog("mlflow", "steps", every=60, clock=clock, emit=lines.append)
    _fed(log, clock, [(0, 0, 10), (100, 1, 10), (2000, 10, 10), (2100, 10, 10)])
    assert lines == [
        "mlflow: 1 of 10 steps (10%), 0.0 steps/s, about 15 min 00 s left",
        "mlflow: 10 of 10 steps (100%), 0.0 steps/s, done in 33 min 20 s",
    ]


def test_a_step_that_reports_nothing_is_said_under_way_each_interval() -> None:
    clock, lines = _Clock(), []
    log = ProgressLog("mlflow", "steps", every=5, clock=clock, emit=lines.append)
    log.tick()  # nothing begun: nothing to say
    _fed(log, clock, [(0, 0, 8), (1, 5, 8)])
    for at in (3, 6.5, 9, 12):
        clock.now = 100.0 + at
        log.tick()
    assert lines == [
        "mlflow: 5 of 8 steps (62%), 0.8 steps/s, about 4 s left; step 6 under way for 6 s",
        "mlflow: 5 of 8 steps (62%), 0.4 steps/s, about 7 s left; step 6 under way for 11 s",
    ]
    _fed(log, clock, [(13, 8, 8)])
    clock.now = 130.0
    log.tick()  # done: nothing more
    assert lines[-1] == "mlflow: 8 of 8 steps (100%), 0.6 steps/s, done in 13 s"
    assert len(lines) == 3


def test_nothing_is_logged_once_closed_nor_ticked_with_nothing_to_count() -> None:
    clock, lines = _Clock(), []
    log = ProgressLog("mlflow", "steps", every=5, clock=clock, emit=lines.append)
    _fed(log, clock, [(0, 0, 0)])
    clock.now = 120.0
    log.tick()  # a total of nothing: no step is under way
    assert lines == []
    _fed(log, clock, [(21, 1, 8)])
    assert lines == ["mlflow: 1 of 8 steps (12%), 0.0 steps/s, about 2 min 27 s left"]
    log.close()
    _fed(log, clock, [(40, 5, 8), (60, 8, 8)])
    clock.now = 200.0
    log.tick()
    assert len(lines) == 1


def test_an_interval_no_clock_can_wait_keeps_the_line_alive_without_failing(monkeypatch) -> None:
    import threading
    import time

    raised: list[BaseException] = []
    monkeypatch.setattr(threading, "excepthook", lambda hooked: raised.append(hooked.exc_value))
    log = ProgressLog("mlflow", "steps", every=1e300, emit=lambda line: None, keep_alive=True)
    log(0, 8)
    time.sleep(0.2)
    log.close()
    time.sleep(0.1)
    assert raised == []


def test_a_delivery_begun_is_said_under_way_before_its_first_report() -> None:
    """A worker starting (its SDK imported, its store opened) before it reports a step: the
    exporter's kept-alive log begins at the delivery's stage line, and says so each interval.
    (An interval of 400 s on the test's clock: the logs' own threads, which wait a quarter of
    it in real time, never tick during the test.)"""
    from evalexport.progress import stage

    clock, lines = _Clock(), []
    log = ProgressLog("mlflow", "steps", every=400, clock=clock, emit=lines.append, keep_alive=True)
    other = ProgressLog(
        "wandb", "steps", every=400, clock=clock, emit=lines.append, keep_alive=True
    )
    try:
        stage("mlflow", "exporting to sqlite:///mlruns.db", delivering=True)
        for at in (240, 480, 720, 920):
            clock.now = 100.0 + at
            log.tick()
            other.tick()  # another exporter's log: not begun
        _fed(log, clock, [(960, 0, 8)])
        clock.now = 100.0 + 1440
        log.tick()
    finally:
        log.close()
        other.close()
    assert lines == [
        "mlflow: under way for 8 min 00 s; no step reported yet",
        "mlflow: under way for 15 min 20 s; no step reported yet",
        "mlflow: 0 of 8 steps (0%); step 1 under way for 8 min 00 s",
    ]


def test_a_begun_delivery_is_paced_from_its_first_report_not_from_its_start() -> None:
    """A worker's start (its SDK imported, its environment built: a minute here) is no part of
    its pace: the rate and the time left are measured from its first report, and a line before
    a second report gives no guess (a new user read "0.2 steps/s, about 2 min 44 s left" of an
    export that ended 2 s later). The time it took is still the whole delivery's."""
    clock, lines = _Clock(), []
    log = ProgressLog("mlflow", "steps", every=5, clock=clock, emit=lines.append)
    clock.now = 100.0
    log.begin()
    _fed(log, clock, [(60, 2, 12)])  # the first report, a minute in
    _fed(log, clock, [(66, 8, 12), (70, 12, 12)])
    assert lines == [
        "mlflow: 2 of 12 steps (16%)",
        "mlflow: 8 of 12 steps (66%), 1.0 steps/s, about 4 s left",
        "mlflow: 12 of 12 steps (100%), 1.0 steps/s, done in 1 min 10 s",
    ]


def test_a_build_that_says_how_long_it_goes_on_speaks_for_the_delivery_meanwhile() -> None:
    """While an environment is built, its own line each interval ("still installing mlflow …")
    is the export's: its kept-alive log says nothing until the build ends, then waits a whole
    interval (a new user's log held both, taking turns, for 80 s)."""
    from evalexport.progress import speaking_for

    clock, lines = _Clock(), []
    log = ProgressLog("mlflow", "steps", every=5, clock=clock, emit=lines.append, keep_alive=True)
    try:
        clock.now = 100.0
        log.begin()
        with speaking_for("mlflow"), speaking_for("mlflow"):  # two builds at once
            for at in (6, 12, 18):
                clock.now = 100.0 + at
                log.tick()
        with speaking_for("wandb"):  # another exporter's build: not this one's
            clock.now = 120.0
            log.tick()
            clock.now = 123.0
            log.tick()
            clock.now = 126.0
            log.tick()
    finally:
        log.close()
    assert lines == ["mlflow: under way for 23 s; no step reported yet"]  # 5 s after the build


def test_an_environment_build_speaks_for_its_exporter() -> None:
    from evalexport.isolation.environments import _still_working
    from evalexport.progress import _SPOKEN_FOR

    with _still_working("mlflow", "installing mlflow with uv"):
        assert _SPOKEN_FOR["mlflow"] == 1
    assert _SPOKEN_FOR["mlflow"] == 0


def test_the_clis_log_keeps_a_line_coming_through_a_long_step() -> None:
    from evalexport.cli.export import _progress

    log = _progress("mlflow", "steps")  # stderr is no terminal here, as in a Slurm log
    assert isinstance(log, ProgressLog)
    assert log.keep_alive
    log.close()


def test_a_read_that_stalls_says_how_long_nothing_came() -> None:
    clock, lines = _Clock(), []
    log = ProgressLog("atif", every=5, clock=clock, emit=lines.append)
    _fed(log, clock, [(0, 0, 10 * MIB), (2, 4 * MIB, 10 * MIB)])
    clock.now = 107.0
    log.tick()
    assert lines == [
        "atif: 4.0 MiB of 10.0 MiB (40%), 585.1 KiB/s, about 10 s left; nothing more read for 5 s"
    ]


@pytest.mark.parametrize(("value", "seconds"), [("", 5.0), ("0", 0.1), ("0.01", 0.1), ("2.5", 2.5)])
def test_the_interval_is_the_variables_and_never_shorter_than_half_a_second(
    value: str, seconds: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(INTERVAL_VARIABLE, value)
    assert interval() == seconds


@pytest.mark.parametrize("value", ["soon", "-1", "nan", "inf"])
def test_an_interval_that_is_not_one_is_a_usage_error(
    value: str, monkeypatch: pytest.MonkeyPatch, sample_run
) -> None:
    from evalexport.api import dry_run
    from evalexport.results import ExitCode

    monkeypatch.setenv(INTERVAL_VARIABLE, value)
    result = dry_run("mlflow", sample_run.rollouts)
    assert result.exit_code is ExitCode.USAGE
    assert f"EVALEXPORT_PROGRESS_INTERVAL={value!r} is not an interval" in result.message


def test_reading_a_run_reports_every_byte_of_its_rollouts(make_sample_run) -> None:
    sample = make_sample_run(tasks=30)
    reports: list[tuple[int, int]] = []
    with reading(lambda done, total: reports.append((done, total))):
        prepare(sample.run)
    size = sample.rollouts.stat().st_size
    assert reports[-1] == (size, size)
    assert len(reports) > 10
    assert [done for done, _ in reports] == sorted(done for done, _ in reports)
    prepare(sample.run)  # outside the block nobody is told
    assert reports[-1] == (size, size)


def test_an_export_logs_its_stages(make_sample_run, tmp_path, caplog) -> None:
    from evalexport.api import export

    sample = make_sample_run(agents=("aime24_math_tool_agent",))
    caplog.set_level(logging.INFO, logger="evalexport.progress")
    result = export("atif", sample.rollouts, output_dirpath=tmp_path / "atif", agent_version="1")
    assert result.status is ExportStatus.SUCCEEDED, result.message
    stages = [r.getMessage() for r in caplog.records if r.name == "evalexport.progress"]
    assert stages[0].startswith(f"atif: reading {sample.rollouts.name} (")
    assert stages[-1] == f"atif: exporting to {tmp_path / 'atif'}"
    caplog.clear()
    again = export("atif", sample.rollouts, output_dirpath=tmp_path / "atif", agent_version="1")
    assert again.status is ExportStatus.SKIPPED, again.message
    stages = [r.getMessage() for r in caplog.records if r.name == "evalexport.progress"]
    assert stages[0].startswith(f"atif: reading {sample.rollouts.name} (")
    assert not [stage for stage in stages if "exporting to" in stage]  # it exports nothing


def test_the_cli_logs_progress_on_stderr_that_is_no_terminal_and_keeps_stdout_for_json(
    make_sample_run, tmp_path
) -> None:
    # Long enough (about 1 s here) for several lines at the shortest interval, 0.1 s.
    sample = make_sample_run(tasks=120, repeats=16, agents=("aime24_math_tool_agent",))
    log = tmp_path / "log"
    with log.open("w") as stderr:
        completed = subprocess.run(
            [
                sys.executable,
                "-m",
                "evalexport",
                "atif",
                f"+rollouts_jsonl_fpath={sample.rollouts}",
                f"+output_dirpath={tmp_path / 'atif'}",
                "+agent_version=1",
                "--json",
            ],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            env={**os.environ, INTERVAL_VARIABLE: "0"},
            check=False,
            timeout=300,
        )
    assert completed.returncode == 0, log.read_text()
    (line,) = completed.stdout.splitlines()
    assert json.loads(line)["status"] == "succeeded"
    lines = log.read_text().splitlines()
    assert "\r" not in log.read_text()
    assert lines[0].startswith(f"evalexport: atif: reading {sample.rollouts.name} (")
    progress = [entry for entry in lines if "%)" in entry]
    assert len(progress) >= 2, lines
    assert any("MiB/s" in entry or "KiB/s" in entry for entry in progress), lines
    assert Path(tmp_path / "atif").is_dir()
