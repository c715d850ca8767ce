"""The worker protocol end to end: a real environment, a real worker subprocess."""

from __future__ import annotations

import logging
import re
import shutil
import time
from pathlib import Path

import pytest

from evalexport.pipeline import export_run
from evalexport.progress import ProgressLog
from evalexport.results import ExportStatus, SkipReason
from evalexport.spec import Sdk
from evalexport.spec.options import parse_options
from tests.support.echo_exporter import EchoConfig, EchoExporter


def test_the_worker_runs_in_its_environment_and_reports_a_result(
    echo_export, sample_run, monkeypatch
) -> None:
    monkeypatch.setenv("TINYSDK_TOKEN", "canary-tinysdk-token-0123456789")
    result = echo_export()
    assert result.status is ExportStatus.SUCCEEDED, result.message
    details = result.details
    assert details["sdk_origin"] == "installed tinysdk"
    assert details["payload"]["rollouts"] == str(sample_run.rollouts)
    assert details["token_seen"] is True  # tokens reach the worker through its environment
    assert result.environment is not None
    assert Path(result.environment).is_dir()
    assert "canary-tinysdk-token" not in result.model_dump_json()


def test_a_module_named_like_the_sdk_beside_the_worker_cannot_shadow_it(
    sample_run, tinysdk_1: str, tmp_path, monkeypatch
) -> None:
    exporter_dir = tmp_path / "exporter_package"
    exporter_dir.mkdir()
    body = exporter_dir / "echo.py"
    assert EchoExporter.sdk is not None
    shutil.copyfile(EchoExporter.sdk.body, body)
    shadow = "ORIGIN = 'shadowing module'\n__version__ = 'shadow'\n"
    (exporter_dir / "tinysdk.py").write_text(shadow)
    (Path.cwd() / "tinysdk.py").write_text(shadow)
    monkeypatch.setenv("PYTHONPATH", str(exporter_dir))

    class ShadowedEcho(EchoExporter):
        sdk = Sdk(body=body)

    exporter = ShadowedEcho()
    config = parse_options(
        exporter, {"rollouts_jsonl_fpath": str(sample_run.rollouts), "requirement": tinysdk_1}
    )
    result = export_run(exporter, sample_run.run, config)
    assert result.details["sdk_origin"] == "installed tinysdk"
    assert "site-packages" in result.details["sdk_file"]
    assert str(exporter_dir) not in result.details["sys_path"]


def test_a_worker_past_its_time_limit_is_killed_and_reported(echo_export, monkeypatch) -> None:
    monkeypatch.setenv("EVALEXPORT_WORKER_TIME_LIMIT", "2")
    result = echo_export(behaviour="sleep")
    assert result.status is ExportStatus.FAILED
    assert result.exit_code == 1
    assert result.message.startswith(
        "The echo worker exceeded its time limit of 2 s and was stopped."
    )
    # The echo exporter takes no +timeout: the hint names only what exists.
    assert "+timeout" not in result.message
    assert result.message.endswith("Set EVALEXPORT_WORKER_TIME_LIMIT (seconds) to allow it longer.")


def test_a_worker_that_segfaults_is_reported_with_its_signal_and_output(echo_export) -> None:
    result = echo_export(behaviour="segfault")
    assert result.status is ExportStatus.FAILED
    assert "The echo worker was killed by SIGSEGV without writing a result." in result.message
    assert "about to crash" in result.message
    assert result.details["worker_exit_code"] == -11


def test_a_worker_that_exits_without_a_result_is_reported_with_its_output(echo_export) -> None:
    result = echo_export(behaviour="no_result")
    assert result.status is ExportStatus.FAILED
    assert "exited with code 0 without writing a result" in result.message
    assert "partial output before leaving" in result.message


def test_an_exception_in_the_worker_is_a_failed_result(echo_export) -> None:
    result = echo_export(behaviour="raise")
    assert result.status is ExportStatus.FAILED
    assert result.message == "worker error: ValueError: the SDK said no"


@pytest.mark.parametrize("code", [1, 3, 4])
def test_the_workers_own_exit_code_is_passed_through(echo_export, code: int) -> None:
    result = echo_export(behaviour="exit_code", exit_code=code)
    assert result.exit_code == code
    assert result.message == "worker verdict"


def test_a_worker_exits_without_a_teardown_collection_and_loses_nothing(
    echo_export, tmp_path
) -> None:
    """The runner collects the body's garbage (finalizers of objects only a cyclic collection
    finds still run) and freezes the rest before the interpreter's teardown, whose cyclic
    collection over an SDK's objects cost about half a second of CPU at every MLflow worker's
    exit; exit handlers still run."""
    import time

    note = tmp_path / "note.txt"
    frozen = Path(f"{note}.frozen")
    result = echo_export(behaviour="leave_garbage", note_path=str(note))
    assert result.status is ExportStatus.SUCCEEDED, result.message
    deadline = time.monotonic() + 30  # the result is read before the worker has exited
    while not frozen.is_file() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert note.read_text() == "finalized"
    assert int(frozen.read_text()) > 0


