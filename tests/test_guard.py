"""The already-exported guard (SPEC §3.3), exercised through a plugin tracking exporter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalexport import guard
from evalexport.pipeline import export_run
from evalexport.results import ExportStatus
from evalexport.spec.options import parse_options
from evalexport.spec.registry import load_exporter

pytestmark = pytest.mark.usefixtures("plugin_site")


def _export(sample, store: Path, **options):
    exporter_class = load_exporter("recording")
    config = parse_options(
        exporter_class,
        {"rollouts_jsonl_fpath": str(sample.rollouts), "store_dir": str(store), **options},
    )
    return export_run(exporter_class(), sample.run, config)


def _recorded(store: Path) -> list[dict]:
    return (
        [json.loads(p.read_text()) for p in sorted(store.glob("*.json"))] if store.exists() else []
    )


def test_a_success_writes_a_marker_with_the_fingerprint_and_tags_the_remote_run(
    sample_run, tmp_path
) -> None:
    result = _export(sample_run, tmp_path / "store")
    assert result.status is ExportStatus.SUCCEEDED
    (marker,) = guard.MarkerFile.model_validate_json(
        sample_run.run.export_marker("recording").read_text()
    ).exports
    fingerprint = guard.run_fingerprint(sample_run.run)
    assert marker.fingerprint == fingerprint
    assert marker.remote_run_id == result.run_id
    assert marker.target == str(tmp_path / "store")
    (recorded,) = _recorded(tmp_path / "store")
    assert recorded["tags"]["evalexport.fingerprint"] == fingerprint


def test_an_export_reads_the_run_for_its_fingerprint_once_under_the_lock(
    sample_run, tmp_path, monkeypatch
) -> None:
    from evalexport import pipeline, reading

    calls: list[bool] = []
    prepare = reading.prepare
    held = guard.export_lock

    def counted(run, **options):
        calls.append(locked)
        return prepare(run, **options)

    locked = False

    def lock(run, exporter, waiting=None):
        nonlocal locked
        inner = held(run, exporter, waiting)

        class Held:
            def __enter__(self):
                nonlocal locked
                inner.__enter__()
                locked = True

            def __exit__(self, *exc):
                nonlocal locked
                locked = False
                return inner.__exit__(*exc)

        return Held()

    monkeypatch.setattr(reading, "prepare", counted)
    monkeypatch.setattr(guard, "run_fingerprint", lambda run: pytest.fail("read again"))
    monkeypatch.setattr(pipeline, "run_fingerprint", lambda run: pytest.fail("read again"))
    monkeypatch.setattr(guard, "export_lock", lock)
    result = _export(sample_run, tmp_path / "store")
    assert result.status is ExportStatus.SUCCEEDED
    assert calls == [True]  # once, and under the lock: the marker and the tag name one state
    (recorded,) = _recorded(tmp_path / "store")
    assert recorded["tags"]["evalexport.fingerprint"] == result.details["fingerprint"]


def test_a_second_export_is_skipped_and_creates_nothing(sample_run, tmp_path) -> None:
    first = _export(sample_run, tmp_path / "store")
    second = _export(sample_run, tmp_path / "store")
    assert second.status is ExportStatus.SKIPPED
    assert second.exit_code == 0
    assert second.skip_reason == "already exported"
    assert second.run_id == first.run_id
    assert len(_recorded(tmp_path / "store")) == 1
    # An exporter without second_copy is not told of it (#67's new user: a plugin's skip
    # promised a lookup at the target and +second_copy it refuses as unknown).
    assert second.message.endswith(f"(to export it again, delete {second.details['marker']})")


def test_a_run_changed_since_its_export_fails_naming_the_marker(sample_run, tmp_path) -> None:
    _export(sample_run, tmp_path / "store")
    with sample_run.rollouts.open("a") as handle:
        handle.write("\n")
    result = _export(sample_run, tmp_path / "store")
    assert result.status is ExportStatus.FAILED
    assert result.exit_code == 1
    assert "changed since it was exported" in result.message
    assert str(sample_run.run.export_marker("recording")) in result.message
    assert len(_recorded(tmp_path / "store")) == 1


def test_deleting_the_marker_allows_a_new_export(sample_run, tmp_path) -> None:
    _export(sample_run, tmp_path / "store")
    sample_run.run.export_marker("recording").unlink()
    assert _export(sample_run, tmp_path / "store").status is ExportStatus.SUCCEEDED
    assert len(_recorded(tmp_path / "store")) == 2


def test_a_failed_export_writes_no_marker_and_a_later_one_succeeds(sample_run, tmp_path) -> None:
    failed = _export(sample_run, tmp_path / "store", fail_with="tracking server went away")
    assert failed.status is ExportStatus.FAILED
    assert not sample_run.run.export_marker("recording").exists()
    assert _export(sample_run, tmp_path / "store").status is ExportStatus.SUCCEEDED


def test_an_unreadable_marker_fails_and_says_to_delete_it(sample_run, tmp_path) -> None:
    sample_run.run.export_marker("recording").write_text("{not json")
    result = _export(sample_run, tmp_path / "store")
    assert result.status is ExportStatus.FAILED
    assert "Delete it to export the run again" in result.message
    assert _recorded(tmp_path / "store") == []


def test_the_run_directory_gains_only_the_marker(sample_run, tmp_path) -> None:
    before = {p.name: p.read_bytes() for p in sample_run.run.run_dir.iterdir()}
    _export(sample_run, tmp_path / "store")
    after = {p.name: p.read_bytes() for p in sample_run.run.run_dir.iterdir()}
    assert set(after) - set(before) == {"aime24_rollouts_recording_export_done"}
    assert all(after[name] == content for name, content in before.items())


def test_two_concurrent_exports_of_one_run_create_one_remote_run(sample_run, tmp_path) -> None:
    store = tmp_path / "store"
    command = [
        sys.executable,
        "-m",
        "evalexport",
        "recording",
        f"+rollouts_jsonl_fpath={sample_run.rollouts}",
        f"+store_dir={store}",
        "+delay_seconds=1",
        "--json",
    ]
    processes = [subprocess.Popen(command, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    results = [json.loads(process.communicate(timeout=120)[0]) for process in processes]
    assert sorted(result["status"] for result in results) == ["skipped", "succeeded"]
    assert len(_recorded(store)) == 1


def test_the_guard_object_checks_marks_and_tells_an_earlier_export(sample_run) -> None:
    export_guard = guard.ExportGuard(sample_run.run, "tracker")
    assert export_guard.unexportable_reason() is None
    assert export_guard.earlier_export() is None
    fingerprint = guard.run_fingerprint(sample_run.run)
    path = export_guard.mark("https://tracker.example", "run-1", fingerprint)
    assert path == sample_run.run.export_marker("tracker") == export_guard.marker_path
    earlier = export_guard.earlier_export()
    assert isinstance(earlier, guard.AlreadyExported)
    assert earlier.marker.remote_run_id == "run-1"
    with sample_run.rollouts.open("a") as handle:
        handle.write("\n")
    assert isinstance(export_guard.earlier_export(), guard.ChangedSinceExport)
    assert isinstance(export_guard.state(fingerprint), guard.AlreadyExported)  # as it was read
    path.write_text("{not json")
    assert "Cannot read the export marker" in (export_guard.unexportable_reason() or "")
    assert isinstance(export_guard.earlier_export(), guard.UnreadableMarker)


def test_a_run_exported_to_one_target_still_goes_to_another_and_skips_each_once(
    sample_run, tmp_path
) -> None:
    local, team = tmp_path / "local", tmp_path / "team"
    first = _export(sample_run, local)
    assert first.status is ExportStatus.SUCCEEDED
    there = _export(sample_run, team)
    assert there.status is ExportStatus.SUCCEEDED, there.message  # not "already exported"
    assert (len(_recorded(local)), len(_recorded(team))) == (1, 1)
    for store, result in ((local, first), (team, there)):
        again = _export(sample_run, store)
        assert again.status is ExportStatus.SKIPPED
        assert f"was exported to {store} as run {result.run_id}" in again.message
    marker = guard.MarkerFile.model_validate_json(
        sample_run.run.export_marker("recording").read_text()
    )
    assert [record.target for record in marker.exports] == [str(local), str(team)]


def test_a_marker_of_one_record_written_before_targets_were_kept_apart_is_read(
    sample_run, tmp_path
) -> None:
    store = tmp_path / "store"
    fingerprint = guard.run_fingerprint(sample_run.run)
    old = {
        "exporter": "recording",
        "target": str(store),
        "remote_run_id": "old-run",
        "exported_at": "2026-08-26T10:00:00+00:00",
        "fingerprint": fingerprint,
    }
    sample_run.run.export_marker("recording").write_text(json.dumps(old))
    skipped = _export(sample_run, store)
    assert (skipped.status, skipped.run_id) == (ExportStatus.SKIPPED, "old-run")
    elsewhere = _export(sample_run, tmp_path / "elsewhere")
    assert elsewhere.status is ExportStatus.SUCCEEDED
    records = json.loads(sample_run.run.export_marker("recording").read_text())["exports"]
    assert [record["remote_run_id"] for record in records] == ["old-run", elsewhere.run_id]


def test_a_marker_that_is_a_fifo_is_refused_without_waiting_on_it(sample_run, tmp_path) -> None:
    import os

    os.mkfifo(sample_run.run.export_marker("recording"))
    result = _export(sample_run, tmp_path / "store")
    assert result.status is ExportStatus.FAILED
    assert "it is not a regular file" in result.message


def test_a_marker_that_is_a_directory_is_refused_naming_it(sample_run, tmp_path) -> None:
    marker = sample_run.run.export_marker("recording")
    marker.mkdir()
    result = _export(sample_run, tmp_path / "store")
    assert result.status is ExportStatus.FAILED
    assert result.message == (
        f"Cannot read the export marker {marker} (it is a directory). Delete it to export the run "
        "again."
    )


def test_the_state_of_a_marker_with_no_record_is_not_exported(sample_run) -> None:
    marker = sample_run.run.export_marker("recording")
    marker.write_text(json.dumps({"exporter": "recording", "exports": []}))
    assert isinstance(guard.guard_state(sample_run.run, "recording"), guard.NotExported)
    assert isinstance(guard.ExportGuard(sample_run.run, "recording").state(), guard.NotExported)


def test_a_marker_of_thousands_of_targets_is_read_without_scanning_the_environment_each_time(
    sample_run, monkeypatch
) -> None:
    """A 4,000-record marker made a dry run take 9 s: each record's target was scrubbed twice
    per read, each scrub reading every environment variable's name (#46)."""
    from evalexport.masking import scrubbing

    fingerprint = guard.run_fingerprint(sample_run.run)
    records = [
        guard.ExportMarker.now("mlflow", f"http://host{i}:5000/", f"id{i}", fingerprint)
        for i in range(4000)
    ]
    marker = {"exporter": "mlflow", "exports": [record.model_dump() for record in records]}
    sample_run.run.export_marker("mlflow").write_text(json.dumps(marker))
    scanned: list[str] = []
    real = scrubbing.is_secret_variable

    def counting(name: str) -> bool:
        scanned.append(name)
        return real(name)

    monkeypatch.setattr(scrubbing, "is_secret_variable", counting)
    monkeypatch.setattr(scrubbing, "_environment_seen", None)
    export_guard = guard.ExportGuard(sample_run.run, "mlflow", "http://host3999:5000")
    assert export_guard.unexportable_reason() is None
    earlier = export_guard.earlier_export()
    assert isinstance(earlier, guard.AlreadyExported)
    assert earlier.marker.remote_run_id == "id3999"
    assert len(scanned) <= len(os.environ), len(scanned)  # once, not once a record


