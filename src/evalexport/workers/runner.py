"""The worker protocol, run as ``<env>/bin/python -I runner.py [BODY]`` (SPEC §3.4).

Given ``BODY``, the runner loads the body and imports what it names in ``WARM_UP`` (its SDK)
before it reads its request, so a worker started while the parent still reads the run is ready
when the payload comes; stdin closing before a request means the parent let it go.

The request arrives as one JSON line on stdin (a ``RunnerRequest`` of
``evalexport/workers/protocol.py``), so nothing it holds (a tracking URI with a password, say)
is ever written to disk. The body is a Python file defining ``run(payload) -> WorkerResult``;
a body whose ``run`` also takes ``progress`` gets a ``progress(done, total)`` to call, and one
that takes ``say`` a ``say(text)`` that the parent logs at once (a wait, as it begins). The
protocol module is shipped beside this file, and made importable under its own name
(``evalexport.workers.protocol``) before the body runs, so the bodies import the types and the
result builder exactly as the exporters do. Progress and, last, the result go back on the
parent's report pipe (``result <json>``, one line: never a file, which a full disk could
refuse), and the process exits with the result's exit code, so a worker can report 1, 3 or 4
itself. An exception in the body is a failed result, not a traceback on the
user's terminal (the traceback goes to the worker's log).

Stopping: SIGTERM, SIGINT or SIGHUP raise :class:`Interrupted` in the body, once (later ones are
ignored, so the body's cleanup runs to its end). A body ends its remote run as failed or killed
and re-raises; the result is then failed with exit code ``128 + signal``. stdin stays open for
as long as the parent lives: when it closes without the parent having stopped us, the parent
died (SIGKILL), and the worker stops itself the same way, then removes the scratch directories
the parent can no longer remove.

Standard library only: this file runs inside an SDK's environment.
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import json
import os
import runpy
import shutil
import signal
import sys
import threading
import traceback
import types
from pathlib import Path
from typing import Any

PROTOCOL_MODULE = "evalexport.workers.protocol"
PROTOCOL_COPY = "evalexport_worker_protocol.py"
"""The name the launcher gives its copy of ``protocol.py`` beside this file."""
EXIT_CODES_MODULE = "evalexport.workers.exit_codes"
EXIT_CODES_COPY = "evalexport_worker_exit_codes.py"
"""The name the launcher gives its copy of ``exit_codes.py``, which the protocol imports."""


def _install_protocol() -> Any:
    """Load the shipped copy of the protocol as ``evalexport.workers.protocol``. evalexport is
    not installed in an SDK's environment: its two parent packages are stand-ins with an empty
    path, so this module (and the exit codes it imports) are the only ones of ours a body can
    import."""
    for package in ("evalexport", "evalexport.workers"):
        stand_in = types.ModuleType(package)
        stand_in.__path__ = []
        sys.modules[package] = stand_in
    module = None
    for name, copy in ((EXIT_CODES_MODULE, EXIT_CODES_COPY), (PROTOCOL_MODULE, PROTOCOL_COPY)):
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(copy))
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return module


_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class Interrupted(BaseException):
    """A stop signal arrived (a ``BaseException``: ``except Exception`` in a body lets it by)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum = signum


def _ignore_stop_signals() -> None:
    for signum in _STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)


def _stop_on_first_signal(signum: int, frame: object) -> None:
    _ignore_stop_signals()
    raise Interrupted(signum)


def _watch_parent(orphaned: threading.Event) -> None:
    """Read stdin to its end; its end without a signal first means the parent is gone."""
    try:
        while os.read(sys.stdin.fileno(), 65536):
            pass
    except (OSError, ValueError):
        pass
    orphaned.set()
    os.kill(os.getpid(), signal.SIGTERM)


def _failed(message: str, exit_code: int = 1) -> dict[str, Any]:
    result: dict[str, Any] = sys.modules[PROTOCOL_MODULE].result("failed", exit_code, message)
    return result


def _report(fd: int | None, line: str) -> bool:
    """Write one line to the parent's report pipe, whole; whether it got there."""
    if fd is None:
        return False
    data = memoryview((line + "\n").encode())
    try:
        while data:
            data = data[os.write(fd, data) :]
    except OSError:
        return False
    return True


def _progress_reporter(fd: int | None) -> Any:
    def progress(done: int, total: int) -> None:
        # The parent stopped reading: progress is never worth failing for.
        _report(fd, f"progress {int(done)} {int(total)}")

    return progress