def test_a_body_runs_with_what_its_imports_built_frozen_and_the_collector_on(
    echo_export, tmp_path
) -> None:
    """The body and its SDK are imported without the cyclic collector, and what they built is
    frozen out of its reach (it lives as long as the worker), once the garbage the import left
    in cycles is finalized; the body itself then runs with the collector on."""
    note = tmp_path / "note.txt"
    result = echo_export(behaviour="note_the_collector", note_path=str(note))
    assert result.status is ExportStatus.SUCCEEDED, result.message
    enabled, frozen, finalized = note.read_text().split()
    assert enabled == "True"
    assert int(frozen) > 1000
    assert finalized == "True"


def test_a_workers_long_step_shows_in_the_log_while_it_lasts(sample_run, tinysdk_1) -> None:
    """The real worker, a step that reports nothing for 2.5 s: the CLI's log (``keep_alive``)
    says it is under way, twice or more, at an interval of half a second."""
    lines: list[str] = []
    log = ProgressLog("echo", "steps", every=0.5, emit=lines.append, keep_alive=True)
    exporter = EchoExporter(progress=log)
    config = parse_options(
        exporter,
        {
            "rollouts_jsonl_fpath": str(sample_run.rollouts),
            "requirement": tinysdk_1,
            "behaviour": "slow_step",
            "seconds": 2.5,
        },
    )
    try:
        result = export_run(exporter, sample_run.run, config)
    finally:
        log.close()
    assert result.status is ExportStatus.SUCCEEDED, result.message
    under_way = [line for line in lines if "; step 2 under way for " in line]
    assert len(under_way) >= 2, lines
    assert all(line.startswith("echo: 1 of 2 steps (50%), ") for line in under_way), lines
    assert lines[-1].startswith("echo: 2 of 2 steps (100%), "), lines
    said = len(lines)
    time.sleep(1.2)  # closed: no line comes after the export
    assert len(lines) == said


def test_a_worker_slow_to_report_shows_in_the_log_from_the_delivery_on(
    sample_run, tinysdk_1
) -> None:
    """The real worker, 2.5 s before its first report (an SDK's import, a store opened): the
    log says the export is under way from the delivery's stage line on, not nothing."""
    lines: list[str] = []
    log = ProgressLog("echo", "steps", every=0.5, emit=lines.append, keep_alive=True)
    exporter = EchoExporter(progress=log)
    options = {
        "rollouts_jsonl_fpath": str(sample_run.rollouts),
        "requirement": tinysdk_1,
        "behaviour": "slow_start",
        "seconds": 2.5,
    }
    try:
        result = export_run(exporter, sample_run.run, parse_options(exporter, options))
    finally:
        log.close()
    assert result.status is ExportStatus.SUCCEEDED, result.message
    waiting = [line for line in lines if line.endswith("; no step reported yet")]
    assert len(waiting) >= 2, lines
    assert all(line.startswith("echo: under way for ") for line in waiting), lines


def test_a_failed_build_is_a_failed_result_naming_the_installer_error(
    echo_export, monkeypatch
) -> None:
    monkeypatch.setenv("UV_NO_INDEX", "1")
    result = echo_export(requirement="tinysdk==9.9")
    assert result.status is ExportStatus.FAILED
    assert result.message.startswith(
        "Cannot build the echo environment: Installing tinysdk==9.9 with uv failed"
    )
    assert "UV_EXTRA_INDEX_URL" in result.message


def test_a_dry_run_builds_no_environment(echo_export) -> None:
    from evalexport.isolation import list_environments

    result = echo_export(dry_run=True)
    assert result.details["dry_run"] is True
    assert list_environments() == []


def test_envs_lists_and_removes_environments(echo_export, cli) -> None:
    echo_export()
    listed = cli("envs", "--json")
    import json

    (row,) = json.loads(listed.stdout)
    assert row["exporter"] == "echo"
    assert row["size_bytes"] > 0
    assert row["last_used"] is not None
    assert Path(row["path"]).is_dir()
    assert row["name"] in cli("envs").stdout
    removed = cli("envs", "remove", "echo")
    assert removed.stdout == f"removed {row['path']}\n"
    assert not Path(row["path"]).exists()
    assert cli("envs").stdout.startswith("No SDK environments in ")


