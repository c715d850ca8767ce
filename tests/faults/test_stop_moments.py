"""A stop signal at the exact moments where one used to cost something: the moment a staging
directory is made, the moment the read ends, the moment a process pool winds down, and the
moment after an export landed. Each signal is sent from inside the export, at that moment, so
each test hits its moment on every run (the process-level fault tests hit them by chance).

Every export runs through the CLI in this process (``cli``), which turns stop signals into
:class:`~evalexport.interrupts.Interrupted` as it does for a user.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from evalexport.testing.factory import SampleRun
from tests.conftest import CliRun

pytestmark = pytest.mark.usefixtures("signals_as_a_terminal_leaves_them")


def _stop_us() -> None:
    os.kill(os.getpid(), signal.SIGTERM)


def _then_stopped(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function``, which sends this process SIGTERM as soon as it has returned."""

    def stopped_after(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        finally:
            _stop_us()

    return stopped_after


def _atif(cli: Callable[..., CliRun], rollouts: Path, output: Path) -> CliRun:
    return cli(
        "atif",
        f"+rollouts_jsonl_fpath={rollouts}",
        f"+output_dirpath={output}",
        "+agent_version=1.0",
        "--json",
    )


def _left_beside(output: Path) -> list[str]:
    return sorted(path.name for path in output.parent.iterdir() if path.name != "run")


@pytest.fixture
def one_agent_run(make_sample_run):
    """A run ATIF exports whole (its rows are one agent's)."""
    return make_sample_run(agents=("aime24_math_simple_agent",), tasks=3, repeats=2)


def _stopped_leaving_nothing(cli: Callable[..., CliRun], run: SampleRun, tmp_path: Path) -> None:
    """Export ``run`` to ATIF (a SIGTERM is planted in it): the export is stopped, and neither
    its output nor its staging directory is left."""
    output = tmp_path / "out"
    ended = _atif(cli, run.rollouts, output)
    assert ended.exit_code == 128 + signal.SIGTERM, ended.output
    assert json.loads(ended.stdout.splitlines()[-1])["status"] == "failed"
    assert "Traceback" not in ended.output
    assert _left_beside(output) == []


def test_a_stop_as_the_staging_directory_is_made_leaves_no_staging(
    cli, one_agent_run, tmp_path, monkeypatch
) -> None:
    from evalexport.backends.atif import staging

    # Sent while the staging directory's owner record is being written: the directory exists.
    monkeypatch.setattr(staging, "_this_process", _then_stopped(staging._this_process))
    _stopped_leaving_nothing(cli, one_agent_run, tmp_path)


def test_a_stop_as_the_read_ends_leaves_no_staging(
    cli, one_agent_run, tmp_path, monkeypatch
) -> None:
    from evalexport import pipeline

    reading = pipeline.reading

    @contextlib.contextmanager
    def reading_then_stopped(log: Any) -> Iterator[None]:
        with reading(log):
            yield
        _stop_us()  # the read has returned its staged files; the pipeline does not hold them yet

    monkeypatch.setattr(pipeline, "reading", reading_then_stopped)
    _stopped_leaving_nothing(cli, one_agent_run, tmp_path)


def test_a_stop_as_the_conversion_pool_winds_down_stops_the_export(
    cli, one_agent_run, tmp_path, monkeypatch
) -> None:
    from evalexport.backends.atif import files

    monkeypatch.setattr(files, "default_workers", lambda path: 2)  # the pool, for a small file

    class PoolStoppedAsItCloses(files.ProcessPoolExecutor):
        def __exit__(self, *exc_info: Any) -> Any:
            _stop_us()  # every chunk is converted; the stop is held while the pool shuts down
            return super().__exit__(*exc_info)

    monkeypatch.setattr(files, "ProcessPoolExecutor", PoolStoppedAsItCloses)
    # Not an export that went on as if nobody had asked it to stop.
    _stopped_leaving_nothing(cli, one_agent_run, tmp_path)


def test_a_stop_as_the_output_is_renamed_into_place_lets_the_export_stand(
    cli, one_agent_run, tmp_path, monkeypatch, caplog
) -> None:
    output = tmp_path / "out"
    rename = Path.rename

    def rename_then_stopped(self: Path, target: Any) -> Path:
        moved = rename(self, target)
        if Path(target) == output:
            _stop_us()
        return moved

    monkeypatch.setattr(Path, "rename", rename_then_stopped)
    ended = _atif(cli, one_agent_run.rollouts, output)
    assert ended.exit_code == 0, ended.output
    result = json.loads(ended.stdout.splitlines()[-1])
    assert result["status"] == "succeeded"
    assert result["interrupted_by"] == "SIGTERM"
    assert "SIGTERM arrived after the atif export had landed; the export stands" in caplog.text
    assert len(list(output.glob("*.json"))) == 6
    assert _left_beside(output) == ["out"]


@pytest.mark.downloads
def test_a_stop_after_the_worker_finished_its_run_keeps_the_marker_and_one_remote_run(
    cli, mlflow_server, mlflow_python, sample_run, monkeypatch, caplog
) -> None:
    from evalexport.isolation import worker_results
    from tests.support.mlflow_server import read_runs

    # The worker has ended its run FINISHED and exited; the result is being read.
    monkeypatch.setattr(worker_results.Reading, "of", _stopped_before(worker_results.Reading.of))
    args = (
        "mlflow",
        f"+rollouts_jsonl_fpath={sample_run.rollouts}",
        f"+mlflow_tracking_uri={mlflow_server.url}",
        "+mlflow_experiment_name=stopped-late",
    )
    ended = cli(*args)
    assert ended.exit_code == 0, ended.output
    assert "SIGTERM arrived after the mlflow export had landed; the export stands" in caplog.text
    monkeypatch.undo()
    rerun = cli(*args)
    assert rerun.exit_code == 0, rerun.output
    assert rerun.stdout.startswith("skipped (already exported)"), rerun.output
    assert len(read_runs(mlflow_python, mlflow_server.url, "stopped-late")) == 1


def _stopped_before(function: Callable[..., Any]) -> Callable[..., Any]:
    def stopped_first(*args: Any, **kwargs: Any) -> Any:
        _stop_us()
        return function(*args, **kwargs)

    return stopped_first