def _sayer(fd: int | None) -> Any:
    def say(text: str) -> None:
        # One line whatever the text holds: JSON escapes its line breaks.
        _report(fd, f"say {json.dumps(str(text))}")

    return say


def _interrupted_result(interruption: Interrupted, orphaned: bool) -> dict[str, Any]:
    """Failed with ``128 + signal``; the message is what the body noted of its cleanup."""
    name = signal.Signals(interruption.signum).name
    protocol = sys.modules[PROTOCOL_MODULE]
    code = int(protocol.ExitCode.for_signal(interruption.signum))
    result = _failed(" ".join(getattr(interruption, "__notes__", [])), code)
    result["stopped_by"] = "parent died" if orphaned else name
    return result


def _load_body(path: str) -> dict[str, Any]:
    """The body's namespace, and what it asks to import before its payload arrives
    (``WARM_UP``, module names: its SDK), so that importing the SDK overlaps the parent's
    reading of the run. A module that fails to import here fails again, with its error, in
    ``run``.

    The imports run without the cyclic collector, and what they built is then collected once
    (the garbage they left in cycles is finalized) and frozen (never scanned again): an SDK's
    import makes hundreds of thousands of objects that live as long as the process, and
    collecting over them as they grow cost about a tenth of an MLflow worker's CPU."""
    import gc

    gc.disable()
    try:
        namespace = runpy.run_path(path, run_name="evalexport_worker_body")
        for module in namespace.get("WARM_UP", ()):
            with contextlib.suppress(Exception):
                importlib.import_module(module)
    finally:
        gc.collect()  # what the imports left in cycles is finalized, not frozen
        gc.freeze()
        gc.enable()
    return namespace


def main(argv: list[str]) -> int:
    _install_protocol()
    parent = os.getppid()
    body: dict[str, Any] | Exception | None = None
    if len(argv) > 1:  # started ahead of its request: load the body (and its SDK) now
        try:
            body = _load_body(argv[1])
        except Exception as error:  # reported as the body's error once the request arrives
            body = error
    line = sys.stdin.buffer.readline()
    if not line:  # the parent let us go before sending a request: nothing was asked
        if os.getppid() != parent:
            shutil.rmtree(Path(__file__).parent, ignore_errors=True)
        return 0
    request = json.loads(line)
    sys.modules[PROTOCOL_MODULE].options_given_as_tokens(request.get("options_as_tokens", True))
    orphaned = threading.Event()
    for signum in _STOP_SIGNALS:
        signal.signal(signum, _stop_on_first_signal)
    threading.Thread(target=_watch_parent, args=(orphaned,), daemon=True).start()
    result: Any = None
    try:
        try:
            if isinstance(body, Exception):
                raise body
            run = (body or runpy.run_path(request["body"], run_name="evalexport_worker_body"))[
                "run"
            ]
            parameters = inspect.signature(run).parameters
            fd = request.get("report_fd")
            reporters = {
                name: make(fd)
                for name, make in (("progress", _progress_reporter), ("say", _sayer))
                if name in parameters
            }
            result = run(request["payload"], **reporters)
        except Exception as error:  # the body's bugs, and SDK errors it did not expect
            traceback.print_exc()
            result = _failed(f"worker error: {type(error).__name__}: {error}")
        _ignore_stop_signals()  # the body is done: what it did is what the result must say
    except Interrupted as interruption:
        _ignore_stop_signals()
        if result is None:  # a signal after the body returned does not undo what it did
            result = _interrupted_result(interruption, orphaned.is_set())
    try:
        result = sys.modules[PROTOCOL_MODULE].worker_result_from(result)
    except ValueError as error:
        result = _failed(f"worker returned an invalid result ({error}): {result!r}")
    # The result goes back on the report pipe, never through a file: a full disk must not keep
    # the parent from learning that a remote run exists.
    told = not orphaned.is_set() and os.getppid() == parent
    told = told and _report(request.get("report_fd"), "result " + json.dumps(result))
    if not told:  # the parent died while we worked
        for directory in request.get("scratch", []):
            shutil.rmtree(directory, ignore_errors=True)
    return int(result.get("exit_code", 1))


def _spare_the_teardown() -> None:
    """Collect what is garbage now (the finalizers of objects in reference cycles run), then
    freeze every object left: the interpreter's teardown, which still joins threads and runs
    the SDK's exit handlers, then skips a cyclic collection over everything the SDK built
    (about half a second of CPU at every MLflow worker's exit)."""
    import gc

    gc.collect()
    gc.freeze()


if __name__ == "__main__":
    code = main(sys.argv)
    _spare_the_teardown()
    sys.exit(code)
