"""Every process evalexport causes ends when evalexport is done with it (README "Reliability").

A process group is not enough: an SDK's helper may start a session of its own (``wandb-core``
does), and a process killed outright (SIGKILL) cleans up nothing. So each launch is tagged
(:data:`~evalexport.isolation.reaper.TAG_VARIABLE` in its environment, inherited by all it
starts), and two things end what carries the tag:

- :func:`tracked_launch`, when the caller is done with a launch (the worker ended, the installer
  returned, the helper timed out), kills every process still tagged with it;
- the reaper (``reaper.py``), one small process per evalexport process, started with the first
  launch, does the same for every launch when evalexport itself ends, however it ends: it
  watches a pipe only evalexport holds, gives the direct processes still running a SIGTERM and
  the grace a worker needs to end its remote run, then kills everything still tagged.

Linux only (``/proc``); elsewhere tagging is harmless and only process groups are ended.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, final

from evalexport.isolation.reaper import TAG_VARIABLE, kill_all, tagged_pids, wait_until_ended
from evalexport.isolation.variables import BASE

__all__ = [
    "TAG_VARIABLE",
    "Launch",
    "claim_scratch",
    "owned_scratch",
    "release_scratch",
    "run_tracked",
    "tracked_launch",
]

REAPER = Path(__file__).resolve().with_name("reaper.py")

_KILLED_WITHIN = 5.0
"""Seconds to wait for killed processes to end (SIGKILL takes effect when one next runs)."""

_lock = threading.Lock()
_owner: str | None = None
_reaper: subprocess.Popen[bytes] | None = None


def _reset_after_fork() -> None:
    """A forked child is an owner of its own: the parent's reaper watches the parent."""
    global _owner, _reaper
    _owner, _reaper = None, None


os.register_at_fork(after_in_child=_reset_after_fork)

_AT_EXIT_WAIT = 2.0
"""Seconds a normal exit waits for the reaper to see it go (it ends what is left, at once)."""


def _let_the_reaper_go() -> None:
    """At a normal exit, tell the reaper we are done (its stdin closes) and wait a moment for
    it, so it is not left to the interpreter as a child still running. A reaper that takes
    longer (a worker still in its grace) ends on its own; we do not wait for it."""
    reaper = _reaper
    if reaper is None or _owner is None:
        return
    with contextlib.suppress(OSError, ValueError):
        if reaper.stdin is not None:
            reaper.stdin.close()
    try:
        reaper.wait(timeout=_AT_EXIT_WAIT)
    except subprocess.TimeoutExpired:
        reaper.returncode = 0  # it ends by itself: nothing of ours waits for it now


atexit.register(_let_the_reaper_go)


def _reaper_input() -> tuple[str, IO[bytes] | None]:
    """This process's owner tag, and the reaper's stdin (started on first use; ``None`` if it
    cannot start, when only :func:`tracked_launch` ends what is left)."""
    global _owner, _reaper
    with _lock:
        if _owner is None:
            _owner = uuid.uuid4().hex
        if _reaper is None or _reaper.poll() is not None:
            environment = _reaper_environment()
            try:
                _reaper = subprocess.Popen(
                    [sys.executable, "-I", str(REAPER), _owner],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,  # a terminal's Ctrl-C is for us, not for it
                    env=environment,
                )
            except OSError:
                _reaper = None
        return _owner, (_reaper.stdin if _reaper is not None else None)


def _reaper_environment() -> dict[str, str]:
    """What the reaper is given of our environment: what a worker whose exporter declares
    nothing is given (:data:`~evalexport.isolation.variables.BASE`), never a token of the
    caller's shell nor what changes how a process loads (``LD_PRELOAD``). Not the tag, were
    we tagged ourselves: the reaper is no process of a launch, and a launch's end kills those
    (it reads its owner from its argument, and other processes' tags from ``/proc``)."""
    return {k: v for k, v in BASE.given(os.environ).items() if k != TAG_VARIABLE}


def _tell_reaper(line: str) -> None:
    _, stdin = _reaper_input()
    if stdin is None:
        return
    with _lock, contextlib.suppress(OSError, ValueError):  # a reaper gone is no export's fault
        stdin.write(line.encode() + b"\n")
        stdin.flush()


@contextlib.contextmanager
def owned_scratch(prefix: str) -> Iterator[Path]:
    """A new temporary directory, removed when the block ends, and by the reaper if this
    process dies first (SIGKILL, or a SIGTERM that a Python caller did not catch)."""
    directory = Path(tempfile.mkdtemp(prefix=prefix))
    claim_scratch(directory)
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        release_scratch(directory)


def claim_scratch(directory: Path) -> None:
    """Tell the reaper ``directory`` is this process's scratch: it removes it if we die."""
    _tell_reaper("s " + json.dumps(str(directory)))


def release_scratch(directory: Path) -> None:
    """Tell the reaper ``directory`` was removed (or given up by its maker)."""
    _tell_reaper("r " + json.dumps(str(directory)))


@final
@dataclass
class Launch:
    """One tagged launch: start its processes with :attr:`environment`, then name them with
    :meth:`started`."""

    tag: str
    environment: dict[str, str]
    _pids: list[int] = field(default_factory=list)

    def started(self, pid: int) -> None:
        """``pid`` was started directly: when evalexport ends, it gets the grace first."""
        self._pids.append(pid)
        _tell_reaper(f"+{pid}")


@contextlib.contextmanager
def tracked_launch(environment: Mapping[str, str] | None = None) -> Iterator[Launch]:
    """A launch whose processes, and all they start, are killed when the block ends.

    ``environment`` (default: ours) is what the processes get, plus the tag.
    """
    owner, _ = _reaper_input()
    tag = f"{owner}/{uuid.uuid4().hex[:12]}"
    launch = Launch(
        tag, {**(os.environ if environment is None else environment), TAG_VARIABLE: tag}
    )
    try:
        yield launch
    finally:
        left = tagged_pids(tag)
        kill_all(left)
        wait_until_ended(left, _KILLED_WITHIN)  # ended when the caller goes on, not later
        for pid in launch._pids:
            _tell_reaper(f"-{pid}")


def run_tracked(
    command: Sequence[str],
    *,
    timeout: float | None = None,
    environment: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """:func:`subprocess.run` with its output captured as text and no stdin, whose process and
    everything it started end when it returns, times out (``TimeoutExpired``) or is
    interrupted."""
    with tracked_launch(environment) as launch:
        with subprocess.Popen(
            list(command),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=launch.environment,
        ) as process:
            launch.started(process.pid)
            try:
                stdout, stderr = process.communicate(timeout=timeout)
            except BaseException:  # a timeout, or a stop signal: nothing it started outlives it
                kill_all(tagged_pids(launch.tag))
                process.kill()
                process.wait()
                raise
        return subprocess.CompletedProcess(list(command), process.returncode, stdout, stderr)
