"""The evalrdl exporter (SPEC §3.5): the real worker, in a real environment, against the SDK.

One test per row of the outcome table and per prerequisite; each checks status, exit code and
message, and that the planted token appears nowhere.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalexport.isolation import list_environments
from evalexport.results import ExportStatus
from evalexport.run import RunArtifacts
from evalexport.testing import SampleRun

UPLOAD = "evalrdl.Client().uploads.upload"


def _clean(evalrdl_sdk, result) -> None:
    assert evalrdl_sdk.leaks(result.model_dump_json()) == []


def test_a_committed_upload_succeeds_with_run_id_and_upload_token(
    export_evalrdl, evalrdl_sdk, sample_run
) -> None:
    result = export_evalrdl(
        sample_run, label="nightly", tags=["math", "aime"], meta={"source": "ci"}
    )
    assert result.status is ExportStatus.SUCCEEDED, result.message
    assert result.exit_code == 0
    assert result.message == f"uploaded as EvalRDL run {result.run_id}"
    assert result.receipts["upload_token"].startswith("upl-")
    assert result.details["state"] == "committed"
    if evalrdl_sdk.is_fake:
        (upload,) = evalrdl_sdk.calls(UPLOAD)
        assert upload["args"] == [str(sample_run.run.run_dir)]
        assert upload["kwargs"] == {
            "label": "nightly",
            "tags": ["math", "aime"],
            "meta": {"source": "ci"},
            "parallel": 4,
            "wait": True,
            "timeout": 600,
        }
        assert {read["read"] for read in evalrdl_sdk.reads()} >= {"state", "run_id", "upload_token"}
    _clean(evalrdl_sdk, result)


def test_the_upload_is_one_step_a_log_shows_under_way_while_it_waits(
    evalrdl_sdk, sample_run, caplog
) -> None:
    """The SDK's upload (and its wait for the verdict, minutes on a busy service) is one call:
    the worker says it begins and reports it as a step, which the CLI's log then shows under
    way each interval (tests/test_progress.py) rather than nothing."""
    import logging

    from evalexport.backends.evalrdl.exporter import EvalRDLExporter
    from evalexport.pipeline import export_run
    from evalexport.spec.options import parse_options

    evalrdl_sdk.distinct(sample_run)
    reports: list[tuple[int, int]] = []
    exporter = EvalRDLExporter(progress=lambda done, total: reports.append((done, total)))
    config = parse_options(exporter, {"rollouts_jsonl_fpath": str(sample_run.rollouts)})
    with caplog.at_level(logging.INFO, logger="evalexport"):
        result = export_run(exporter, sample_run.run, config)
    assert result.status is ExportStatus.SUCCEEDED, result.message
    assert reports == [(0, 1), (1, 1)]
    (said,) = [text for text in caplog.messages if "uploading" in text]
    assert said.startswith(f"evalrdl: uploading {sample_run.run.run_dir.name} to ")
    assert said.endswith(" and waiting for its verdict (at most 600 s)")


def test_the_run_directory_is_uploaded_as_it_is(
    export_evalrdl, evalrdl_sdk, make_sample_run
) -> None:
    sample = make_sample_run(sidecars=True)
    result = export_evalrdl(sample)
    assert result.status is ExportStatus.SUCCEEDED, result.message
    if not evalrdl_sdk.is_fake:
        return  # what was stored is the service's to show; the result says it was committed
    (plan_call,) = evalrdl_sdk.calls("evalrdl.sdk.api.upload_plan")
    assert plan_call["args"] == [str(sample.run.run_dir)]
    (stored,) = evalrdl_sdk.stored_runs()
    assert stored["files"] == sorted(
        p.relative_to(sample.run.run_dir).as_posix()
        for p in sample.run.run_dir.rglob("*")
        if p.is_file()
    )
    assert "aime24_rollouts/preprocessed_datasets/aime24.jsonl" in stored["files"]


def test_the_dry_run_and_the_result_name_the_files_that_go_with_secret_shaped_text(
    export_evalrdl, evalrdl_sdk, make_sample_run
) -> None:
    """The directory is uploaded as it is (EvalRDL's contract): what would leave with a
    secret in it is named, file by file, by the dry run and the export alike (#56)."""
    sample = make_sample_run()
    (sample.run.run_dir / "notes.txt").write_text(
        "launched with HF_TOKEN=hf_abcdefghijklmnop1234 by hand\nall went well\n"
    )
    rows = sample.rollouts.read_text().splitlines()
    row = json.loads(rows[1])
    row["responses_create_params"]["extra_headers"] = {"Authorization": "Bearer abc123def456"}
    rows[1] = json.dumps(row)
    sample.rollouts.write_text("\n".join(rows) + "\n")
    said = (
        "EvalRDL uploads the run directory as it is: these files hold secret-shaped text and "
        f"are uploaded as they are (the directory is sent unmasked): {sample.rollouts.name} "
        "(1 line), notes.txt (1 line)"
    )
    dry = export_evalrdl(sample, dry_run=True)
    assert said in dry.message, dry.message
    done = export_evalrdl(sample)
    assert done.status is ExportStatus.SUCCEEDED, done.message
    assert said in done.message
    assert "abcdefghijklmnop1234" not in done.message + dry.message


def test_uploading_the_same_content_again_is_skipped_as_deduped(
    export_evalrdl, evalrdl_sdk, sample_run
) -> None:
    first = export_evalrdl(sample_run)
    second = export_evalrdl(sample_run)
    assert second.status is ExportStatus.SKIPPED
    assert second.exit_code == 0
    assert second.skip_reason == "deduped"
    assert second.run_id == first.run_id
    assert "nothing new stored" in second.message
    if evalrdl_sdk.is_fake:
        assert len(evalrdl_sdk.stored_runs()) == 1


def test_accepted_without_a_verdict_before_the_timeout_fails_with_exit_3(
    export_evalrdl, evalrdl_sdk, sample_run
) -> None:
    evalrdl_sdk.behave("no_verdict")
    result = export_evalrdl(sample_run, timeout=30)
    assert result.status is ExportStatus.FAILED
    assert result.exit_code == 3
    token = result.receipts["upload_token"]
    assert result.message == (
        f"stored by EvalRDL without a verdict before the timeout of 30 s (upload token {token}); "
        "check its state on the service"
    )
    _clean(evalrdl_sdk, result)


def test_not_waiting_succeeds_with_the_upload_token(
    export_evalrdl, evalrdl_sdk, sample_run
) -> None:
    result = export_evalrdl(sample_run, wait=False)
    assert result.status is ExportStatus.SUCCEEDED
    assert result.details["state"] == "accepted"
    assert result.receipts["upload_token"] in result.message
    if evalrdl_sdk.is_fake:
        assert evalrdl_sdk.calls(UPLOAD)[0]["kwargs"]["wait"] is False


def test_a_refused_upload_fails_with_exit_4_naming_stage_and_reason(
    export_evalrdl, evalrdl_sdk, sample_run
) -> None:
    evalrdl_sdk.behave(
        "refuse", refuse_stage="schema", refuse_reason="rollouts file has no reward column"
    )
    result = export_evalrdl(sample_run)
    assert result.exit_code == 4
    assert (
        result.message
        == "EvalRDL refused the upload at stage 'schema': rollouts file has no reward column"
    )
    _clean(evalrdl_sdk, result)


def test_a_client_too_old_names_the_environment_and_the_pin(
    export_evalrdl, evalrdl_sdk, sample_run
) -> None:
    evalrdl_sdk.behave("too_old")
    result = export_evalrdl(sample_run)
    assert result.exit_code == 1
    (environment,) = list_environments()
    assert f"Delete the environment {environment.path}" in result.message
    assert "+requirement=evalrdl==VERSION" in result.message
    assert "the service needs >= 0.0.250" in result.message


def test_with_no_token_and_no_glab_the_dry_run_and_the_export_refuse_before_building(
    export_evalrdl, sample_run, monkeypatch
) -> None:
    from evalexport.isolation import list_environments

    monkeypatch.delenv("EVALRDL_TOKEN")
    monkeypatch.setenv("PATH", os.defpath)  # no glab
    dry_run, export = export_evalrdl(sample_run, dry_run=True), export_evalrdl(sample_run)
    for result in (dry_run, export):
        assert result.exit_code == 1
        assert "No EvalRDL token: EVALRDL_TOKEN, GITLAB_TOKEN and GITLAB_PRIVATE_TOKEN" in (
            result.message
        )
        assert "glab auth login" in result.message
    assert list_environments() == []  # refused before anything was built


def test_no_token_fails_naming_the_three_variables(
    export_evalrdl, evalrdl_sdk, sample_run, tmp_path, monkeypatch
) -> None:
    monkeypatch.delenv("EVALRDL_TOKEN")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    glab = bin_dir / "glab"
    glab.write_text("#!/bin/sh\necho 'not logged in' >&2\nexit 1\n")
    glab.chmod(glab.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    result = export_evalrdl(sample_run)
    assert result.exit_code == 1
    for variable in ("EVALRDL_TOKEN", "GITLAB_TOKEN", "GITLAB_PRIVATE_TOKEN"):
        assert variable in result.message
    if evalrdl_sdk.is_fake:
        assert evalrdl_sdk.stored_runs() == []


def test_what_a_failing_glab_prints_never_reaches_the_result(
    export_evalrdl, sample_run, tmp_path, monkeypatch
) -> None:
    rejected = "x7Kq29rejected-token-Zp"  # a token shape no masking rule knows
    _glab(tmp_path, monkeypatch, f"echo 'token {rejected} rejected' >&2\nexit 1")
    result = export_evalrdl(sample_run)
    assert result.exit_code == 1
    assert "glab auth status" in result.message
    assert rejected not in result.model_dump_json()


def test_a_token_from_glab_is_scrubbed_when_the_service_echoes_it(
    export_evalrdl, evalrdl_sdk, sample_run, tmp_path, monkeypatch
) -> None:
    token = "FromGlabCli0123456789abc"  # no well-known prefix: only scrubbing can hide it
    monkeypatch.delenv("EVALRDL_TOKEN")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    glab = bin_dir / "glab"
    glab.write_text(f"#!/bin/sh\necho {token}\n")
    glab.chmod(glab.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    evalrdl_sdk.behave("refuse", refuse_stage="auth", refuse_reason=f"token {token} is revoked")
    result = export_evalrdl(sample_run)
    assert result.exit_code == 4
    assert token not in result.model_dump_json()
    assert "token **** is revoked" in result.message


def test_another_sdk_error_fails_with_exit_1(export_evalrdl, evalrdl_sdk, sample_run) -> None:
    evalrdl_sdk.behave("raise")
    result = export_evalrdl(sample_run)
    assert result.exit_code == 1
    assert (
        result.message
        == "EvalRDL upload failed: EvalRDLError: service error: HTTP 502 from the intake gateway"
    )


def test_more_than_one_upload_fails_with_exit_1(export_evalrdl, evalrdl_sdk, sample_run) -> None:
    evalrdl_sdk.behave("extra_upload")
    result = export_evalrdl(sample_run)
    assert result.exit_code == 1
    assert "reported 2 uploads" in result.message
    assert "expected exactly one" in result.message


def test_a_stored_run_that_needs_binding_is_said_by_the_result(
    export_evalrdl, evalrdl_sdk, sample_run
) -> None:
    evalrdl_sdk.behave("needs_binding")
    result = export_evalrdl(sample_run)
    assert result.status is ExportStatus.SUCCEEDED
    (notice,) = result.notices
    assert notice.startswith(f"EvalRDL stored run {result.run_id} but it needs binding")
    assert f"Note: {notice.rstrip('.')}." in result.message


def test_a_split_upload_plan_is_refused_before_upload_is_called(
    export_evalrdl, evalrdl_sdk, make_sample_run
) -> None:
    evalrdl_sdk.behave("split_plan")
    sample = make_sample_run(sidecars=True)
    result = export_evalrdl(sample)
    assert result.exit_code == 1
    assert (
        f"would upload {sample.run.sidecar_dir} instead of the run directory {sample.run.run_dir}"
        in result.message
    )
    assert [call["name"] for call in evalrdl_sdk.calls()] == ["evalrdl.sdk.api.upload_plan"]
    assert evalrdl_sdk.stored_runs() == []


@pytest.mark.parametrize(
    ("knobs", "message"),
    [
        ({"aggregate": False}, "Aggregate metrics not found: "),
        ({"saved_config": False}, "Saved run config not found: "),
        ({"other_run_rollouts": "gpqa_rollouts.jsonl"}, "Keep each run in a directory of its own."),
    ],
)
def test_a_prerequisite_failure_builds_no_environment_and_calls_nothing(
    export_evalrdl, evalrdl_sdk, make_sample_run, knobs, message
) -> None:
    sample = make_sample_run(**knobs)
    result = export_evalrdl(sample)
    assert result.exit_code == 1
    assert message in result.message
    assert list_environments() == []
    if evalrdl_sdk.is_fake:
        assert evalrdl_sdk.records() == []


def test_a_symlinked_rollouts_file_uploads_the_links_directory(
    export_evalrdl, evalrdl_sdk, make_sample_run, tmp_path
) -> None:
    target = make_sample_run("target", other_run_rollouts="gpqa_rollouts.jsonl")
    link_dir = tmp_path / "linked"
    link_dir.mkdir()
    (link_dir / target.rollouts.name).symlink_to(target.rollouts)
    for path in (target.run.aggregate_metrics, target.run.saved_config):
        shutil.copy2(path, link_dir / path.name)
    linked = SampleRun(
        RunArtifacts.from_rollouts_path(link_dir / target.rollouts.name),
        target.canaries,
        target.rollout_count,
    )
    result = export_evalrdl(linked)
    assert result.status is ExportStatus.SUCCEEDED, result.message
    assert result.run_dir == str(link_dir)
    if not evalrdl_sdk.is_fake:
        return
    assert evalrdl_sdk.calls(UPLOAD)[0]["args"] == [str(link_dir)]
    (stored,) = evalrdl_sdk.stored_runs()
    assert stored["files"] == sorted(p.name for p in link_dir.iterdir())


def test_a_directory_holding_another_runs_rollouts_builds_no_environment(
    export_evalrdl, evalrdl_sdk, make_sample_run
) -> None:
    sample = make_sample_run(other_run_rollouts="rollouts.jsonl")
    result = export_evalrdl(sample)
    assert result.exit_code == 1
    assert result.message.startswith(
        f"Run directory {sample.run.run_dir} also holds another run's rollouts (rollouts.jsonl)"
    )
    assert list_environments() == []


def test_dry_run_lists_every_file_of_the_directory_and_builds_nothing(
    export_evalrdl, evalrdl_sdk, make_sample_run
) -> None:
    sample = make_sample_run(sidecars=True)
    result = export_evalrdl(sample, dry_run=True)
    files = [item.path for item in result.plan.files]
    assert str(sample.run.sidecar_dir / "preprocessed_datasets" / "aime24.jsonl") in files
    assert str(sample.run.materialized_inputs) in files
    assert list_environments() == []


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("+url=nowhere", "expected prod, stg or an http(s) URL"),
        ("+parallel=0", "greater than or equal to 1"),
        ("+wait=maybe", "valid boolean"),
    ],
)
def test_bad_options_exit_2_naming_them(cli, sample_run, option: str, message: str) -> None:
    run = cli("evalrdl", f"+rollouts_jsonl_fpath={sample_run.rollouts}", option)
    assert run.exit_code == 2
    assert message in run.stderr
    assert option.split("=")[0] in run.stderr


def test_the_cli_reaches_the_sdk_with_every_setting_and_a_rerun_is_deduped(
    cli_process, evalrdl_sdk, sample_run
) -> None:
    args = (
        "evalrdl",
        f"+rollouts_jsonl_fpath={sample_run.rollouts}",
        "+label=smoke",
        "+tags=[a,b]",
        "+meta.source=manual",
        "+url=stg",
    )
    evalrdl_sdk.distinct(sample_run)
    first = cli_process(*args)
    evalrdl_sdk.fail_if_unreachable(first.output)
    assert first.exit_code == 0, first.output
    assert first.stdout.startswith("succeeded: uploaded as EvalRDL run ")
    if evalrdl_sdk.is_fake:
        (client,) = evalrdl_sdk.calls("evalrdl.Client")
        assert (client["args"], client["kwargs"]) == ([], {"url": "stg"})
        assert client["site"].endswith(".py:" + client["site"].rsplit(":", 1)[1])
        (upload,) = evalrdl_sdk.calls(UPLOAD)
        assert upload["kwargs"] == {
            "label": "smoke",
            "tags": ["a", "b"],
            "meta": {"source": "manual"},
            "parallel": 4,
            "wait": True,
            "timeout": 600,
        }
    second = cli_process(*args, "--json")
    assert second.exit_code == 0
    result = json.loads(second.stdout)
    assert result["status"] == "skipped"
    assert result["skip_reason"] == "deduped"
    assert result["message"].startswith("EvalRDL already holds this run's content")
    assert evalrdl_sdk.leaks(first.output, second.output) == []


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_a_password_in_the_url_never_shows_in_the_dry_run_target(
    cli, sample_run, json_flag: list[str], monkeypatch
) -> None:
    monkeypatch.setenv("EVALRDL_TOKEN", f"token-{sample_run.canaries.suffix}")
    password = f"pw{sample_run.canaries.suffix}"
    run = cli(
        "evalrdl",
        f"+rollouts_jsonl_fpath={sample_run.rollouts}",
        f"+url=https://svc:{password}@evalrdl.example.com",
        "--dry-run",
        *json_flag,
    )
    assert run.exit_code == 0, run.output
    assert password not in run.output
    shown = "EvalRDL https://svc:****@evalrdl.example.com"
    if json_flag:
        assert json.loads(run.stdout)["plan"]["target"] == shown
    else:
        assert f"target: {shown}" in run.stdout


def _dangling_symlink(sample: SampleRun) -> str:
    (sample.run.run_dir / "notes.txt").symlink_to(sample.run.run_dir / "gone.txt")
    return f"{sample.run.run_dir / 'notes.txt'} cannot be opened (No such file or directory)"


def _fifo(sample: SampleRun) -> str:
    os.mkfifo(sample.run.run_dir / "progress.pipe")
    return f"{sample.run.run_dir / 'progress.pipe'} is not a regular file"


@pytest.mark.parametrize("plant", [_dangling_symlink, _fifo])
def test_a_file_that_cannot_be_uploaded_fails_the_dry_run_and_the_export_alike(
    export_evalrdl, evalrdl_sdk, make_sample_run, plant, monkeypatch
) -> None:
    monkeypatch.setenv("EVALEXPORT_WORKER_TIME_LIMIT", "60")  # a FIFO once hung the upload
    sample = make_sample_run()
    problem = plant(sample)
    dry_run, export = export_evalrdl(sample, dry_run=True), export_evalrdl(sample)
    for result in (dry_run, export):
        assert result.exit_code == 1
        assert result.message.startswith(f"Cannot upload {sample.run.run_dir} as it is: {problem}")
    assert dry_run.message == export.message
    assert list_environments() == []  # refused before any environment is built


@contextlib.contextmanager
def _without_root_privileges() -> Iterator[None]:
    """File modes bind only a user without root's privileges: as root, act as ``nobody``
    (effective ids only, so the test can come back)."""
    if os.geteuid() != 0:
        yield
        return
    os.setegid(65534)
    os.seteuid(65534)
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)


def test_an_unreadable_rollouts_file_fails_the_dry_run_and_the_export_alike(
    export_evalrdl, evalrdl_sdk
) -> None:
    from evalexport.testing.factory import make_run

    with tempfile.TemporaryDirectory(prefix="evalexport-unreadable-") as scratch:
        Path(scratch).chmod(0o755)  # reachable by nobody
        sample = make_run(Path(scratch) / "run")
        sample.run.rollouts.chmod(0)
        evalrdl_sdk.distinct(sample)  # a real service's note file, written while we may
        with _without_root_privileges():
            dry_run, export = export_evalrdl(sample, dry_run=True), export_evalrdl(sample)
    problem = f"{sample.rollouts} cannot be opened (Permission denied)"
    for result in (dry_run, export):
        assert result.exit_code == 1
        assert result.message.startswith(f"Cannot upload {sample.run.run_dir} as it is: {problem}")
    assert list_environments() == []


def _glab(tmp_path, monkeypatch, script: str) -> Path:
    """A ``glab`` on PATH that logs each call to ``glab.calls`` and then runs ``script``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "glab.calls"
    glab = bin_dir / "glab"
    glab.write_text(f'#!/bin/sh\necho "$$ $*" >> {calls}\n{script}\n')
    glab.chmod(glab.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("EVALRDL_TOKEN")
    return calls


def test_glab_is_asked_for_the_token_once_and_the_worker_gets_it(
    export_evalrdl, evalrdl_sdk, sample_run, tmp_path, monkeypatch
) -> None:
    token = "FromGlabOnce0123456789ab"
    calls = _glab(tmp_path, monkeypatch, f"echo {token}")
    result = export_evalrdl(sample_run)
    assert result.status is ExportStatus.SUCCEEDED, result.message
    assert len(calls.read_text().splitlines()) == 1  # not again by the SDK
    assert token not in result.model_dump_json()


def test_glab_that_does_not_answer_fails_within_the_time_limit_and_leaves_nothing(
    export_evalrdl, evalrdl_sdk, sample_run, tmp_path, monkeypatch
) -> None:
    from evalexport.isolation.reaper import is_running

    monkeypatch.setenv("EVALEXPORT_WORKER_TIME_LIMIT", "2")
    started = tmp_path / "started"
    calls = _glab(tmp_path, monkeypatch, f"sleep 300 & echo $! > {started}\nwait")
    result = export_evalrdl(sample_run)
    assert result.exit_code == 1
    assert result.message.startswith(
        "No EvalRDL token: `glab auth token` did not answer within 2 s"
    )
    glab_pid = int(calls.read_text().split()[0])
    assert not is_running(glab_pid)
    import time

    deadline = time.monotonic() + 10  # killed with its group, reaped a moment later under load
    while is_running(int(started.read_text())) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not is_running(int(started.read_text()))  # what glab started ended with it
    if evalrdl_sdk.is_fake:
        assert evalrdl_sdk.stored_runs() == []


GUARANTEE_FIXTURES = ("evalrdl_sdk",)
"""What serves the EvalRDL SDK (its fake, or the real one with --with_evalrdl_sdk) to the
guarantee suite (tests/exporters/test_guarantees.py)."""


@pytest.mark.downloads
def test_the_quick_start_with_the_fake_runs_as_written(evalexport_isolation, tmp_path) -> None:
    """docs/exporters/evalrdl.md, "Try it without the service": its commands, in a directory
    holding the checkout's examples and fake, as a user runs them from the checkout."""
    import re
    import shutil
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    guide = (root / "docs" / "exporters" / "evalrdl.md").read_text()
    (block,) = re.findall(
        r"<!-- tested: tests/exporters/test_evalrdl.py -->\n```bash\n(.*?)```", guide, re.S
    )
    checkout = tmp_path / "checkout"
    shutil.copytree(root / "examples", checkout / "examples")
    shutil.copytree(root / "fakes", checkout / "fakes")
    before = sorted(p.relative_to(checkout) for p in (checkout / "fakes").rglob("*"))
    bin_dir = Path(sys.executable).parent
    script = f'export PATH="{bin_dir}:$PATH"\nevalexport() {{ "{sys.executable}" -m evalexport "$@"; }}\n'
    completed = subprocess.run(
        ["bash", "-e", "-c", script + block],
        cwd=checkout,
        env={k: v for k, v in os.environ.items() if k != "EVALRDL_FAKE_STORE"},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    said = [
        line
        for line in completed.stdout.splitlines()
        if line.startswith(("succeeded", "skipped", "failed"))
    ]
    dry, first, second = said
    assert dry.startswith("succeeded: dry run: ")
    assert first.startswith("succeeded: "), first
    assert second.startswith("skipped (deduped): "), second
    assert (checkout / "evalrdl-store").is_dir()
    assert sorted(p.relative_to(checkout) for p in (checkout / "fakes").rglob("*")) == before


def test_the_worker_time_limit_is_read_once_and_handed_down(
    export_evalrdl, sample_run, monkeypatch
) -> None:
    """``$EVALEXPORT_WORKER_TIME_LIMIT`` is read once per export, as the target is resolved:
    resolve gets it (glab's wait), the worker and every lock wait keep to the target's."""
    import sys

    import evalexport.settings
    from evalexport.isolation import delivery

    monkeypatch.setenv("EVALEXPORT_WORKER_TIME_LIMIT", "321")
    reads: list[float | None] = []
    read = evalexport.settings.worker_time_limit

    def counted() -> float | None:
        reads.append(read())
        return reads[-1]

    for module in list(sys.modules.values()):  # wherever it was imported by name
        if getattr(module, "worker_time_limit", None) is read:
            monkeypatch.setattr(module, "worker_time_limit", counted)
    limits: list[float] = []
    opened = delivery.OpenedWorker.__init__

    def recorded(self, *arguments, **keywords) -> None:  # type: ignore[no-untyped-def]
        opened(self, *arguments, **keywords)
        limits.append(self.time_limit)

    monkeypatch.setattr(delivery.OpenedWorker, "__init__", recorded)
    result = export_evalrdl(sample_run)
    assert result.exit_code == 0, result.message
    assert reads == [321.0]
    assert limits == [321.0]
