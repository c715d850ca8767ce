"""The W&B worker's tables against W&B's own, in the wandb environment, on random tables:
``typed_table`` gives the same column types, rows and table JSON as ``wandb.Table(columns,
data=rows)``, or the same refusal, with W&B typing only a row of each kind; a part streamed into
an artifact (``_add_streamed``) is the file ``Artifact.add`` writes, byte for byte; a table file
laid out otherwise, or holding a value only W&B can write, is left to W&B whole (``_scanned``)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import evalexport.workers
from evalexport.backends.wandb import worker as wandb_worker
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
                   ("wandb_worker", sys.argv[3])):
    spec = importlib.util.spec_from_file_location(name, workers / file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
worker = sys.modules["wandb_worker"]
typed_table = worker.typed_table
scratch = Path(sys.argv[2])

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

def entry_bytes(artifact, entry):
    return Path(artifact.manifest.entries[entry + ".table.json"].local_path).read_bytes()


def table_file(columns, rows, name):
    # Laid out as tables/rollouts.py and samples.py write it.
    path = scratch / name
    text = json.dumps({"columns": columns})[:-1] + ', "data": ['
    text += ",".join("\n" + json.dumps(row, ensure_ascii=False) for row in rows) + "\n]}\n"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return path


# Streamed into the artifact a part at a time: the bytes W&B writes of each part, or the same
# refusal; a table holding what only W&B can write is left to W&B whole.
PLAIN = [value for value in VALUES if not isinstance(value, (list, dict))
         and not str(value).startswith("wandb-artifact")] + ["naïve ☃", "tab\tand \u2028", "\ud800"]
wandb.Table.MAX_ARTIFACT_ROWS = 8
streamed, left_to_wandb, stream_refused, mixed_streamed = 0, 0, 0, 0
for case in range(300):
    width = randomly.randint(1, 4)
    columns = [f"c{n}" for n in range(width)]
    pools = [randomly.sample(PLAIN, randomly.randint(1, 3)) for _ in columns]
    rows = [[randomly.choice(pool) for pool in pools] for _ in range(randomly.randint(0, 30))]
    if randomly.random() < 0.1:
        rows.insert(randomly.randint(0, len(rows)), [[1]] * width)
    scanned = worker._scanned(table_file(columns, rows, f"t{case}.json"), 8)
    if any(isinstance(cell, list) for row in rows for cell in row):
        left_to_wandb += scanned is None
        continue
    theirs, ours = wandb.Artifact("theirs", type="rollouts"), wandb.Artifact("ours", type="rollouts")
    parts = [rows[start:start + 8] for start in range(0, len(rows), 8)]
    pending = scanned.rows()
    for number, part in enumerate(parts):
        try:
            theirs.add(wandb.Table(columns=columns, data=part), "T")
        except (TypeError, ValueError) as error:
            wandb_side = ["refused", type(error).__name__, str(error)]
        else:
            wandb_side = ["added"]
        try:
            added = worker._add_streamed(wandb, ours, "T", scanned, number, pending)
        except (TypeError, ValueError) as error:
            ours_side = ["refused", type(error).__name__, str(error)]
        else:
            ours_side = ["added" if added else "declined"]
        if wandb_side[0] == "refused" or ours_side[0] == "refused":
            stream_refused += 1
            if wandb_side != ours_side:
                differences.append({"part": repr(part), "wandb": wandb_side, "ours": ours_side})
                break
            # What the worker does then (a notice, and mixed types allowed): W&B's bytes too.
            theirs, ours = wandb.Artifact("theirs", type="rollouts"), wandb.Artifact("ours", type="rollouts")
            theirs.add(wandb.Table(columns=columns, data=part, allow_mixed_types=True), "T")
            added = worker._add_streamed(wandb, ours, "T", scanned, number, pending, mixed=True)
            if not added or entry_bytes(theirs, "T") != entry_bytes(ours, "T"):
                differences.append({"part": repr(part), "mixed": True, "added": added})
                break
            theirs, ours = wandb.Artifact("theirs", type="rollouts"), wandb.Artifact("ours", type="rollouts")
            mixed_streamed += 1
            continue
        if ours_side != ["added"] or entry_bytes(theirs, "T") != entry_bytes(ours, "T"):
            differences.append({"part": repr(part), "ours": ours_side,
                                "wandb_bytes": entry_bytes(theirs, "T")[:300].decode(),
                                "ours_bytes": entry_bytes(ours, "T")[:300].decode() if ours_side == ["added"] else None})
            break
        theirs, ours = wandb.Artifact("theirs", type="rollouts"), wandb.Artifact("ours", type="rollouts")
        streamed += 1
wandb.Table.MAX_ARTIFACT_ROWS = 200_000

# A file laid out otherwise (the whole table on one line; a row split over lines) is read whole.
one_line = scratch / "one-line.json"
one_line.write_text(json.dumps({"columns": ["a"], "data": [[1], [2]]}))
split_row = scratch / "split-row.json"
split_row.write_text('{"columns": ["a", "b"], "data": [\n[1,\n2]\n]}\n')
odd_layouts = [worker._scanned(path, 8) for path in (one_line, split_row)]

# A big table of one kind of row: W&B types one row of it, and the table holds every row.
rows = [[n, n / 2, f"answer {n}", n % 2 == 0] for n in range(10_000)]
given.clear()
big = typed_table(wandb, ["index", "half", "answer", "even"], rows)
print(json.dumps({
    "differences": differences[:5], "different": len(differences), "refused": refused,
    "streamed": streamed, "stream_refused": stream_refused, "mixed_streamed": mixed_streamed,
    "left_to_wandb": left_to_wandb, "odd_layouts": repr(odd_layouts),
    "typed_rows": len(given), "rows": len(big.data), "last": big.data[-1],
}))
"""


def _compare(python: Path, scratch: Path) -> None:
    completed = subprocess.run(
        [str(python), "-c", COMPARE, str(WORKERS), str(scratch), wandb_worker.__file__],
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
    # Parts streamed byte for byte as W&B writes them, refusals alike, and every table holding
    # a value only W&B writes left to W&B.
    assert report["streamed"] > 150
    assert report["stream_refused"] > 10
    assert report["mixed_streamed"] == report["stream_refused"]  # then streamed as W&B writes them
    assert report["left_to_wandb"] > 10
    assert report["odd_layouts"] == "[None, None]"
    assert report["typed_rows"] == 1
    assert report["rows"] == 10_000
    assert report["last"] == [9_999, 4_999.5, "answer 9999", False]


def test_the_worker_types_tables_as_wandb_does_and_types_a_row_of_each_kind(
    wandb_python: Path, tmp_path: Path
) -> None:
    _compare(wandb_python, tmp_path)


@pytest.mark.wandb_sdk
def test_the_oldest_wandb_of_the_matrix_types_them_alike(
    sdk_env_cache: Path, evalexport_download_cache: Path, tmp_path: Path
) -> None:
    python = session_environment(sdk_env_cache, evalexport_download_cache, "wandb", OLD_WANDB)
    _compare(python, tmp_path)
