"""Parallel exports, one run reached two ways, and directories that cannot be written (#13)."""

from __future__ import annotations

import json
import os
import time

import pytest
import yaml

from evalexport.backends.mlflow.exporter import FINGERPRINT_TAG, MLflowExporter
from evalexport.guard import run_fingerprint
from evalexport.pipeline import export_run
from evalexport.results import ExportStatus
from evalexport.spec.options import parse_options
from tests.faults.conftest import FaultLab, read_only, run_files
from tests.support.mlflow_server import read_runs
from tests.support.proxy import FailingProxy

# The fault-injection tests of real MLflow exports take minutes: --with_faults (CI) runs them.
pytestmark = pytest.mark.faults


def _finished(mlflow_python, uri: str, experiment: str) -> list[dict]:
    return [run for run in read_runs(mlflow_python, uri, experiment) if run["status"] == "FINISHED"]


# -- parallel exports ------------------------------------------------------------------------


@pytest.mark.downloads
def test_parallel_exports_into_a_fresh_default_store_all_succeed(
    lab: FaultLab, mlflow_python, make_sample_run
) -> None:
    samples = [make_sample_run(f"run{i}", seed=i) for i in range(3)]
    processes = [
        lab.start("mlflow", f"+rollouts_jsonl_fpath={sample.rollouts}", "--json")
        for sample in samples
    ]
    ended = [lab.end(process) for process in processes]
    assert [e.exit_code for e in ended] == [0, 0, 0], [e.output[-800:] for e in ended]
    store = f"sqlite:///{os.getcwd()}/mlruns.db"
    assert len(_finished(mlflow_python, store, "aime24")) == 3
    again = lab.run("mlflow", f"+rollouts_jsonl_fpath={samples[0].rollouts}", "--json")
    assert again.result()["status"] == "skipped"  # the store is whole, not half-migrated


@pytest.mark.downloads
def test_plan_run_with_three_workers_into_one_default_store_gives_three_successes(
    lab: FaultLab, mlflow_python, make_sample_run, tmp_path
) -> None:
    for i, benchmark in enumerate(("aime24", "gpqa", "math500")):
        make_sample_run(f"job/{benchmark}", benchmark=benchmark, seed=i)
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        yaml.safe_dump(
            {
                "job": {
                    "benchmarks": ["aime24", "gpqa", "math500"],
                    "runs_root": str(tmp_path / "job"),
                },
                "exports": {"mlflow": {"mlflow_experiment_name": "nightly"}},
            }
        )
    )
    ended = lab.run("plan", "run", str(plan), "--workers", "3", "--json")
    assert ended.exit_code == 0, ended.output[-3000:]
    assert [task["result"]["status"] for task in json.loads(ended.stdout)] == ["succeeded"] * 3
    store = f"sqlite:///{os.getcwd()}/mlruns.db"
    assert len(_finished(mlflow_python, store, "nightly")) == 3


@pytest.mark.downloads
def test_one_run_exported_twice_at_once_through_a_symlink_makes_one_remote_run(
    lab: FaultLab, mlflow_server, mlflow_python, sample_run, tmp_path
) -> None:
    link = tmp_path / "linked-run"
    link.symlink_to(sample_run.run.run_dir, target_is_directory=True)
    paths = [sample_run.rollouts, link / sample_run.rollouts.name]
    processes = [
        lab.start(
            "mlflow",
            f"+rollouts_jsonl_fpath={path}",
            f"+mlflow_tracking_uri={mlflow_server.url}",
            "+mlflow_experiment_name=symlinked",
            "--json",
        )
        for path in paths
    ]
    results = [lab.end(process).result() for process in processes]
    assert sorted(str(r["status"]) for r in results) == ["skipped", "succeeded"]
    assert len(read_runs(mlflow_python, mlflow_server.url, "symlinked")) == 1


# -- what cannot be written -------------------------------------------------------------------


