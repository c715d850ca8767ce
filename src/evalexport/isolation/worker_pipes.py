"""What a running worker says through its pipes, read while it runs: its progress reports and
its result on the report pipe (:class:`Reports`), its stdout and stderr's last bytes for a
failure's message (:class:`LogTail`); :mod:`.launcher` starts the worker and reads them."""

from __future__ import annotations

import collections
import contextlib
import json
import os
import threading
from collections.abc import Callable
from typing import final

from evalexport.workers.protocol import (
    WorkerResult,
    result,
    worker_result_from,
)

__all__ = ["LogTail", "Reports"]


@final
class Reports:
    """The worker's report pipe, read as it writes: ``progress DONE TOTAL`` lines forwarded to
    ``progress``, ``say <json text>`` lines to ``say``, and its ``result <json>`` kept."""

    def __init__(
        self,
        fd: int,
        progress: Callable[[int, int], None] | None,
        say: Callable[[str], None] | None = None,
    ) -> None:
        self._result: str | None = None
        self._progress = progress
        self._say = say
        self.on_success: Callable[[], None] | None = None
        """Called, from the reader's thread, when the worker reports a succeeded result."""
        self._thread = threading.Thread(
            target=self._read, args=(fd,), name="evalexport-worker-reports", daemon=True
        )
        self._thread.start()

    def _read(self, fd: int) -> None:
        with os.fdopen(fd, "rb") as lines:
            for line in lines:
                kind, _, rest = line.rstrip(b"\n").partition(b" ")
                if kind == b"result":
                    self._result = rest.decode("utf-8", errors="replace")
                    if self.on_success is not None and _succeeded(self._result):
                        self.on_success()
                elif kind == b"say" and self._say is not None:
                    with contextlib.suppress(Exception):  # not text, or a callback that raises
                        said = json.loads(rest)
                        if isinstance(said, str):
                            self._say(said)
                elif kind == b"progress" and self._progress is not None:
                    parts = rest.split()
                    if len(parts) == 2 and all(part.isdigit() for part in parts):
                        with contextlib.suppress(Exception):  # a caller's callback that raises
                            self._progress(int(parts[0]), int(parts[1]))

    def finished(self) -> None:
        """Wait for the worker's last report (its pipe closes when it has ended)."""
        self._thread.join(timeout=_READ_AFTER_EXIT)

    def result(self) -> WorkerResult | None:
        """The worker's result, checked as the protocol's type; one that is not a result is
        a failed one saying so (the runner writes only checked results: this is the
        boundary)."""
        if self._result is None:
            return None
        try:
            data = json.loads(self._result)
        except ValueError:
            return None
        try:
            return worker_result_from(data)
        except ValueError as error:
            return result("failed", 1, f"The worker wrote an invalid result ({error})")


def _succeeded(result_text: str) -> bool:
    """Whether a worker's result line says its export succeeded."""
    try:
        data = json.loads(result_text)
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("status") == "succeeded"


@final
class LogTail:
    """The worker's stdout and stderr, read as it writes them, its last :data:`_LOG_BYTES`
    kept in memory for a failure's message."""

    def __init__(self, fd: int) -> None:
        self._chunks: collections.deque[bytes] = collections.deque()
        self._size = 0
        self._thread = threading.Thread(
            target=self._read, args=(fd,), name="evalexport-worker-log", daemon=True
        )
        self._thread.start()

    def _read(self, fd: int) -> None:
        with os.fdopen(fd, "rb", buffering=0) as output:
            while chunk := output.read(65536):
                self._chunks.append(chunk)
                self._size += len(chunk)
                while self._size > _LOG_BYTES and len(self._chunks) > 1:
                    self._size -= len(self._chunks.popleft())

    def finished(self) -> None:
        """Give the reader a moment for what the worker wrote before it ended: the pipe closes
        only when every process holding it has ended (an SDK's helper may hold it until the
        launch is done), so this does not wait for its end."""
        self._thread.join(timeout=_LOG_AFTER_EXIT)

    def text(self) -> str:
        """What was kept, as text."""
        return b"".join(self._chunks)[-_LOG_BYTES:].decode("utf-8", errors="replace")


_LOG_BYTES = 256 * 1024
"""How much of a worker's output is kept (its tail is what a failure reports)."""


_READ_AFTER_EXIT = 5.0
"""Seconds to wait, once the worker has ended, for the last of its reports (the pipe is the
runner's alone: it closes when the runner exits)."""


_LOG_AFTER_EXIT = 0.5
"""Seconds to wait, once the worker has ended, for the last of its output already written."""
