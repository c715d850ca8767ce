"""Finished runs laid out as a multi-benchmark job leaves them, and a plan over them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from evalexport.testing.factory import make_run


@pytest.fixture
def job_runs(tmp_path: Path, canaries) -> Path:
    """``<root>/<benchmark>/<benchmark>_rollouts.jsonl`` for three benchmarks; gpqa lacks its
    saved config, so its tracking export fails."""
    root = tmp_path / "job"
    for seed, benchmark in enumerate(("aime24", "gpqa", "math500")):
        make_run(
            root / benchmark,
            benchmark=benchmark,
            tasks=2,
            repeats=2,
            seed=seed,
            agents=("aime24_math_tool_agent",),
            canaries=canaries,
            saved_config=benchmark != "gpqa",
        )
    return root


@pytest.fixture
def write_plan(tmp_path: Path, job_runs: Path):
    def write(fail_job: bool = False, store: Path | None = None, **extra_exports) -> Path:
        plan = {
            "job": {
                "benchmarks": ["aime24", "gpqa", "math500"],
                "runs_root": str(job_runs),
                "fail_job_on_export_failure": fail_job,
            },
            "exports": {
                "atif": {"agent_version": "1.0", "output_dirpath": "{run_dir}/atif"},
                "recording": {"store_dir": str(store or tmp_path / "store")},
                **extra_exports,
            },
        }
        path = tmp_path / "plan.yaml"
        path.write_text(yaml.safe_dump(plan))
        return path

    return write
