"""Ends what an evalexport process started, even when that process is killed outright.

Every process evalexport starts (a worker, an installer, ``glab``) carries the environment
variable :data:`TAG_VARIABLE` set to ``<owner>/<launch>``, and so does everything those start in
turn, unless it clears its environment: an SDK's helper that leaves the worker's process group
(``wandb-core`` starts a session of its own) still carries it. Tagged processes are found by
reading ``/proc/<pid>/environ``, which no reparenting changes.

Run as ``python -I reaper.py OWNER`` by :mod:`evalexport.isolation.descendants`, this file
watches its stdin: the owner writes ``+PID`` for each process it starts directly and ``-PID``
when that one has ended, ``s "PATH"`` for each scratch directory it makes and ``r "PATH"``
when it has removed it. When stdin closes, the owner has ended (normally, or by SIGKILL): the
direct processes still running get SIGTERM and :data:`GRACE_SECONDS` to end (a worker ends its
remote run), then every process still tagged with the owner is killed, and the scratch
directories it left are removed.

Standard library only, and importable: the owner uses :func:`tagged_pids` and :func:`kill_all`
for its own launches.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sys
import time
from collections.abc import Iterable
from pathlib import Path

TAG_VARIABLE = "EVALEXPORT_PROCESS_TAG"
GRACE_SECONDS = 20.0
"""As the launcher's grace for a stopped worker (Slurm waits 30 s before SIGKILL)."""
_POLL_SECONDS = 0.05
_PROC = Path("/proc")


def tagged_pids(tag: str, *, prefix: bool = False) -> list[int]:
    """Processes whose environment holds ``TAG_VARIABLE=tag`` (``tag`` followed by anything
    when ``prefix``), this one excepted. Empty where there is no ``/proc``."""
    wanted = f"{TAG_VARIABLE}={tag}".encode()
    found = []
    try:
        entries = list(_PROC.iterdir())
    except OSError:
        return []
    for entry in entries:
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            variables = (entry / "environ").read_bytes().split(b"\0")
        except OSError:  # gone, or another user's
            continue
        if any(v == wanted or (prefix and v.startswith(wanted)) for v in variables):
            found.append(int(entry.name))
    return found


def is_running(pid: int) -> bool:
    """Whether ``pid`` is a process that has not ended (a zombie has ended)."""
    try:
        state = (_PROC / str(pid) / "stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in (b"Z", b"X")


def kill_all(pids: Iterable[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def wait_until_ended(pids: list[int], seconds: float) -> None:
    """Return once every one of ``pids`` has ended (a signal is delivered when its process
    next runs, not when it is sent), or after ``seconds``."""
    deadline = time.monotonic() + seconds
    while any(is_running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(_POLL_SECONDS)


def end_owned(owner: str, direct: Iterable[int], grace: float = GRACE_SECONDS) -> None:
    """SIGTERM the ``direct`` processes still tagged with ``owner``, give them ``grace``
    seconds, then kill every process still tagged with it."""
    tagged = set(tagged_pids(f"{owner}/", prefix=True))
    stopping = [pid for pid in direct if pid in tagged]
    for pid in stopping:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    wait_until_ended(stopping, grace)
    kill_all(tagged_pids(f"{owner}/", prefix=True))


def main(argv: list[str]) -> int:
    owner = argv[1]
    # The owner's terminal and job scheduler signal the owner; this process ends on stdin's end.
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    direct: set[int] = set()
    scratch: set[str] = set()
    for line in sys.stdin.buffer:
        text = line.strip()
        with contextlib.suppress(ValueError):
            if text.startswith(b"+"):
                direct.add(int(text[1:]))
            elif text.startswith(b"-"):
                direct.discard(int(text[1:]))
            elif text.startswith(b"s "):
                scratch.add(json.loads(text[2:]))
            elif text.startswith(b"r "):
                scratch.discard(json.loads(text[2:]))
    end_owned(owner, sorted(direct))
    for directory in sorted(scratch):  # what the owner would have removed, had it lived
        shutil.rmtree(directory, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
