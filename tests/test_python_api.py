"""The Python API (``evalexport.export``, ``dry_run``, ``inspect``): the documented examples
run as written, and the API agrees with the command line."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import evalexport
from evalexport.results import ExitCode, ExportStatus, SkipReason

ROOT = Path(__file__).resolve().parent.parent


def test_the_documented_examples_run_as_written(tmp_path) -> None:
    shutil.copytree(ROOT / "examples" / "aime24", tmp_path / "run")
    guide = (ROOT / "docs" / "python-api.md").read_text()
    examples = re.findall(r"```python\n(.*?)```", guide, re.S)
    assert len(examples) >= 4
    completed = subprocess.run(
        [sys.executable, "-c", "\n".join(examples)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert (tmp_path / "trajectories" / "manifest.jsonl").is_file()


def test_the_api_and_the_command_line_give_the_same_result(cli, sample_run, tmp_path) -> None:
    options = {"mlflow_tracking_uri": f"sqlite:///{tmp_path / 'mlruns.db'}"}
    ours = evalexport.dry_run("mlflow", sample_run.rollouts, **options)
    theirs = cli(
        "mlflow",
        f"+rollouts_jsonl_fpath={sample_run.rollouts}",
        *(f"+{key}={value}" for key, value in options.items()),
        "--dry-run",
        "--json",
    )
    assert json.loads(theirs.stdout.splitlines()[-1]) == json.loads(ours.model_dump_json())


def test_no_output_and_every_failure_is_a_result(capsys, tmp_path) -> None:
    missing = evalexport.export("mlflow", tmp_path / "nothing_rollouts.jsonl")
    assert (missing.status, missing.exit_code) == (ExportStatus.FAILED, ExitCode.FAILED)
    assert "Rollouts file not found" in missing.message
    (tmp_path / "aime24_rollouts.jsonl").write_text(
        "{}\n"
    )  # the run beside: named, as inspect does
    near = evalexport.export("mlflow", tmp_path / "nothing_rollouts.jsonl")
    assert near.message.endswith(f"; {tmp_path} holds aime24_rollouts.jsonl instead"), near.message
    misplaced = evalexport.export("atif", "r.jsonl", rollouts_jsonl_fpath="other.jsonl")
    assert misplaced.exit_code == ExitCode.USAGE
    assert "second argument" in misplaced.message
    not_one = evalexport.export(object, "r.jsonl")  # type: ignore[arg-type]
    assert "is not an exporter" in not_one.message
    assert capsys.readouterr() == ("", "")


def test_inspect_reports_a_run_as_the_command_does_its_advice_in_each_callers_words(
    cli, sample_run
) -> None:
    """The same report; advice names options as each caller gives them (the sample run holds
    two agents, so strict ATIF advises one agent at a time: ``+agent=NAME`` on the command
    line, ``agent=NAME`` to a Python caller)."""
    report = json.loads(json.dumps(evalexport.inspect(sample_run.rollouts).as_json_data()))
    printed = json.loads(cli("inspect", str(sample_run.rollouts), "--json").stdout)
    (advice,) = printed["atif"]["reasons"]
    assert "one agent's rows at a time with +agent=NAME" in advice
    assert "+" not in str(sample_run.rollouts)
    printed["atif"]["reasons"] = [advice.replace("+", "")]
    assert printed == report


def test_a_result_is_true_when_it_succeeded_or_was_skipped_and_false_otherwise() -> None:
    made = {
        ExportStatus.SUCCEEDED: evalexport.ExportResult.succeeded("x", "/r", "done"),
        ExportStatus.SKIPPED: evalexport.ExportResult.skipped(
            "x", "/r", "again", SkipReason.ALREADY_EXPORTED
        ),
        ExportStatus.FAILED: evalexport.ExportResult.failed("x", "/r", "no"),
    }
    assert {status: bool(result) for status, result in made.items()} == {
        ExportStatus.SUCCEEDED: True,
        ExportStatus.SKIPPED: True,
        ExportStatus.FAILED: False,
    }
    assert not evalexport.ExportResult.failed("x", "/r", "bad option", exit_code=ExitCode.USAGE)


def test_a_number_for_a_text_option_is_its_text_as_on_the_command_line(cli, sample_run) -> None:
    ours = evalexport.dry_run("mlflow", sample_run.rollouts, mlflow_run_name=2024)
    assert ours, ours.message
    theirs = cli(
        "mlflow",
        f"+rollouts_jsonl_fpath={sample_run.rollouts}",
        "+mlflow_run_name=2024",
        "--dry-run",
    )
    assert theirs.exit_code == 0, theirs.output  # the command line takes it as text too


def test_errors_name_options_in_the_callers_terms(cli, sample_run) -> None:
    python = evalexport.export("mlflow", sample_run.rollouts, upload_rollout=False)
    assert "unknown option 'upload_rollout'" in python.message
    assert "'upload_rollouts'" in python.message  # the valid ones, as keyword arguments
    command_line = cli(
        "mlflow", f"+rollouts_jsonl_fpath={sample_run.rollouts}", "+upload_rollout=0"
    )
    assert "unknown option +upload_rollout " in command_line.output


def _copy_of_the_example(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "examples" / "aime24", tmp_path / "run")
    return tmp_path / "run" / "aime24_rollouts.jsonl"


def test_a_progress_callback_that_raises_never_fails_the_export(tmp_path, caplog) -> None:
    calls: list[tuple[int, int]] = []

    def broken(done: int, total: int) -> None:
        calls.append((done, total))
        raise RuntimeError("a broken progress bar")

    result = evalexport.export(
        "atif",
        _copy_of_the_example(tmp_path),
        output_dirpath=tmp_path / "out",
        agent_version="1",
        progress=broken,
    )
    assert (result.status, result.exit_code) == (ExportStatus.SUCCEEDED, ExitCode.OK)
    assert len(calls) == 1  # not called again once it raised
    assert len(list((tmp_path / "out").glob("*.json"))) == 32
    assert "the progress callback raised RuntimeError: a broken progress bar" in caplog.text


def test_ctrl_c_during_an_export_is_a_result_with_exit_130_that_wrote_nothing(tmp_path) -> None:
    # Ctrl-C raises KeyboardInterrupt wherever the main thread is; the progress callback runs
    # there in the middle of the ATIF conversion, so raising it there is a Ctrl-C mid-export.
    def ctrl_c(done: int, total: int) -> None:
        raise KeyboardInterrupt

    rollouts = _copy_of_the_example(tmp_path)
    before = sorted(path.name for path in rollouts.parent.iterdir())
    result = evalexport.export(
        "atif", rollouts, output_dirpath=tmp_path / "out", agent_version="1", progress=ctrl_c
    )
    assert (result.status, result.exit_code) == (ExportStatus.FAILED, 130)
    assert result.interrupted_by == "SIGINT"
    assert not result
    assert sorted(path.name for path in tmp_path.iterdir()) == ["run"]  # no output, no staging
    assert sorted(path.name for path in rollouts.parent.iterdir()) == before


def test_an_exporters_advice_names_its_options_as_keyword_arguments(cli, tmp_path) -> None:
    rollouts = _copy_of_the_example(tmp_path)
    options = {"output_dirpath": tmp_path / "out", "agent_version": "1"}
    result = evalexport.export("atif", rollouts, allow_gaps=["no_such_code"], **options)
    assert result.exit_code == ExitCode.USAGE
    assert result.message.startswith("allow_gaps names no_such_code: "), result.message
    assert "+allow_gaps" not in result.message
    # The command line keeps its own spelling.
    typed = cli(
        "atif",
        f"+rollouts_jsonl_fpath={rollouts}",
        *(f"+{key}={value}" for key, value in options.items()),
        "+allow_gaps=[no_such_code]",
    )
    assert "+allow_gaps names no_such_code: " in typed.stderr + typed.stdout


def test_advice_to_a_python_caller_names_the_apis_calls_and_they_work(cli, tmp_path) -> None:
    rollouts = _copy_of_the_example(tmp_path)
    options = {"output_dirpath": tmp_path / "out", "agent_version": "1"}
    result = evalexport.export("atif", rollouts, allow_gaps=["no_such_code"], **options)
    call = f"evalexport.inspect({str(rollouts)!r})"
    assert f"`{call}` says which the run records" in result.message
    assert "`evalexport inspect" not in result.message
    assert eval(call, {"evalexport": evalexport}).readable  # the advice leads to a call that works
    saved = rollouts.with_name(rollouts.stem + "_resolved_config.yaml")
    saved.unlink()
    refused = evalexport.dry_run("mlflow", rollouts)
    call = f"evalexport.save_run_config(config, {str(rollouts)!r})"
    assert f"or {call} with the merged config as a mapping" in refused.message
    typed = cli("mlflow", f"+rollouts_jsonl_fpath={rollouts}", "--dry-run")  # keeps its commands
    assert f"launched with: evalexport save-config {rollouts} CONFIG.yaml" in typed.stdout
    assert "save_run_config" not in typed.output
    eval(call, {"evalexport": evalexport, "config": {"policy_model_name": "m"}})
    assert evalexport.dry_run("mlflow", rollouts).status == ExportStatus.SUCCEEDED


def test_inspect_advises_a_python_caller_in_calls_and_the_command_line_in_commands(
    cli, tmp_path
) -> None:
    rollouts = _copy_of_the_example(tmp_path)
    rollouts.with_name(rollouts.stem + "_resolved_config.yaml").unlink()
    call = f"evalexport.save_run_config(config, {str(rollouts)!r})"
    report = evalexport.inspect(rollouts)
    assert any(call in problem for problem in report.problems), report.problems
    typed = cli("inspect", str(rollouts))
    assert f"launched with: evalexport save-config {rollouts} CONFIG.yaml" in typed.output
    assert "save_run_config" not in typed.output
    # Who asked is said for the call alone: the command line's advice after it is a command.
    from evalexport.run import RunArtifacts

    assert (
        "evalexport.save_run_config"
        not in RunArtifacts.of_path(rollouts).missing_saved_config_message()
    )


def test_only_the_exporters_own_options_lose_their_plus() -> None:
    from evalexport.spec.options import in_keyword_terms

    message = "use +agent=NAME with +agent_version, not +agents; +key=value as ever; '+relax=[x]'"
    assert in_keyword_terms(message, ["agent", "agent_version", "relax"]) == (
        "use agent=NAME with agent_version, not +agents; +key=value as ever; 'relax=[x]'"
    )