def test_envs_remove_needs_a_name_or_all(cli) -> None:
    assert cli("envs", "remove").exit_code == 2
    missing = cli("envs", "remove", "nope")
    assert missing.exit_code == 2
    assert "no environment named 'nope'" in missing.stderr


def test_a_worker_result_with_a_misspelled_key_is_refused_naming_it(echo_export) -> None:
    result = echo_export(behaviour="misspelled")
    assert result.status is ExportStatus.FAILED
    assert "worker returned an invalid result (unknown key(s) 'run_ID'" in result.message


def test_typed_keys_become_the_results_fields_and_its_notices_its_words(echo_export) -> None:
    result = echo_export(behaviour="typed")
    assert result.status is ExportStatus.SKIPPED, result.message
    assert (result.run_id, result.skip_reason) == ("echo-typed", SkipReason.DEDUPED)
    assert result.details["state"] == "deduped"
    assert "run_id" not in result.details
    assert result.message.endswith("Note: a notice for the user.")  # the result says it
    assert result.notices == ["a notice for the user"]


def test_a_body_written_before_the_typed_keys_still_reports_its_run_id(echo_export) -> None:
    """The 0.1 guide's bodies put run_id in details: read from there, with a notice."""
    result = echo_export()
    assert result.status is ExportStatus.SUCCEEDED, result.message
    assert result.run_id == "echo-1"
    assert "run_id" not in result.details


def test_the_deprecated_hooks_warn_naming_the_new_form_and_still_work(
    sample_run, tinysdk_1
) -> None:
    """An exporter of the 0.2.0 and 0.3.0 guides' isolated template, ``receipt_keys`` and
    ``secrets_the_sdk_may_find`` among its forms, still exports."""
    from evalexport.spec.isolated import IsolatedExporter
    from tests.support.echo_exporter import BODIES, EchoConfig

    with pytest.warns(DeprecationWarning, match="is deprecated and still honoured") as warned:

        class LegacyExporter(IsolatedExporter[EchoConfig]):
            name = "echo"
            summary = "Echo, as plugin API 2 wrote an isolated exporter."
            Config = EchoConfig
            needs_metrics_and_config = False
            worker_body = BODIES / "echo.py"
            receipt_keys = frozenset({"upload_token"})

            def worker_payload(self, run, config, scratch, fingerprint):  # type: ignore[no-untyped-def]
                return {
                    "behaviour": config.behaviour,
                    "rollouts": str(run.rollouts),
                    "note_path": config.note_path,
                }

            def secrets_the_sdk_may_find(self, config: EchoConfig) -> list[str]:
                return [config.note_path or ""]

    said = " ".join(str(warning.message) for warning in warned)
    assert "IsolatedExporter is deprecated" in said
    assert "sdk = Sdk(body=..." in said
    assert "worker_payload is deprecated" in said
    assert "WorkerDelivery(payload)" in said
    assert "receipt_keys is deprecated" in said
    assert "receipts={...}" in said
    assert "secrets_the_sdk_may_find is deprecated" in said
    assert "WorkerSpec(..., secrets={...})" in said
    exporter = LegacyExporter()
    found = "sdk-found-credential-0123456789"
    config = parse_options(
        exporter,
        {
            "rollouts_jsonl_fpath": str(sample_run.rollouts),
            "requirement": tinysdk_1,
            "behaviour": "legacy_receipt",
            "note_path": found,
        },
    )
    result = export_run(exporter, sample_run.run, config)
    assert result.status is ExportStatus.SUCCEEDED, result.message
    assert result.receipts == {"upload_token": "upl-echo-1"}
    assert found not in result.model_dump_json()


def test_a_built_environments_worker_starts_before_the_run_is_read(
    echo_export, monkeypatch
) -> None:
    """The SDK loads while the run is read; a run the checks refuse lets the worker go."""
    import contextlib

    from evalexport import isolation
    from evalexport.isolation.reaper import is_running
    from evalexport.run import RunFileError

    assert echo_export().status is ExportStatus.SUCCEEDED  # builds the environment
    started: list[int] = []
    seen: list[int] = []
    start_worker = isolation.started_worker

    @contextlib.contextmanager
    def recorded(*arguments, **keywords):
        with start_worker(*arguments, **keywords) as worker:
            started.append(worker._process.pid)
            yield worker

    def read(self, run, config):
        if config.dry_run:  # a dry run starts nothing
            assert len(started) == len(seen)
            return None
        assert len(started) == len(seen) + 1  # started before the run is read
        seen.append(started[-1])
        assert is_running(seen[-1])  # started, waiting for its payload
        if config.behaviour == "refused":
            raise RunFileError("the run is refused")
        return None

    monkeypatch.setattr(isolation, "started_worker", recorded)
    monkeypatch.setattr(EchoExporter, "read", read)
    result = echo_export()
    assert result.status is ExportStatus.SUCCEEDED, result.message
    assert result.details["payload"]["behaviour"] == "echo"
    refused = echo_export(behaviour="refused")
    assert (refused.status, refused.message) == (ExportStatus.FAILED, "the run is refused")
    assert len(seen) == 2
    assert not any(map(is_running, seen))  # the one never given a payload is gone too
    assert echo_export(dry_run=True).status is ExportStatus.SUCCEEDED


