"""An isolated exporter driving the tinysdk stand-in, and wheels to install it from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalexport.pipeline import export_run
from evalexport.spec.options import parse_options
from evalexport.testing.wheels import tinysdk_wheel
from tests.support.echo_exporter import EchoExporter


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("wheelhouse")
    tinysdk_wheel(directory, "1.0")
    tinysdk_wheel(directory, "2.0")
    return directory


@pytest.fixture
def tinysdk_1(wheelhouse: Path) -> str:
    return str(wheelhouse / "tinysdk-1.0-py3-none-any.whl")


@pytest.fixture
def echo_export(sample_run, tinysdk_1: str):
    """``echo_export(**options)``: run the echo exporter on the sample run."""

    def export(**options: Any):
        exporter = EchoExporter()
        config = parse_options(
            exporter,
            {"rollouts_jsonl_fpath": str(sample_run.rollouts), "requirement": tinysdk_1, **options},
        )
        return export_run(exporter, sample_run.run, config)

    return export
