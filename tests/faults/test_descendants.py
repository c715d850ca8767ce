"""Every process evalexport causes ends when it ends (#23, README "Reliability"): a helper an SDK
starts in a session of its own, and an installer running when evalexport is killed outright."""

from __future__ import annotations

import os
import socket
import stat
import time
from pathlib import Path

import pytest

from evalexport.isolation.reaper import is_running
from evalexport.pipeline import export_run
from evalexport.results import ExportStatus
from evalexport.spec.options import parse_options
from tests.faults.conftest import Ended, FaultLab, run_files
from tests.support.echo_exporter import EchoExporter


def _ended_within(pid: int, seconds: float) -> bool:
    """A bound for a test that fails rather than hangs, not a speed requirement."""
    deadline = time.monotonic() + seconds
    while is_running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not is_running(pid)


@pytest.mark.parametrize(
    ("behaviour", "status"),
    [("detach_echo", ExportStatus.SUCCEEDED), ("detach_sleep", ExportStatus.FAILED)],
    ids=["worker-succeeds", "worker-past-its-time-limit"],
)
def test_a_helper_that_left_the_workers_process_group_ends_with_the_worker(
    lab: FaultLab, sample_run, tinysdk_1, wheelhouse, monkeypatch, behaviour, status
) -> None:
    monkeypatch.setenv("EVALEXPORT_WORKER_TIME_LIMIT", "3")
    for variable in ("PIP_FIND_LINKS", "UV_FIND_LINKS"):
        monkeypatch.setenv(variable, str(wheelhouse))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("UV_NO_INDEX", "1")
    note = lab.root / "helper.pid"
    before = run_files(sample_run)
    exporter = EchoExporter()
    config = parse_options(
        exporter,
        {
            "rollouts_jsonl_fpath": str(sample_run.rollouts),
            "requirement": tinysdk_1,
            "behaviour": behaviour,
            "note_path": str(note),
        },
    )
    result = export_run(exporter, sample_run.run, config)
    assert result.status is status, result.message
    helper = int(note.read_text())
    assert not is_running(helper), "the helper outlived the export"
    lab.assert_left_clean(sample_run, before, Ended(int(result.exit_code), result.message, ""))


def test_an_installer_running_when_evalexport_is_killed_outright_ends(
    lab: FaultLab, sample_run, monkeypatch
) -> None:
    """SIGKILL leaves evalexport no chance to clean up: its reaper ends the installer and what
    the installer started."""
    bin_dir = lab.root / "bin"
    bin_dir.mkdir()
    pids = lab.root / "installer.pids"
    uv = bin_dir / "uv"  # found first on PATH: a uv that hangs, as on a dead index
    uv.write_text(f"#!/bin/sh\necho $$ >> {pids}\nsleep 300 &\necho $! >> {pids}\nwait\n")
    uv.chmod(uv.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    before = run_files(sample_run)
    process = lab.start(
        "mlflow",
        f"+rollouts_jsonl_fpath={sample_run.rollouts}",
        f"+mlflow_tracking_uri=sqlite:///{lab.root / 'mlruns.db'}",
        "+requirement=mlflow-never-installed==1.0",
        "--json",
    )
    deadline = time.monotonic() + 120
    while len(pids.read_text().split()) < 2 if pids.exists() else True:
        assert time.monotonic() < deadline, "the installer never started"
        assert process.poll() is None, lab.end(process).output
        time.sleep(0.05)
    installer, child = map(int, pids.read_text().split())
    process.kill()
    assert lab.end(process).exit_code == -9
    assert _ended_within(installer, 30), "the installer outlived evalexport"
    assert _ended_within(child, 30), "what the installer started outlived evalexport"
    assert run_files(sample_run) == before


def test_the_copy_of_a_local_requirement_is_removed_when_evalexport_is_killed_outright(
    lab: FaultLab, sample_run, tmp_path, monkeypatch
) -> None:
    """A local project given as ``+requirement`` is copied before it is built (its tree is
    never written into); SIGKILL while it is built leaves no copy behind (#56)."""
    project = tmp_path / "sdk_project"
    (project / "sdk_project").mkdir(parents=True)
    (project / "sdk_project" / "__init__.py").write_text("VALUE = 1\n")
    (project / "pyproject.toml").write_text('[project]\nname = "sdk-project"\nversion = "1"\n')
    bin_dir = lab.root / "bin"
    bin_dir.mkdir()
    pids = lab.root / "installer.pids"
    uv = bin_dir / "uv"  # a uv that hangs while it builds
    uv.write_text(f"#!/bin/sh\necho $$ >> {pids}\nsleep 300\n")
    uv.chmod(uv.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    process = lab.start(
        "mlflow",
        f"+rollouts_jsonl_fpath={sample_run.rollouts}",
        f"+mlflow_tracking_uri=sqlite:///{lab.root / 'mlruns.db'}",
        f"+requirement={project}",
        "--json",
    )
    deadline = time.monotonic() + 120
    while not pids.exists():
        assert time.monotonic() < deadline, "the installer never started"
        assert process.poll() is None, lab.end(process).output
        time.sleep(0.05)
    copies = list(lab.tmpdir.glob("evalexport-local-*"))
    assert copies, "the project was not copied before it was built"
    process.kill()
    assert lab.end(process).exit_code == -9
    deadline = time.monotonic() + 30  # the reaper's grace, then its removal
    while any(copy.exists() for copy in copies) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [copy for copy in copies if copy.exists()], "a copy of the project was left"
    assert _ended_within(int(pids.read_text().split()[0]), 30)


@pytest.mark.downloads
def test_wandb_core_ends_with_a_worker_stopped_at_its_time_limit(
    lab: FaultLab, sample_run, wandb_python, monkeypatch
) -> None:
    """The issue's case: W&B online against a server that never answers, time limit 5 s."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)  # accepts connections, never answers
    try:
        monkeypatch.setenv("WANDB_BASE_URL", f"http://127.0.0.1:{silent.getsockname()[1]}")
        monkeypatch.setenv("WANDB_API_KEY", "a1" * 20)
        monkeypatch.setenv("EVALEXPORT_WORKER_TIME_LIMIT", "5")
        ended = lab.run(
            "wandb", f"+rollouts_jsonl_fpath={sample_run.rollouts}", "+wandb_mode=online", "--json"
        )
    finally:
        silent.close()
    assert ended.exit_code == 1, ended.output
    assert "exceeded its time limit of 5 s" in str(ended.result()["message"])
    assert _wandb_core_pids(lab) == [], "wandb-core outlived evalexport"


def _wandb_core_pids(lab: FaultLab) -> list[int]:
    """wandb-core processes started under this test (their environment names its $TMPDIR)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
            environment = (entry / "environ").read_bytes()
        except OSError:
            continue
        ours = b"wandb-core" in command and str(lab.tmpdir).encode() in environment
        if ours and is_running(int(entry.name)):
            found.append(int(entry.name))
    return found
