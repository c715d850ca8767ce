"""The ATIF benchmark's contestants still run: a benchmark that fails with an import error after
a refactor measures nothing, and nobody runs it before the next performance question."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _benchmark(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_benchmark_{name}", BENCHMARKS / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("shape", ["tool-agent", "two-turn", "trajectory"])
def test_each_atif_contestant_but_gym_converts_every_row_of_a_small_file(
    tmp_path: Path, shape: str
) -> None:
    atif = _benchmark("atif_export")
    rollouts = tmp_path / "rollouts.jsonl"
    rows = atif.write_rollouts(rollouts, 60_000, shape)
    reference = tmp_path / "reference"
    atif._run(sys.executable, atif.EVALEXPORT, rollouts, reference, reference)
    for name, program in (
        ("bare", atif.BARE),
        ("bare-with-files", atif.BARE_WITH_FILES),
        ("evalexport", atif.EVALEXPORT),
    ):
        output = tmp_path / name
        figures = atif._run(sys.executable, program, rollouts, output, reference)
        assert figures["count"] == rows, name
        assert figures["seconds"] > 0
        assert figures["peak_rss_kib"] > 0
    assert len(list((tmp_path / "evalexport").glob("*.json"))) == rows
    # The floor writes the very files the exporters write.
    for written in (tmp_path / "bare-with-files").iterdir():
        assert written.read_bytes() == (tmp_path / "evalexport" / written.name).read_bytes()


@pytest.mark.downloads
def test_the_wandb_benchmark_times_both_contestants_on_a_small_run(
    wandb_python: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wandb = _benchmark("wandb_export")
    (row,) = wandb.big_run([1], repeat=1, scratch_root=tmp_path)
    assert row["megabytes"] == 1
    assert row["seconds"] > 0
    assert row["floor"] > 0
    assert row["worker_rss_mb"] > 0
    assert row["worker_anonymous_mb"] > 0
    assert "1 MB" in capsys.readouterr().out


def test_every_row_of_the_masking_benchmark_holds_secrets_the_gate_masks(tmp_path: Path) -> None:
    """``benchmarks/masking.py --rows`` measures issue #65's worst case only while each of its
    rows holds secret-shaped text that the rows' masking finds."""
    import json

    from evalexport.egress import Egress

    masking = _benchmark("masking")
    rollouts, count = masking.make_worst_case_run(tmp_path / "run", 1)
    gate = Egress(secrets=())
    lines = rollouts.read_text().splitlines()
    assert len(lines) == count > 10
    for number, line in enumerate(lines, 1):
        row = json.loads(line)
        secret = f"{row['_ng_task_index']:08d}Zq7Lm2Xc9Vb"  # in the prompt, answer, header, call
        assert line.count(secret) == 4
        assert secret not in gate.row(json.dumps(row, ensure_ascii=False), number)
    assert gate.rows_masked().rows == count
