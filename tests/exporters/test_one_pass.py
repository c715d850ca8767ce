"""One pass through an export: each file of the run is opened once (SPEC §3.3a).

Opens are counted with an ``open`` audit hook (:pep:`578`), which sees every open the
evalexport process makes: ``open()``, ``Path.open``, ``os.open`` and what libraries call. The
worker subprocess is not counted: an upload reads what it uploads. Each exporter is counted for
its dry run and for its export, and a tracking exporter also for the rerun it skips.
"""

from __future__ import annotations

import collections
import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalexport.backends.atif.exporter import AtifExporter
from evalexport.backends.mlflow.exporter import MLflowExporter
from evalexport.backends.wandb.exporter import WandbExporter
from evalexport.pipeline import export_run
from evalexport.results import ExportStatus
from evalexport.spec.base import Exporter
from evalexport.spec.options import parse_options
from evalexport.spec.registry import BUILTIN_EXPORTERS, load_exporter
from tests.exporters.test_guarantees import _tests_of

_counting: collections.Counter[str] | None = None


def _count_opens(event: str, args: tuple[Any, ...]) -> None:
    if _counting is not None and event == "open" and isinstance(args[0], str | bytes | Path):
        _counting[os.path.abspath(os.fsdecode(args[0]))] += 1


sys.addaudithook(_count_opens)  # audit hooks stay for the process: it counts only when asked


@contextlib.contextmanager
def counted_opens() -> Iterator[collections.Counter[str]]:
    global _counting
    _counting = collections.Counter()
    try:
        yield _counting
    finally:
        _counting = None


def _opens_of_run_files(sample: Any, opens: collections.Counter[str]) -> dict[str, int]:
    run = sample.run
    files = (run.rollouts, run.aggregate_metrics, run.saved_config)
    return {path.name: opens[str(path)] for path in files}


def _once(sample: Any) -> dict[str, int]:
    run = sample.run
    return {path.name: 1 for path in (run.rollouts, run.aggregate_metrics, run.saved_config)}


def _export(exporter: Exporter[Any], sample: Any, **options: Any) -> tuple[Any, dict[str, int]]:
    config = parse_options(exporter, {"rollouts_jsonl_fpath": str(sample.rollouts), **options})
    with counted_opens() as opens:
        result = export_run(exporter, sample.run, config)
    return result, _opens_of_run_files(sample, opens)


def test_the_audit_hook_sees_every_way_a_file_is_opened(tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_text("x")
    with counted_opens() as opens:
        path.read_text()
        with open(path, "rb"):
            pass
        os.close(os.open(path, os.O_RDONLY))
    assert opens[str(path)] == 3


def _reading_whole_runs() -> list[str]:
    """Every built-in that reads the metrics, the config and the rollouts (from the registry)."""
    return [name for name in sorted(BUILTIN_EXPORTERS) if load_exporter(name).kind != "output"]


@pytest.mark.parametrize("name", _reading_whole_runs())
def test_a_dry_run_opens_each_file_of_the_run_once(
    evalrdl_token, name: str, sample_run: Any, tmp_path: Path
) -> None:
    os.chdir(tmp_path)  # the embedded MLflow store and the W&B directory, for their checks
    exporter = load_exporter(name)()
    options = getattr(_tests_of(name), "guarantee_options", lambda tmp_path: {})(tmp_path)
    result, opens = _export(exporter, sample_run, dry_run=True, **options)
    assert result.status is ExportStatus.SUCCEEDED, result.message
    assert opens == _once(sample_run)


def test_an_atif_dry_run_and_export_open_the_rollouts_once(make_sample_run, tmp_path) -> None:
    sample = make_sample_run(agents=("aime24_math_tool_agent",))
    for dry_run in (True, False):
        output = tmp_path / f"atif-{dry_run}"
        result, opens = _export(
            AtifExporter(), sample, output_dirpath=output, agent_version="1.0", dry_run=dry_run
        )
        assert result.status is ExportStatus.SUCCEEDED, result.message
        assert opens[sample.rollouts.name] == 1


def test_an_atif_rerun_that_skips_opens_the_rollouts_once(make_sample_run, tmp_path) -> None:
    """The skip's one read: the rollouts hashed to hold them to the output's record."""
    sample = make_sample_run(agents=("aime24_math_tool_agent",))
    output = tmp_path / "atif"
    options = {"output_dirpath": output, "agent_version": "1.0"}
    first, _ = _export(AtifExporter(), sample, **options)
    assert first.status is ExportStatus.SUCCEEDED, first.message
    for dry_run in (True, False):
        again, opens = _export(AtifExporter(), sample, **options, dry_run=dry_run)
        assert again.status is ExportStatus.SKIPPED, again.message
        assert opens[sample.rollouts.name] == 1


def test_an_evalrdl_export_opens_each_file_of_the_run_once(export_evalrdl, sample_run) -> None:
    with counted_opens() as opens:
        result = export_evalrdl(sample_run)
    assert result.status is ExportStatus.SUCCEEDED, result.message
    assert _opens_of_run_files(sample_run, opens) == _once(sample_run)


@pytest.mark.usefixtures("plugin_site")
def test_a_plugin_exporter_that_prepares_nothing_still_reads_for_its_fingerprint_once(
    sample_run, tmp_path
) -> None:
    """The guard reads a run for its fingerprint once, under the lock, whatever the exporter
    reads itself (the recording plugin reads the metrics and the config again)."""
    from evalexport.spec.registry import load_exporter

    exporter = load_exporter("recording")()
    result, opens = _export(exporter, sample_run, store_dir=tmp_path / "store")
    assert result.status is ExportStatus.SUCCEEDED, result.message
    assert opens[sample_run.rollouts.name] == 1


@pytest.mark.downloads
def test_an_mlflow_export_and_its_skipped_rerun_open_each_file_once(
    mlflow_server, mlflow_python, sample_run
) -> None:
    exporter = MLflowExporter()
    first, opens = _export(exporter, sample_run, mlflow_tracking_uri=mlflow_server.url)
    assert first.status is ExportStatus.SUCCEEDED, first.message
    assert opens == _once(sample_run)
    second, opens = _export(exporter, sample_run, mlflow_tracking_uri=mlflow_server.url)
    assert second.status is ExportStatus.SKIPPED, second.message
    assert opens == _once(sample_run)


@pytest.mark.downloads
def test_a_wandb_export_and_its_skipped_rerun_open_each_file_once(wandb_python, sample_run) -> None:
    exporter = WandbExporter()
    first, opens = _export(exporter, sample_run, wandb_mode="offline")
    assert first.status is ExportStatus.SUCCEEDED, first.message
    assert opens == _once(sample_run)
    second, opens = _export(exporter, sample_run, wandb_mode="offline")
    assert second.status is ExportStatus.SKIPPED, second.message
    assert opens == _once(sample_run)
