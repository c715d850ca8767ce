"""``plan run``'s table: one row an export, and each note the exports end with said once below
it, with the exports that said it (#59: the same 5-line note filled every row of a job's)."""

from __future__ import annotations

from evalexport.plans.batch import summary_table
from evalexport.plans.tasks import TaskOutcome
from evalexport.results import ExportResult

NOTE = (
    "the job's resolved config /jobs/j/resolved-config.yaml holds values that look like live "
    "secrets (driver.env.WANDB_API_KEY), as NeMo Gym writes host values into it; they are "
    "masked in this export"
)


def _outcome(benchmark: str, exporter: str, notes: list[str]) -> TaskOutcome:
    result = ExportResult.succeeded(exporter, f"/jobs/j/{benchmark}", "exported").noted(notes)
    return TaskOutcome(benchmark, exporter, f"/jobs/j/{benchmark}/r.jsonl", 1.0, result)


def test_a_note_every_export_gives_is_said_once_below_the_table() -> None:
    outcomes = [
        _outcome(benchmark, exporter, [NOTE])
        for benchmark in ("aime24", "gpqa", "math500")
        for exporter in ("mlflow", "wandb")
    ]
    table = summary_table(outcomes, width=100)
    flat = " ".join(table.split())
    assert flat.count("look like live secrets") == 1
    assert "Note (6 exports): the job's resolved config" in flat
    rows = [line for line in table.splitlines() if line.startswith(("aime24", "gpqa", "math500"))]
    assert len(rows) == 6
    assert all(row.rstrip().endswith("exported.") for row in rows)


def test_a_note_of_one_export_names_it() -> None:
    table = summary_table(
        [_outcome("aime24", "mlflow", ["1 metric was left out"]), _outcome("gpqa", "mlflow", [])],
        width=100,
    )
    assert "Note (aime24/mlflow): 1 metric was left out." in table
