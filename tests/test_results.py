"""ExportResult and exit codes (SPEC §3.1)."""

from __future__ import annotations

import json

import pytest

from evalexport.results import ExitCode, ExportResult, ExportStatus


def test_exit_codes_are_those_of_the_spec_and_128_plus_each_stop_signal() -> None:
    import signal

    stops = [128 + signal.SIGHUP, 128 + signal.SIGINT, 128 + signal.SIGTERM]
    assert [int(code) for code in ExitCode] == [0, 1, 2, 3, 4, 5, *stops]


def test_a_pending_result_exits_5_and_only_a_pending_one_does() -> None:
    pending = ExportResult.pending("atif", "/run", "array task 0 of Slurm job 7 is PENDING")
    assert (pending.exit_code, pending.summary_line()) == (5, f"pending: {pending.message}")
    with pytest.raises(ValueError, match="a failed result cannot exit 5"):
        ExportResult.failed("x", "/run", "boom", exit_code=ExitCode.PENDING)


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


def test_what_callers_read_back_has_typed_fields() -> None:
    from evalexport.results import DryRunPlan, SkipReason

    skipped = ExportResult.skipped(
        "mlflow", "/run", "was exported", SkipReason.ALREADY_EXPORTED, run_id="abc"
    )
    data = json.loads(skipped.model_dump_json())
    assert (data["run_id"], data["skip_reason"], data["plan"]) == ("abc", "already exported", None)
    assert skipped.summary_line() == "skipped (already exported): was exported"
    plan = DryRunPlan(exporter="mlflow", target="sqlite:///x.db")
    dry = ExportResult.succeeded("mlflow", "/run", "dry run", plan=plan)
    assert ExportResult.model_validate_json(dry.model_dump_json()).plan == plan


def test_a_skip_reason_belongs_to_skipped_results_only() -> None:
    with pytest.raises(ValueError, match="only a skipped one, carries a skip_reason"):
        ExportResult(
            exporter="x",
            status="succeeded",
            exit_code=0,
            message="m",
            run_dir="/r",
            skip_reason="deduped",
        )
    with pytest.raises(ValueError, match="only a skipped one, carries a skip_reason"):
        ExportResult(exporter="x", status="skipped", exit_code=0, message="m", run_dir="/r")


def test_a_receipt_is_shown_while_the_same_name_in_details_is_masked() -> None:
    result = ExportResult(
        exporter="evalrdl",
        status="succeeded",
        exit_code=0,
        message="uploaded",
        run_dir="/r",
        receipts={"upload_token": "upl-0123456789abcdef"},
        details={"upload_token": "upl-0123456789abcdef", "api_token": "secret-value-123456"},
    )
    assert result.receipts == {"upload_token": "upl-0123456789abcdef"}
    assert result.details == {"upload_token": "****", "api_token": "****"}


def test_a_results_json_keeps_the_details_keys_0_4_had() -> None:
    """0.4.0's ``--json`` carried ``details.notices`` and ``details.environment``; they moved
    to typed fields and were dropped from the JSON, silently breaking a script reading them
    (#67). The JSON carries both, the fields and the deprecated keys."""
    import json

    from evalexport.results import ExportResult

    result = ExportResult.succeeded("mlflow", "/runs/a", "exported").noted(["a table was cut"])
    result = result.model_copy(update={"environment": "/cache/envs/mlflow-py3.11-0123"})
    data = json.loads(result.model_dump_json())
    assert data["notices"] == data["details"]["notices"] == ["a table was cut"]
    assert data["environment"] == data["details"]["environment"] == "/cache/envs/mlflow-py3.11-0123"
    assert ExportResult.model_validate(data).notices == ["a table was cut"]  # it reads back