def test_a_token_option_a_crashing_worker_printed_is_in_no_log_record_or_result(
    echo_export, caplog
) -> None:

    token = "canary-option-token-0123456789"
    with caplog.at_level(logging.DEBUG, logger="evalexport"):
        result = echo_export(behaviour="crash_printing_token", echo_token=token)
    assert result.status is ExportStatus.FAILED
    assert "connecting with token ****" in result.message
    assert any("connecting with token" in record.getMessage() for record in caplog.records)
    assert token not in caplog.text
    assert token not in result.model_dump_json()


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"requirements": "six"}, "takes a tuple of requirements, ('mlflow>=2.10',), not 'six'"),
        ({"requirements": ("six", 3)}, "holds a requirement that is no text"),
        ({"requirements": ("six",), "time_limit": "60"}, "takes seconds above 0, not '60'"),
        ({"requirements": ("six",), "time_limit": 0}, "takes seconds above 0, not 0"),
        ({"requirements": ("six",), "secrets": ["TOKEN"]}, "WorkerSpec(secrets=...) takes a"),
        ({"requirements": ("six",), "environment": {"A": 1}}, "WorkerSpec(environment=...)"),
        ({"requirements": ("six",), "local_store": 3}, "takes a path, not 3"),
    ],
)
def test_a_worker_spec_a_plugin_gets_wrong_is_refused_as_it_is_made(fields, said) -> None:
    """A plugin's mistake in its WorkerSpec is told as its target is resolved, naming the
    field (a hostile trial's plugin built an environment from "six" read as s, i, x, and
    failed on a time limit of "60" only after it was built). A secret is never shown."""
    from evalexport.spec import WorkerSpec

    with pytest.raises(TypeError) as refused:
        WorkerSpec(**fields)
    assert said in str(refused.value)
    assert "TOKEN" not in str(refused.value)


def test_a_worker_spec_and_delivery_take_what_their_fields_mean() -> None:
    from evalexport.spec import WorkerDelivery, WorkerSpec

    spec = WorkerSpec(requirements=["six"], local_store="store.db")  # type: ignore[arg-type]
    assert spec.requirements == ("six",)
    assert spec.local_store == Path("store.db")
    assert WorkerDelivery({"a": 1}, addresses={"a"}).addresses == frozenset({"a"})  # type: ignore[arg-type]
    for fields, said in (
        ({"payload": ["a"]}, "takes a mapping (the worker body's payload, a TypedDict), not list"),
        ({"payload": {}, "read_back": "x"}, "takes a function, not 'x'"),
        ({"payload": {}, "addresses": "uri"}, "takes the payload's keys, not 'uri'"),
    ):
        with pytest.raises(TypeError, match=re.escape(said)):
            WorkerDelivery(**fields)


def test_a_target_whose_worker_is_no_worker_spec_fails_naming_the_bug(
    sample_run, tinysdk_1
) -> None:
    from evalexport.spec import Target

    class NotASpec(EchoExporter):
        def resolve(self, config: EchoConfig) -> Target:
            return Target(where=self.name, worker="six")  # type: ignore[arg-type]

    exporter = NotASpec()
    config = parse_options(
        exporter, {"rollouts_jsonl_fpath": str(sample_run.rollouts), "requirement": tinysdk_1}
    )
    result = export_run(exporter, sample_run.run, config)
    assert result.exit_code == 1
    assert "resolve gave Target(worker=) a str; it takes a WorkerSpec(requirements=...)" in (
        result.message
    )
    assert "This is a bug in the exporter." in result.message


def test_a_worker_secrets_error_from_resolve_is_the_exporters_own_words(
    sample_run, tinysdk_1
) -> None:
    from evalexport.spec import Target, WorkerSecretsError

    class NoToken(EchoExporter):
        def resolve(self, config: EchoConfig) -> Target:
            raise WorkerSecretsError("no token: set TINYSDK_TOKEN or run `tinysdk login`")

    exporter = NoToken()
    config = parse_options(
        exporter, {"rollouts_jsonl_fpath": str(sample_run.rollouts), "requirement": tinysdk_1}
    )
    result = export_run(exporter, sample_run.run, config)
    assert result.exit_code == 1
    assert result.message == "no token: set TINYSDK_TOKEN or run `tinysdk login`"
