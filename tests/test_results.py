"""ExportResult and exit codes (SPEC §3.1)."""

from __future__ import annotations

import pytest

from evalexport.results import ExitCode, ExportResult, ExportStatus


def test_exit_codes_are_those_of_the_spec_and_128_plus_each_stop_signal() -> None:
    import signal

    stops = [128 + signal.SIGHUP, 128 + signal.SIGINT, 128 + signal.SIGTERM]
    assert [int(code) for code in ExitCode] == [0, 1, 2, 3, 4, *stops]


def test_a_failed_result_cannot_exit_zero() -> None:
    with pytest.raises(ValueError, match="a failed result cannot exit 0"):
        ExportResult.failed("x", "/run", "boom", exit_code=ExitCode.OK)


def test_a_succeeded_result_cannot_exit_non_zero() -> None:
    with pytest.raises(ValueError, match="a succeeded result cannot exit 3"):
        ExportResult(exporter="x", status="succeeded", exit_code=3, message="", run_dir="/run")


def test_secrets_in_messages_and_details_are_scrubbed(monkeypatch) -> None:
    monkeypatch.setenv("EVALRDL_TOKEN", "canary-token-0123456789")
    result = ExportResult.failed(
        "evalrdl",
        "/run",
        "upload to https://u:pw@host/ failed with canary-token-0123456789",
        exit_code=ExitCode.REFUSED,
        headers={"Authorization": "Bearer abc"},
        log=["token canary-token-0123456789 rejected"],
    )
    dumped = result.model_dump_json()
    assert "canary-token-0123456789" not in dumped
    assert "pw@" not in dumped
    assert result.details == {"headers": {"Authorization": "****"}, "log": ["token **** rejected"]}
    assert result.status is ExportStatus.FAILED
    assert result.exit_code == 4


def test_the_result_round_trips_through_json() -> None:
    result = ExportResult.succeeded("mlflow", "/run", "exported", run_id="abc")
    assert ExportResult.model_validate_json(result.model_dump_json()) == result
    assert result.summary_line() == "succeeded: exported"