def test_a_read_only_run_directory_fails_before_anything_remote_is_created(
    lab: FaultLab, sample_run
) -> None:
    before = run_files(sample_run)
    with read_only(sample_run.run.run_dir) as prefix:
        ended = lab.run(
            "mlflow", f"+rollouts_jsonl_fpath={sample_run.rollouts}", "--json", prefix=prefix
        )
        dry = lab.run(
            "mlflow", f"+rollouts_jsonl_fpath={sample_run.rollouts}", "--dry-run", prefix=prefix
        )
    assert ended.exit_code == 1
    message = str(ended.result()["message"])
    assert message.startswith(
        f"Cannot write the export marker {sample_run.run.export_marker('mlflow')}"
    )
    assert "not writable" in message
    assert dry.exit_code == 1  # the dry run runs the same check
    assert message in dry.output
    assert not (lab.root / "work" / "mlruns.db").exists()  # no store was created
    assert not list((lab.root / "evalexport-cache").glob("envs/*"))  # nor an environment
    lab.assert_left_clean(sample_run, before, ended)


def test_a_read_only_working_directory_names_the_default_store_and_its_directory(
    lab: FaultLab, sample_run
) -> None:
    before = run_files(sample_run)
    workdir = lab.root / "work"
    with read_only(workdir) as prefix:
        ended = lab.run(
            "mlflow", f"+rollouts_jsonl_fpath={sample_run.rollouts}", "--json", prefix=prefix
        )
    assert ended.exit_code == 1
    message = str(ended.result()["message"])
    assert f"Cannot create the MLflow store {workdir / 'mlruns.db'}" in message
    assert f"its directory {workdir} is not writable" in message
    assert "+mlflow_tracking_uri=sqlite:////" in message
    lab.assert_left_clean(sample_run, before, ended)


def test_wandb_in_a_read_only_directory_fails_naming_it_instead_of_writing_elsewhere(
    lab: FaultLab, sample_run, monkeypatch
) -> None:
    monkeypatch.delenv("WANDB_DIR")
    before = run_files(sample_run)
    workdir = lab.root / "work"
    with read_only(workdir) as prefix:
        ended = lab.run(
            "wandb",
            f"+rollouts_jsonl_fpath={sample_run.rollouts}",
            "+wandb_mode=offline",
            "--json",
            prefix=prefix,
        )
    assert ended.exit_code == 1
    message = str(ended.result()["message"])
    assert message.startswith(f"Cannot write the W&B run under {workdir / 'wandb'}")
    assert "Set WANDB_DIR" in message
    lab.assert_left_clean(sample_run, before, ended)


@pytest.mark.downloads
def test_a_marker_that_cannot_be_written_is_kept_and_the_rerun_finds_the_one_remote_run(
    lab: FaultLab, mlflow_server, mlflow_python, sample_run, monkeypatch
) -> None:
    from evalexport import guard

    def full(run, marker):
        raise OSError(28, "No space left on device", str(run.export_marker(marker.exporter)))

    write_marker = guard.write_marker
    monkeypatch.setattr(guard, "write_marker", full)
    exporter = MLflowExporter()
    config = parse_options(
        exporter,
        {
            "rollouts_jsonl_fpath": str(sample_run.rollouts),
            "mlflow_tracking_uri": mlflow_server.url,
            "mlflow_experiment_name": "unmarked",
        },
    )
    result = export_run(exporter, sample_run.run, config)
    assert result.status is ExportStatus.SUCCEEDED
    assert result.run_id
    marker = sample_run.run.export_marker("mlflow")
    assert f"could not write the export marker {marker}" in result.message
    assert f"a rerun finds run {result.run_id} there, skips" in result.message
    assert "marker" not in result.details
    kept = result.details["kept_record"]
    # The disk is still full: the rerun skips on the kept record, the one remote run.
    again = export_run(exporter, sample_run.run, config)
    assert again.status is ExportStatus.SKIPPED, again.message
    assert again.run_id == result.run_id
    assert not marker.exists()
    # Space again: a dry run says the export would skip, and writes nothing; the rerun
    # writes the marker from the kept record, and forgets it.
    monkeypatch.setattr(guard, "write_marker", write_marker)
    dry = export_run(exporter, sample_run.run, config.model_copy(update={"dry_run": True}))
    assert dry.status is ExportStatus.SKIPPED, dry.message
    assert not marker.exists()
    third = export_run(exporter, sample_run.run, config)
    assert third.status is ExportStatus.SKIPPED, third.message
    assert marker.is_file()
    assert not os.path.exists(kept)
    assert [run["run_id"] for run in _finished(mlflow_python, mlflow_server.url, "unmarked")] == [
        result.run_id
    ]
    # Another run's data in the same directory is exported, not skipped on the kept record.
    marker.unlink()
    with sample_run.rollouts.open("a") as rollouts:
        rollouts.write(sample_run.rollouts.read_text().splitlines()[0] + "\n")
    fourth = export_run(exporter, sample_run.run, config)
    assert fourth.status is ExportStatus.SUCCEEDED, fourth.message


