"""The fault laboratory: real exports as real processes, hit by real signals and real failures.

Every scenario ends with :meth:`FaultLab.assert_left_clean`, which checks what a fault must
never cause, whatever it is: a traceback shown to the user, a marker written by a failed
export, a changed run directory, a scratch file or worker process left behind, a secret on
disk or in the output. Each test gets a ``$TMPDIR`` of its own, so "left behind" is exact.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from evalexport.testing.factory import CanarySecrets, SampleRun
from tests.conftest import CliRun

MARKER_SUFFIX = "_export_done"


@dataclass(frozen=True)
class Ended(CliRun):
    """How an export process ended, with its ``--json`` result."""

    def result(self) -> dict[str, object]:
        import json

        lines = self.stdout.strip().splitlines()
        assert lines, f"no result on stdout; stderr: {self.stderr[-2000:]}"
        parsed: dict[str, object] = json.loads(lines[-1])
        return parsed


@dataclass
class FaultLab:
    root: Path
    tmpdir: Path
    canaries: CanarySecrets
    extra_secrets: list[str] = field(default_factory=list)
    watched: list[Path] = field(default_factory=list)
    """Directories searched for secrets besides the scratch space, cache and working dir."""

    # -- running exports ---------------------------------------------------------------------

    def start(
        self, *args: str, cwd: Path | None = None, prefix: list[str] | None = None
    ) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [*(prefix or []), sys.executable, "-m", "evalexport", *map(str, args)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=cwd,
            preexec_fn=as_from_a_terminal,
        )

    def end(self, process: subprocess.Popen[str], timeout: float = 300) -> Ended:
        stdout, stderr = process.communicate(timeout=timeout)
        return Ended(process.returncode, stdout, stderr)

    def run(
        self,
        *args: str,
        timeout: float = 300,
        cwd: Path | None = None,
        prefix: list[str] | None = None,
    ) -> Ended:
        return self.end(self.start(*args, cwd=cwd, prefix=prefix), timeout)

    # -- workers -----------------------------------------------------------------------------

    def worker_pids(self) -> list[int]:
        """Processes running a worker of this test (their runner lives in our ``$TMPDIR``)."""
        pids = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                command = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if str(self.tmpdir).encode() in command and b"evalexport_worker_runner" in command:
                pids.append(int(entry.name))
        return pids

    def wait_for_worker(self, timeout: float = 120) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if pids := self.worker_pids():
                return pids[0]
            time.sleep(0.05)
        raise AssertionError("no worker process started")

    def wait_until_no_worker(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while self.worker_pids() and time.monotonic() < deadline:
            time.sleep(0.1)

    # -- what a fault must never leave -------------------------------------------------------

    @property
    def secrets(self) -> list[str]:
        return [*self.canaries.all, *self.extra_secrets]

    def assert_left_clean(
        self,
        sample: SampleRun,
        before: dict[str, bytes],
        ended: Ended,
        *,
        marker_expected: bool = False,
    ) -> None:
        assert "Traceback" not in ended.output, ended.output[-3000:]
        markers = sorted(p.name for p in sample.run.run_dir.glob(f"*{MARKER_SUFFIX}"))
        if not marker_expected:
            assert markers == [], "a failed or interrupted export wrote a marker"
        assert run_files(sample) == before, "the run directory changed"
        self.wait_until_no_worker()
        assert self.worker_pids() == [], "a worker process was left running"
        leftovers = sorted(p.name for p in self.tmpdir.iterdir())
        assert leftovers == [], f"scratch left in $TMPDIR: {leftovers}"
        leaks = [s for s in self.secrets if s in ended.output]
        for directory in [self.tmpdir, Path.cwd(), *self.watched, Path(os.environ["HOME"])]:
            leaks += self._leaks_under(directory)
        assert leaks == [], f"secrets found: {leaks}"

    def _leaks_under(self, root: Path) -> list[str]:
        found = []
        for path in sorted(root.rglob("*")) if root.is_dir() else []:
            if path.is_file() and not path.is_symlink():
                data = path.read_bytes()
                found += [f"{path}: {s}" for s in self.secrets if s.encode() in data]
        return found


def as_from_a_terminal() -> None:
    """A command typed at a terminal has the default stop signals; a test runner started in the
    background or under ``nohup`` would pass ignored ones on, and evalexport keeps those."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def run_files(sample: SampleRun) -> dict[str, bytes]:
    """Every file of the run directory but export markers, with its bytes."""
    return {
        str(path.relative_to(sample.run.run_dir)): path.read_bytes()
        for path in sorted(sample.run.run_dir.rglob("*"))
        if path.is_file() and not path.name.endswith(MARKER_SUFFIX)
    }


@pytest.fixture
def lab(
    evalexport_isolation: Path, canaries: CanarySecrets, monkeypatch: pytest.MonkeyPatch
) -> Iterator[FaultLab]:
    tmpdir = evalexport_isolation / "tmp"
    tmpdir.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    lab = FaultLab(evalexport_isolation, tmpdir, canaries)
    yield lab
    for pid in lab.worker_pids():  # never leave one behind, even when the test failed
        os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def read_only(directory: Path) -> Iterator[list[str]]:
    """A command prefix under which ``directory`` is read-only, for real.

    Root ignores permissions, so as root the command runs in a mount namespace of its own
    where ``directory`` is bind-mounted read-only (``EROFS``, as on a read-only share); as
    anyone else the directory loses its write permission for the block.
    """
    if os.geteuid() != 0:
        mode = directory.stat().st_mode
        directory.chmod(mode & ~0o222)
        try:
            yield []
        finally:
            directory.chmod(mode)
        return
    if shutil.which("unshare") is None:
        pytest.fail("running as root needs unshare(1) to make a directory read-only")
    script = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" "$1" && shift && exec "$@"'
    yield ["unshare", "--mount", "sh", "-c", script, "sh", str(directory)]


# The stand-in SDKs other suites build: tinysdk for worker faults, the fake evalrdl SDK.
from tests.exporters.conftest import evalrdl_sdk, fake_evalrdl_wheelhouse  # noqa: E402, F401
from tests.isolation.conftest import tinysdk_1, wheelhouse  # noqa: E402, F401
