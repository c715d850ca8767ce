"""A conversion pool's worker never outlives the export that made it, even when the export
dies in the moment between forking the worker and the worker asking Linux to tell it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

_CHILD = textwrap.dedent(
    """
    import os, sys
    from evalexport.backends.atif.pool_workers import leave_ctrl_c_to_the_parent
    creator = int(sys.argv[1])
    leave_ctrl_c_to_the_parent(creator, sys.argv[2] == "forkserver")
    print("worked")
    """
)


def _start_as_pool_worker(creator: int, method: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _CHILD, str(creator), method],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_worker_whose_parent_is_its_creator_works() -> None:
    ran = _start_as_pool_worker(os.getpid(), "fork")
    assert (ran.returncode, ran.stdout.strip()) == (0, "worked"), ran.stderr


def test_a_worker_orphaned_before_it_could_ask_ends_at_once() -> None:
    """Its parent is no longer the exporting process (here: it never was): it was reparented."""
    ran = _start_as_pool_worker(os.getpid() + 1_000_000, "fork")
    assert (ran.returncode, ran.stdout) == (1, ""), ran.stderr


def test_a_forkserver_worker_belongs_to_the_forkserver() -> None:
    ran = _start_as_pool_worker(os.getpid() + 1_000_000, "forkserver")
    assert (ran.returncode, ran.stdout.strip()) == (0, "worked"), ran.stderr
