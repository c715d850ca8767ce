"""State: a local content-addressed store standing in for the service.

A directory's digest covers every file's relative path and content, so uploading the same
content again is really ``deduped``: nothing new is stored and the first run is returned.
"""

import hashlib
import json
import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class StoredRun:
    digest: str
    run_id: str
    upload_token: str
    label: str | None
    tags: list[str]
    meta: dict[str, str]
    files: list[str]


def _files(directory: Path) -> list[Path]:
    return sorted(
        (
            Path(root) / name
            for root, _, names in os.walk(directory, followlinks=True)
            for name in names
        ),
        key=lambda path: path.relative_to(directory).as_posix(),
    )


def directory_digest(directory: Path) -> str:
    digest = hashlib.sha256()
    for path in _files(directory):
        digest.update(path.relative_to(directory).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


class Store:
    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "blobs").mkdir(parents=True, exist_ok=True)
        (root / "runs").mkdir(parents=True, exist_ok=True)

    def find(self, digest: str) -> StoredRun | None:
        path = self.root / "runs" / f"{digest}.json"
        if not path.exists():
            return None
        return StoredRun(**json.loads(path.read_text(encoding="utf-8")))

    def put(
        self, directory: Path, label: str | None, tags: list[str], meta: dict[str, str]
    ) -> StoredRun:
        digest = directory_digest(directory)
        files = []
        for path in _files(directory):
            data = path.read_bytes()
            blob = self.root / "blobs" / hashlib.sha256(data).hexdigest()
            if not blob.exists():
                blob.write_bytes(data)
            files.append(path.relative_to(directory).as_posix())
        run = StoredRun(
            digest=digest,
            run_id=f"run-{uuid.uuid4().hex[:12]}",
            upload_token=f"upl-{uuid.uuid4().hex}",
            label=label,
            tags=list(tags),
            meta=dict(meta),
            files=files,
        )
        record: dict[str, Any] = run.__dict__
        (self.root / "runs" / f"{digest}.json").write_text(json.dumps(record), encoding="utf-8")
        return run

    def runs(self) -> list[StoredRun]:
        return [
            StoredRun(**json.loads(p.read_text(encoding="utf-8")))
            for p in sorted((self.root / "runs").glob("*.json"))
        ]
