"""A real single-node Slurm cluster for tests (Debian's slurm-wlm and munge).

``SlurmCluster(directory).start()`` writes a ``slurm.conf`` under ``directory``, starts munged
(unless one runs), slurmctld and slurmd, and waits until the node is idle; ``stop()`` shuts
down what it started. Clients find the cluster through ``SLURM_CONF``. Starting daemons needs
root, as on CI; :func:`unavailable_reason` says why a cluster cannot be started here.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from tests.support.processes import alive

__all__ = ["SlurmCluster", "unavailable_reason"]

_CONF = """ClusterName=evalexport
SlurmctldHost={host}
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd.log
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={d}/log/jobcomp.log
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=2000 State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


def unavailable_reason() -> str | None:
    for command in ("slurmctld", "slurmd", "sbatch", "munged"):
        if shutil.which(command) is None and not Path(f"/usr/sbin/{command}").exists():
            return f"{command} is not installed (Debian: apt-get install slurm-wlm munge; CI installs it)"
    if os.geteuid() != 0:
        return "starting slurmctld and slurmd needs root"
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


_DAEMON_PID_FILES = ("slurmctld.pid", "slurmd.pid")


class SlurmCluster:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.conf = directory / "slurm.conf"
        self.host = socket.gethostname().split(".")[0]
        self._started_munge = False

    @property
    def environment(self) -> dict[str, str]:
        return {"SLURM_CONF": str(self.conf)}

    def _run(self, *command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(command),
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, **self.environment},
            timeout=60,
        )

    def start(self, timeout: float = 60) -> None:
        for sub in ("state", "spool", "log"):
            (self.directory / sub).mkdir(parents=True, exist_ok=True)
        self.conf.write_text(
            _CONF.format(
                host=self.host,
                d=self.directory,
                cpus=os.cpu_count() or 1,
                ctld_port=_free_port(),
                d_port=_free_port(),
            )
        )
        if (
            subprocess.run(["pgrep", "-x", "munged"], capture_output=True, check=False).returncode
            != 0
        ):
            Path("/run/munge").mkdir(parents=True, exist_ok=True)
            shutil.chown("/run/munge", "munge", "munge")
            started = subprocess.run(
                ["runuser", "-u", "munge", "--", "/usr/sbin/munged"],
                capture_output=True,
                text=True,
                check=False,
            )
            # Another munged may have bound the socket since pgrep looked (one ending, or one
            # another session started): a munged serving the socket is all the cluster needs.
            if started.returncode != 0 and "bound to socket" not in started.stderr:
                raise RuntimeError(f"munged did not start: {started.stderr}")
            self._started_munge = started.returncode == 0
        for daemon in ("slurmctld", "slurmd"):
            started = self._run(daemon)
            if started.returncode != 0:
                raise RuntimeError(f"{daemon} did not start: {started.stderr}{self.log_tail()}")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = self._run("sinfo", "-h", "-o", "%t").stdout.strip()
            if state in ("idle", "mix", "alloc"):
                return
            time.sleep(0.5)
        raise RuntimeError(
            f"the Slurm node did not become idle within {timeout} s{self.log_tail()}"
        )

    def _pid(self, name: str) -> int | None:
        try:
            return int((self.directory / name).read_text().strip())
        except (OSError, ValueError):
            return None

    def log_tail(self) -> str:
        parts = []
        for name in ("slurmctld.log", "slurmd.log"):
            path = self.directory / "log" / name
            if path.exists():
                parts.append(f"\n--- {name}\n" + "\n".join(path.read_text().splitlines()[-15:]))
        return "".join(parts)

    def stop(self) -> None:
        """Shut the cluster down, and make sure: a daemon still running 10 s after ``scontrol
        shutdown`` is terminated, then killed (one was seen outliving a CI session)."""
        daemons = [pid for name in _DAEMON_PID_FILES if (pid := self._pid(name)) is not None]
        self._run("scontrol", "shutdown")
        for signal_number in (None, signal.SIGTERM, signal.SIGKILL):
            if signal_number is not None:
                for pid in daemons:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal_number)
            deadline = time.monotonic() + 10
            while (daemons := [pid for pid in daemons if alive(pid)]) and (
                time.monotonic() < deadline
            ):
                time.sleep(0.1)
            if not daemons:
                break
        if self._started_munge:
            pid = Path("/run/munge/munged.pid")
            if pid.exists():
                subprocess.run(["kill", pid.read_text().strip()], check=False)