@pytest.mark.downloads
def test_two_copies_exported_at_once_leave_one_remote_run(
    lab: FaultLab, mlflow_server, mlflow_python, make_sample_run
) -> None:
    """Two copies of one run, each aimed at the same server by another name (127.0.0.1 and
    localhost): the delivery lock is the run's and the exporter's, not the target's spelling,
    so the second looks up what the first made and skips for it (#56, #65: without
    ``+skip_existing``, as a finished run of the data is this data's run)."""
    copies = [make_sample_run(f"copy{i}", seed=7) for i in range(2)]
    spellings = [mlflow_server.url, mlflow_server.url.replace("127.0.0.1", "localhost")]
    assert spellings[0] != spellings[1]
    for trial in range(2):
        experiment = f"copies-{trial}"
        started = [
            lab.start(
                "mlflow",
                f"+rollouts_jsonl_fpath={copy.rollouts}",
                f"+mlflow_tracking_uri={uri}",
                f"+mlflow_experiment_name={experiment}",
                "--json",
            )
            for copy, uri in zip(copies, spellings, strict=True)
        ]
        ended = [lab.end(process) for process in started]
        statuses = sorted(e.result()["status"] for e in ended)
        assert statuses == ["skipped", "succeeded"], [e.output[-800:] for e in ended]
        assert len(_finished(mlflow_python, mlflow_server.url, experiment)) == 1
        for copy in copies:
            copy.run.export_marker("mlflow").unlink(missing_ok=True)


# -- servers that fail -----------------------------------------------------------------------


@pytest.mark.downloads
def test_a_server_that_is_down_fails_in_seconds_and_the_rerun_makes_one_run(
    lab: FaultLab, own_mlflow_server, mlflow_python, sample_run
) -> None:
    before = run_files(sample_run)
    own_mlflow_server.stop()
    started = time.monotonic()
    ended = lab.run(
        "mlflow",
        f"+rollouts_jsonl_fpath={sample_run.rollouts}",
        f"+mlflow_tracking_uri={own_mlflow_server.url}",
        "+mlflow_experiment_name=down",
        "--json",
        timeout=120,  # a hang guard, not a speed figure: MLflow's defaults wait ~4 minutes
    )
    elapsed = time.monotonic() - started
    assert ended.exit_code == 1
    assert str(ended.result()["message"]).startswith(
        f"MLflow export to {own_mlflow_server.url} failed"
    )
    lab.assert_left_clean(sample_run, before, ended)
    print(f"server down: failed after {elapsed:.1f} s")

    own_mlflow_server.start()
    rerun = lab.run(
        "mlflow",
        f"+rollouts_jsonl_fpath={sample_run.rollouts}",
        f"+mlflow_tracking_uri={own_mlflow_server.url}",
        "+mlflow_experiment_name=down",
        "--json",
    )
    assert rerun.exit_code == 0, rerun.output
    assert len(_finished(mlflow_python, own_mlflow_server.url, "down")) == 1


