"""Workers that crash, hang or cannot be built, and a job tail run twice (#13, SPEC §3.4, §6)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from evalexport.pipeline import export_run
from evalexport.results import ExportStatus
from evalexport.spec.options import parse_options
from tests.faults.conftest import Ended, FaultLab, run_files
from tests.support.echo_exporter import EchoExporter


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (
            {"behaviour": "segfault"},
            "The echo worker was killed by SIGSEGV without writing a result",
        ),
        ({"behaviour": "no_result"}, "The echo worker exited with code 0 without writing a result"),
        ({"behaviour": "raise"}, "worker error: ValueError: the SDK said no"),
        ({"behaviour": "sleep"}, "The echo worker exceeded its time limit of 3 s and was stopped"),
        ({"behaviour": "exit_code", "exit_code": 4}, "worker verdict"),
        ({"requirement": "tinysdk==99.0"}, "Cannot build the echo environment"),
    ],
    ids=["crash", "no-result", "exception", "hang", "refused", "install-fails"],
)
def test_a_worker_fault_is_a_failed_result_and_leaves_nothing(
    lab: FaultLab, sample_run, tinysdk_1, wheelhouse, monkeypatch, options, expected
) -> None:
    monkeypatch.setenv("EVALEXPORT_WORKER_TIME_LIMIT", "3")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheelhouse))
    monkeypatch.setenv("UV_FIND_LINKS", str(wheelhouse))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("UV_NO_INDEX", "1")
    before = run_files(sample_run)
    exporter = EchoExporter()
    config = parse_options(
        exporter,
        {"rollouts_jsonl_fpath": str(sample_run.rollouts), "requirement": tinysdk_1, **options},
    )
    result = export_run(exporter, sample_run.run, config)
    assert result.status is ExportStatus.FAILED
    assert expected in result.message
    lab.assert_left_clean(sample_run, before, Ended(int(result.exit_code), result.message, ""))


def test_a_job_tail_run_twice_uploads_once_because_its_log_is_outside_the_run(
    lab: FaultLab, evalrdl_sdk, make_sample_run, tmp_path
) -> None:
    sample = make_sample_run("job/aime24")
    before = run_files(sample)
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        yaml.safe_dump(
            {
                "job": {"benchmarks": ["aime24"], "runs_root": str(tmp_path / "job")},
                "exports": {"evalrdl": {"label": "nightly"}},
            }
        )
    )
    rendered = lab.run("plan", "render", str(plan), "--command", f"{sys.executable} -m evalexport")
    assert rendered.exit_code == 0, rendered.output
    tail = rendered.stdout.split("### aime24: append after the driver step of its job script\n")[1]
    tail = tail.split("### ")[0]
    for _ in range(2):
        completed = subprocess.run(
            ["bash", "-c", "true\n" + tail], capture_output=True, text=True, timeout=300
        )
        assert completed.returncode == 0, completed.stderr
    log = tmp_path / "job" / "evalexport-logs" / "aime24_exports.jsonl"
    results = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["status"] for r in results] == ["succeeded", "skipped"], results
    assert run_files(sample) == before


def test_a_read_only_cache_that_holds_the_environment_still_exports(
    lab: FaultLab, evalrdl_sdk, make_sample_run
) -> None:
    """A cluster shares one cache, read-only, built once: no lock file, no last-used note is
    needed to use what it holds."""
    from tests.faults.conftest import read_only

    first = make_sample_run("first")
    built = lab.run("evalrdl", f"+rollouts_jsonl_fpath={first.rollouts}", "--json")
    assert built.exit_code == 0, built.output  # builds the environment into the cache
    second = make_sample_run("second", seed=7)
    cache = Path(os.environ["EVALEXPORT_CACHE_DIR"])
    with read_only(cache) as prefix:
        ended = lab.run(
            "evalrdl", f"+rollouts_jsonl_fpath={second.rollouts}", "--json", prefix=prefix
        )
    assert ended.exit_code == 0, ended.output
    assert ended.result()["status"] == "succeeded"
