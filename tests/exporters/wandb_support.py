"""Reading an offline W&B run back, with the wandb environment's own protobuf definitions.

wandb writes an offline run as ``run-<id>.wandb``: a LevelDB-style log (a 7-byte ``:W&B``
header, 32 KiB blocks, records split into FULL/FIRST/MIDDLE/LAST chunks) of protobuf
``Record`` messages. The reader below runs inside the wandb environment, so the test process
never imports wandb, and prints what a user would check: config, summary, tags, the run's
start, the tables logged to its history (read from the run's ``files/media`` directory, keyed by
file name: ``<key>_<step>_<hash>.table.json``), those of its artifacts (read from where W&B
staged them for ``wandb sync``: their columns, their row count, their first row and where the
file is) and the
files the run keeps.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

READ_OFFLINE_RUN = r"""
import glob, json, struct, sys
from pathlib import Path
from wandb.proto import wandb_internal_pb2 as pb

BLOCK, HEADER = 32768, 7
run_dir = Path(sys.argv[1])
data = next(run_dir.glob("run-*.wandb")).read_bytes()
ident, magic, version = struct.unpack("<4sHB", data[:HEADER])
assert ident == b":W&B", ident
records, pending, position = [], b"", HEADER
while position + HEADER <= len(data):
    space = BLOCK - position % BLOCK
    if space < HEADER:
        position += space
        continue
    checksum, length, kind = struct.unpack("<IHB", data[position:position + HEADER])
    position += HEADER
    chunk = data[position:position + length]
    position += length
    if kind == 0 and length == 0:
        position += space - HEADER
        continue
    if kind == 1:
        records.append(chunk)
    elif kind == 2:
        pending = chunk
    elif kind == 3:
        pending += chunk
    elif kind == 4:
        records.append(pending + chunk)
config, summary, tags, run_info, artifact_tables = {}, {}, [], {}, {}
for raw in records:
    record = pb.Record()
    record.ParseFromString(raw)
    kind = record.WhichOneof("record_type")
    if kind == "run":
        run_info = {
            "id": record.run.run_id,
            "project": record.run.project,
            "name": record.run.display_name,
            "start_time": record.run.start_time.seconds,
        }
        tags = list(record.run.tags)
        for item in record.run.config.update:
            config[item.key] = json.loads(item.value_json)
    elif kind == "config":
        for item in record.config.update:
            config[item.key] = json.loads(item.value_json)
    elif kind == "artifact":
        for entry in record.artifact.manifest.contents:
            if entry.path.endswith(".table.json") and entry.local_path:
                stored = json.loads(Path(entry.local_path).read_text())
                artifact_tables[f"{record.artifact.name}/{entry.path}"] = {
                    "columns": stored["columns"],
                    "rows": len(stored["data"]),
                    "first": stored["data"][0] if stored["data"] else None,
                    "path": entry.local_path,
                }
    elif kind == "summary":
        for item in record.summary.update:
            key = item.key or "/".join(item.nested_key)
            summary[key] = json.loads(item.value_json)
tables = {Path(p).name: json.loads(Path(p).read_text()) for p in glob.glob(str(run_dir / "files" / "media" / "table" / "*.table.json"))}
files = sorted(str(p.relative_to(run_dir / "files")) for p in (run_dir / "files").rglob("*") if p.is_file())
print(json.dumps({"run": run_info, "config": config, "summary": summary, "tags": tags, "tables": tables, "artifact_tables": artifact_tables, "files": files}))
"""


def read_offline_run(python: Path, run_dir: Path) -> dict[str, Any]:
    completed = subprocess.run(
        [str(python), "-c", READ_OFFLINE_RUN, str(run_dir)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(completed.stdout.strip().splitlines()[-1])
