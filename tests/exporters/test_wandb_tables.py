"""The W&B worker's tables against W&B's own (``wandb_worker.typed_table``), in the wandb
environment: the same column types, rows and table JSON as ``wandb.Table(columns, data=rows)``
for any rows, or the same refusal, with W&B typing only a row of each kind."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import evalexport.workers
from tests.conftest import session_environment

pytestmark = pytest.mark.downloads

OLD_WANDB = "wandb==0.17.9"
"""The oldest wandb of the contract matrix (its committed manifest, ``contracts/wandb/0.17.9.json``)
and of ``test_wandb.py``'s old pin."""
WORKERS = Path(evalexport.workers.__file__).parent

COMPARE = r"""
import importlib.util, json, math, random, sys, types
from pathlib import Path

workers = Path(sys.argv[1])
for package in ("evalexport", "evalexport.workers"):  # as the runner loads a body
    stand_in = types.ModuleType(package)
    stand_in.__path__ = []
    sys.modules[package] = stand_in
for name, file in (("evalexport.workers.exit_codes", "exit_codes.py"),
                   ("evalexport.workers.protocol", "protocol.py"),
                   ("wandb_worker", "wandb_worker.py")):
    spec = importlib.util.spec_from_file_location(name, workers / file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
typed_table = sys.modules["wandb_worker"].typed_table

import wandb

VALUES = [None, 0, 1, -3, 2**60, 1.5, 0.0, -0.0, math.nan, math.inf, True, False, "", "text",
          "wandb-artifact://entity/project/name:v0", [1, 2], ["x", None], {"a": 1}, {"a": "b"}]


def outcome(build):
    try:
        table = build()
    except (TypeError, ValueError) as error:
        return ["refused", type(error).__name__, str(error)]
    artifact = wandb.Artifact("tables", type="rollouts")
    return ["typed", json.dumps(table.to_json(artifact), sort_keys=True, default=repr)]


given = []
original_add_data = wandb.Table.add_data
def counting_add_data(self, *row):
    given.append(row)
    return original_add_data(self, *row)
wandb.Table.add_data = counting_add_data

randomly = random.Random(20261204)
differences, refused = [], 0
for case in range(600):
    width = randomly.randint(1, 4)
    columns = [f"c{n}" for n in range(width)]
    pools = [randomly.sample(VALUES, randomly.randint(1, 4)) for _ in columns]
    rows = []
    for _ in range(randomly.randint(0, 40)):
        row = [randomly.choice(pool) for pool in pools]
        if randomly.random() < 0.02:
            row = row[:-1] if len(row) > 1 else row + [None]
        rows.append(row)
    theirs = outcome(lambda: wandb.Table(columns=columns, data=[list(r) for r in rows]))
    ours = outcome(lambda: typed_table(wandb, columns, [list(r) for r in rows]))
    refused += theirs[0] == "refused"
    if theirs != ours:
        differences.append({"columns": columns, "rows": repr(rows), "wandb": theirs, "ours": ours})

# A big table of one kind of row: W&B types one row of it, and the table holds every row.
rows = [[n, n / 2, f"answer {n}", n % 2 == 0] for n in range(10_000)]
given.clear()
big = typed_table(wandb, ["index", "half", "answer", "even"], rows)
print(json.dumps({"differences": differences[:5], "different": len(differences), "refused": refused,
                  "typed_rows": len(given), "rows": len(big.data), "last": big.data[-1]}))
"""


def _compare(python: Path) -> None:
    completed = subprocess.run(
        [str(python), "-c", COMPARE, str(WORKERS)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    report = json.loads(completed.stdout.strip().splitlines()[-1])
    assert report["different"] == 0, report["differences"]
    # The random tables include ones W&B refuses (a row of the wrong length, a column given a
    # string after a number), so the refusals were compared too, not only typed tables.
    assert report["refused"] > 20
    assert report["typed_rows"] == 1
    assert report["rows"] == 10_000
    assert report["last"] == [9_999, 4_999.5, "answer 9999", False]


def test_the_worker_types_tables_as_wandb_does_and_types_a_row_of_each_kind(
    wandb_python: Path,
) -> None:
    _compare(wandb_python)


@pytest.mark.wandb_sdk
def test_the_oldest_wandb_of_the_matrix_types_them_alike(
    sdk_env_cache: Path, evalexport_download_cache: Path
) -> None:
    _compare(session_environment(sdk_env_cache, evalexport_download_cache, "wandb", OLD_WANDB))