_HOLD = """
import os, signal, sys
from evalexport.host.locks import named_lock
with named_lock(sys.argv[1]):
    print("held", flush=True)
    os.kill(os.getpid(), signal.SIGSTOP)  # a holder stopped as Ctrl-Z stops it
"""


def _held_by_a_stopped_process(key: str) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, key], stdout=subprocess.PIPE, text=True, env=os.environ
    )
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "held"
    return holder


@pytest.mark.parametrize("lock", ["the run's export lock", "the delivery lock of its copies"])
def test_an_export_waiting_on_a_stopped_holder_says_so_and_gives_up_at_the_time_limit(
    sample_run, tmp_path, monkeypatch, caplog, lock: str
) -> None:
    """A copy waiting for a lock that a stopped export holds (Ctrl-Z) says whose it is, and
    fails at the worker time limit naming it, rather than wait without end (#56). The delivery
    lock is keyed on the run's bytes and the exporter alone: another target is no way round."""
    monkeypatch.setenv("EVALEXPORT_WORKER_TIME_LIMIT", "2")
    if lock == "the run's export lock":  # keyed as guard.export_lock keys it
        directory = sample_run.run.run_dir.stat()
        marker = sample_run.run.export_marker("recording").name
        key = f"export:{directory.st_dev}:{directory.st_ino}:{marker}"
    else:
        key = f"delivery:recording:{guard.run_fingerprint(sample_run.run)}"
    holder = _held_by_a_stopped_process(key)
    try:
        with caplog.at_level("INFO", logger="evalexport"):
            result = _export(sample_run, tmp_path / "elsewhere")  # another target than any
    finally:
        holder.kill()
        holder.wait()
    assert result.status is ExportStatus.FAILED
    assert result.message.startswith("Gave up waiting:")
    assert f"held by process {holder.pid} since " in result.message
    assert "EVALEXPORT_WORKER_TIME_LIMIT" in result.message
    assert f"waiting for process {holder.pid} since " in caplog.text
    assert _recorded(tmp_path / "elsewhere") == []
    assert not sample_run.run.export_marker("recording").exists()