@pytest.mark.downloads
def test_a_server_that_dies_mid_export_fails_and_the_rerun_ends_the_abandoned_run(
    lab: FaultLab, own_mlflow_server, mlflow_python, sample_run
) -> None:
    before = run_files(sample_run)
    proxy = FailingProxy(
        own_mlflow_server.port, trigger=b"/runs/log-batch", on_trigger=own_mlflow_server.kill
    )
    try:
        ended = lab.run(
            "mlflow",
            f"+rollouts_jsonl_fpath={sample_run.rollouts}",
            f"+mlflow_tracking_uri={proxy.url}",
            "+mlflow_experiment_name=dies",
            "--json",
            timeout=120,
        )
    finally:
        proxy.close()
    assert ended.exit_code == 1
    assert "was left unfinished: the server did not answer" in str(ended.result()["message"])
    lab.assert_left_clean(sample_run, before, ended)

    own_mlflow_server.start()
    rerun = lab.run(
        "mlflow",
        f"+rollouts_jsonl_fpath={sample_run.rollouts}",
        f"+mlflow_tracking_uri={own_mlflow_server.url}",
        "+mlflow_experiment_name=dies",
        "--json",
    )
    assert rerun.exit_code == 0, rerun.output
    assert str(rerun.result()["message"]).startswith("resumed and finished MLflow run")
    fingerprint = run_fingerprint(sample_run.run)
    runs = [
        run
        for run in read_runs(mlflow_python, own_mlflow_server.url, "dies")
        if run["tags"].get(FINGERPRINT_TAG) == fingerprint
    ]
    assert [run["status"] for run in runs] == ["FINISHED"]  # one run of the data


# -- a full temporary directory --------------------------------------------------------------


