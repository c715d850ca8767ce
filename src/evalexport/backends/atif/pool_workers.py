"""A conversion pool's worker processes (:mod:`.files`): each ignores a terminal's Ctrl-C (its
parent stops the pool) and ends with the process that made the pool, however that ends."""

from __future__ import annotations

import os
import signal
from typing import Final

__all__ = ["leave_ctrl_c_to_the_parent"]


def leave_ctrl_c_to_the_parent(creator: int, via_forkserver: bool) -> None:
    """A terminal's Ctrl-C reaches every process of the foreground group: the pool's workers
    ignore it (no traceback from each), and the parent stops the pool. A worker also ends when
    its parent does, however the parent ends (SIGKILL included): Linux tells it
    (``PR_SET_PDEATHSIG``), and where that cannot be asked a thread watches for it.

    ``creator`` is the exporting process: a forked or spawned worker whose parent is already
    another process was orphaned before it could ask, and ends at once. A forkserver's worker
    is the forkserver's child, and the forkserver ends with the exporting process."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = os.getppid()
    if not _die_with_parent():
        import threading

        threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    orphaned = os.getppid() != parent or (not via_forkserver and parent != creator)
    if orphaned:  # the parent died before the request took effect
        os._exit(1)


def _die_with_parent() -> bool:
    """Ask Linux to kill this process when its parent ends; whether it could be asked."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


_PR_SET_PDEATHSIG: Final = 1


def _watch_parent(parent: int) -> None:
    import time

    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)