@pytest.mark.downloads
def test_a_full_tmpdir_loses_no_outcome_and_a_rerun_makes_no_second_run(
    mlflow_python, sample_run, tmp_path
) -> None:
    """The worker's outcome comes back on a pipe, never through the temporary directory: an
    export under a 64 KiB TMPDIR either says what it made (and marks it) or made nothing, so
    its rerun leaves the store with exactly one run of the run."""
    import shutil
    import subprocess
    import sys

    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.fail("this fault needs unshare and root (a tmpfs mounted for one process)")
    small = tmp_path / "small-tmp"
    small.mkdir()
    store = f"sqlite:///{tmp_path / 'store' / 'mlruns.db'}"
    (tmp_path / "store").mkdir()
    command = [
        sys.executable,
        "-m",
        "evalexport",
        "mlflow",
        f"+rollouts_jsonl_fpath={sample_run.rollouts}",
        f"+mlflow_tracking_uri={store}",
        "+upload_rollouts=false",
        "--json",
    ]
    script = 'mount -t tmpfs -o size=64k tmpfs "$0" && TMPDIR="$0" exec "$@"'
    results = []
    for _ in range(2):
        completed = subprocess.run(
            ["unshare", "-m", "sh", "-c", script, str(small), *command],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        results.append(json.loads(completed.stdout.splitlines()[-1]))
    first, second = results
    finished = _finished(mlflow_python, store, "aime24")
    if first["status"] == "succeeded":
        assert second["status"] == "skipped", second["message"]
        assert [run["run_id"] for run in finished] == [first["run_id"]]
    else:  # refused before anything remote was made: then nothing was
        assert "No space left" in first["message"] or "space" in first["message"].lower()
        assert len(finished) <= 1
    # With its rollouts tables (321 KiB), which are written in TMPDIR: the dry run and the
    # export refuse alike, naming TMPDIR and its room, before anything is built (#46).
    said = []
    for flag in ("--dry-run", "--json"):
        tables = [arg for arg in command if arg != "+upload_rollouts=false" and arg != "--json"]
        completed = subprocess.run(
            ["unshare", "-m", "sh", "-c", script, str(small), *tables, flag],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert completed.returncode == 1, completed.stdout + completed.stderr
        said.append(completed.stdout)
    assert f"{small} (TMPDIR) has 64.0 KiB free" in said[0]
    assert f"{small} (TMPDIR) has 64.0 KiB free" in said[1]
    assert len(_finished(mlflow_python, store, "aime24")) == len(finished)


def test_atif_out_of_space_says_so_of_the_output_and_leaves_nothing(
    make_sample_run, tmp_path
) -> None:
    import shutil
    import subprocess
    import sys

    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.fail("this fault needs unshare and root (a tmpfs mounted for one process)")
    sample = make_sample_run(agents=("aime24_math_tool_agent",))
    small = tmp_path / "small"
    small.mkdir()
    script = 'mount -t tmpfs -o size=64k tmpfs "$0" && "$@"; ls -A "$0"'
    completed = subprocess.run(
        [
            "unshare",
            "-m",
            "sh",
            "-c",
            script,
            str(small),
            sys.executable,
            "-m",
            "evalexport",
            "atif",
            f"+rollouts_jsonl_fpath={sample.rollouts}",
            f"+output_dirpath={small / 'atif'}",
            "+agent_version=1",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert f"failed: No space left to write the trajectories into {small}" in completed.stdout
    assert "Nothing was written" in completed.stdout
    assert completed.stdout.strip().splitlines()[-1].startswith("failed:")  # ls -A: empty


@pytest.mark.downloads
def test_a_full_disk_while_an_embedded_store_is_made_leaves_none_half_made(
    mlflow_python, sample_run, tmp_path
) -> None:
    """The store is made under a name of its own and renamed into place: a disk that fills
    up meanwhile leaves no store, and the export that follows, with room, makes a whole one."""
    import shutil
    import subprocess
    import sys

    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.fail("this fault needs unshare and root (a tmpfs mounted for one process)")
    disk = tmp_path / "disk"
    disk.mkdir()
    export = [
        sys.executable,
        "-m",
        "evalexport",
        "mlflow",
        f"+rollouts_jsonl_fpath={sample_run.rollouts}",
        f"+mlflow_tracking_uri=sqlite:///{disk}/mlruns.db",
        "+upload_rollouts=false",
        "--json",
    ]
    quoted = " ".join(f"'{part}'" for part in export)
    script = (
        f'mount -t tmpfs -o size=96k tmpfs "{disk}" && {quoted}; echo; ls -A "{disk}"; '
        f'mount -o remount,size=64m "{disk}" && {quoted}'
    )
    completed = subprocess.run(
        ["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=600
    )
    lines = [line for line in completed.stdout.splitlines() if line.strip()]
    first, then = json.loads(lines[0]), json.loads(lines[-1])
    assert first["status"] == "failed", first
    assert "mlruns.db" not in lines[1:-1]  # no half-made store left where it is looked for
    assert then["status"] == "succeeded", then["message"]


@pytest.mark.downloads
def test_a_server_that_answers_500_is_said_to_answer_not_to_be_unreachable(
    lab: FaultLab, sample_run
) -> None:
    import http.server
    import threading

    class Failing(http.server.BaseHTTPRequestHandler):
        def _fail(self) -> None:
            self.send_response(500)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = _fail

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Failing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        ended = lab.run(
            "mlflow",
            f"+rollouts_jsonl_fpath={sample_run.rollouts}",
            f"+mlflow_tracking_uri=http://127.0.0.1:{server.server_address[1]}",
            "+mlflow_request_retries=1",
            "+mlflow_request_timeout=5",
            "--json",
        )
    finally:
        server.shutdown()
    message = str(ended.result()["message"])
    assert ended.exit_code == 1
    assert "answered HTTP 500 (a server error) to every retry" in message, message
    assert "cannot be reached" not in message
