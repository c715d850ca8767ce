"""The evalexport command (SPEC §3.2): usage errors exit 2 naming the culprit."""

from __future__ import annotations

import json
import re

import pytest

pytestmark = pytest.mark.usefixtures("plugin_site")


def test_help_lists_commands_and_exporters_and_exits_0(cli) -> None:
    run = cli("--help")
    assert run.exit_code == 0
    assert "inspect" in run.stdout
    assert "recording" in run.stdout
    (contract,) = [line for line in run.stdout.splitlines() if line.strip().startswith("contract ")]
    assert "manifest|check|verify|matrix|scaffold" in contract  # every contract command


def test_no_arguments_is_a_usage_error(cli) -> None:
    assert cli().exit_code == 2


def test_list_shows_each_exporter_with_its_summary(cli) -> None:
    run = cli("list")
    assert run.exit_code == 0
    lines = {line.split()[0]: " ".join(line.split()[1:]) for line in run.stdout.splitlines()}
    assert (
        lines["recording"]
        == "Record the run's metrics in a local directory (test plugin). [plugin recording-exporter]"
    )
    assert lines["not-an-exporter"].startswith("(cannot be loaded: Exporter 'not-an-exporter'")


def test_an_unknown_exporter_exits_2_naming_it(cli) -> None:
    run = cli("nope", "+rollouts_jsonl_fpath=x")
    assert run.exit_code == 2
    assert "unknown exporter 'nope'" in run.stderr


def test_an_unknown_option_exits_2_naming_it_and_the_valid_ones(cli, sample_run, tmp_path) -> None:
    run = cli(
        "recording",
        f"+rollouts_jsonl_fpath={sample_run.rollouts}",
        f"+store_dir={tmp_path}",
        "+colour=red",
    )
    assert run.exit_code == 2
    assert "unknown option +colour for exporter 'recording'" in run.stderr
    assert (
        "Valid options: +rollouts_jsonl_fpath, +dry_run, +store_dir, +delay_seconds, +fail_with"
        in run.stderr
    )
    assert not list(tmp_path.glob("*.json"))


def test_a_bad_value_exits_2_naming_the_option_and_value(cli, sample_run, tmp_path) -> None:
    run = cli(
        "recording",
        f"+rollouts_jsonl_fpath={sample_run.rollouts}",
        f"+store_dir={tmp_path}",
        "+delay_seconds=soon",
    )
    assert run.exit_code == 2
    assert "invalid value for +delay_seconds" in run.stderr
    assert "'soon'" in run.stderr


def test_a_missing_required_option_exits_2(cli) -> None:
    run = cli("recording", "+store_dir=/tmp/x")
    assert run.exit_code == 2
    assert "missing required option +rollouts_jsonl_fpath" in run.stderr


def test_an_unknown_flag_exits_2_naming_it(cli) -> None:
    run = cli("recording", "--colour")
    assert run.exit_code == 2
    assert "unknown flag --colour" in run.stderr


def test_a_usage_error_with_json_prints_a_result_with_exit_code_2(cli) -> None:
    run = cli("recording", "+store_dir=/tmp/x", "--json")
    assert run.exit_code == 2
    result = json.loads(run.stdout)
    assert result["exit_code"] == 2
    assert result["status"] == "failed"


def test_exporter_help_lists_options_with_types_defaults_and_descriptions(cli) -> None:
    run = cli("recording", "--help")
    assert run.exit_code == 0
    assert "+rollouts_jsonl_fpath (Path, required)" in run.stdout
    assert "+delay_seconds (float, default: 0.0)" in run.stdout
    assert "+fail_with (str | None, default: None)" in run.stdout
    assert "Directory the exported runs are recorded in." in run.stdout


def test_an_export_prints_one_human_line(cli, sample_run, tmp_path) -> None:
    args = (
        "recording",
        f"+rollouts_jsonl_fpath={sample_run.rollouts}",
        f"+store_dir={tmp_path / 's'}",
    )
    first = cli(*args)
    assert first.exit_code == 0
    assert first.stdout.startswith("succeeded: recorded run ")
    second = cli(*args)
    assert second.exit_code == 0
    assert second.stdout.startswith(
        "skipped (already exported): aime24_rollouts.jsonl was exported to"
    )


def test_json_prints_the_export_result(cli, sample_run, tmp_path) -> None:
    run = cli(
        "recording",
        f"+rollouts_jsonl_fpath={sample_run.rollouts}",
        f"+store_dir={tmp_path}",
        "--json",
    )
    result = json.loads(run.stdout)
    assert result["exporter"] == "recording"
    assert result["status"] == "succeeded"
    assert result["run_dir"] == str(sample_run.run.run_dir)
    assert result["details"]["marker"].endswith("aime24_rollouts_recording_export_done")
    # stderr keeps progress only, never the result again in other words (SPEC §3.2)
    assert not [line for line in run.stderr.splitlines() if line.startswith("succeeded")]


def test_format_still_works_with_a_deprecation_warning(cli, sample_run, tmp_path) -> None:
    run = cli(
        "--format",
        "recording",
        f"+rollouts_jsonl_fpath={sample_run.rollouts}",
        f"+store_dir={tmp_path}",
    )
    assert run.exit_code == 0
    assert "--format is deprecated" in run.stderr
    assert run.stdout.startswith("succeeded:")


@pytest.mark.parametrize(
    ("missing", "message"),
    [
        ("aggregate", "Aggregate metrics not found: "),
        ("saved_config", "Saved run config not found: "),
    ],
)
def test_a_missing_run_file_fails_with_exit_1_and_writes_nothing(
    cli, make_sample_run, tmp_path, missing: str, message: str
) -> None:
    sample = make_sample_run(**{missing: False})
    before = sorted(p.name for p in sample.run.run_dir.iterdir())
    run = cli(
        "recording", f"+rollouts_jsonl_fpath={sample.rollouts}", f"+store_dir={tmp_path / 'store'}"
    )
    assert run.exit_code == 1
    assert run.stdout.startswith(f"failed: {message}{sample.run.run_dir}")
    assert sorted(p.name for p in sample.run.run_dir.iterdir()) == before
    assert not (tmp_path / "store").exists()


def test_an_exporter_that_raises_fails_with_a_result_not_a_traceback(cli, sample_run) -> None:
    run = cli("broken", f"+rollouts_jsonl_fpath={sample_run.rollouts}")
    assert run.exit_code == 1
    assert run.stdout == (
        "failed: unexpected error in the broken exporter: RuntimeError: "
        "backend exploded while holding Bearer ****\n"
    )
    assert "Traceback" not in run.output


def test_dry_run_plans_without_writing_anything(cli, sample_run, tmp_path) -> None:
    before = sorted(p.name for p in sample_run.run.run_dir.iterdir())
    run = cli(
        "recording",
        f"+rollouts_jsonl_fpath={sample_run.rollouts}",
        f"+store_dir={tmp_path / 'store'}",
        "--dry-run",
    )
    assert run.exit_code == 0
    assert run.stdout.startswith("succeeded: dry run: aime24_rollouts.jsonl would be exported to")
    assert "aime24_math_simple_agent/pass@1[avg-of-4]/no_answer/std_dev_across_runs" in run.stdout
    assert str(sample_run.rollouts) in run.stdout
    assert sorted(p.name for p in sample_run.run.run_dir.iterdir()) == before
    assert not (tmp_path / "store").exists()


def test_dry_run_as_an_override_reports_the_plan_as_json(cli, sample_run, tmp_path) -> None:
    run = cli(
        "recording",
        f"+rollouts_jsonl_fpath={sample_run.rollouts}",
        f"+store_dir={tmp_path}",
        "+dry_run=true",
        "--json",
    )
    result = json.loads(run.stdout)
    assert result["details"]["dry_run"] is True
    plan = result["plan"]
    assert plan["target"] == str(tmp_path)
    assert [f["path"] for f in plan["files"]] == [
        str(sample_run.rollouts),
        str(sample_run.run.aggregate_metrics),
        str(sample_run.run.saved_config),
    ]
    assert "key_metrics/aime24_math_tool_agent/pass@4/symbolic_accuracy" in plan["metric_names"]


def test_dry_run_of_a_run_that_would_fail_exits_1_with_the_reason(
    cli, make_sample_run, tmp_path
) -> None:
    sample = make_sample_run(aggregate=False)
    run = cli(
        "recording",
        f"+rollouts_jsonl_fpath={sample.rollouts}",
        f"+store_dir={tmp_path}",
        "--dry-run",
    )
    assert run.exit_code == 1
    assert "Aggregate metrics not found" in run.stdout


def test_no_canary_secret_appears_in_any_output(cli, sample_run, tmp_path) -> None:
    store = tmp_path / "store"
    outputs = [
        cli(
            "recording",
            f"+rollouts_jsonl_fpath={sample_run.rollouts}",
            f"+store_dir={store}",
            "--json",
        ).output,
        cli(
            "recording",
            f"+rollouts_jsonl_fpath={sample_run.rollouts}",
            f"+store_dir={store}",
            "--dry-run",
        ).output,
        cli("inspect", str(sample_run.rollouts), "--json").output,
    ]
    assert sample_run.canaries.found_in("\n".join(outputs)) == []
    assert sample_run.canaries.found_in_tree(store) == []
    assert sample_run.canaries.found_in_tree(sample_run.run.run_dir) == []


def test_the_console_script_runs_as_a_real_subprocess(cli_process, sample_run) -> None:
    run = cli_process("inspect", sample_run.rollouts)
    assert run.exit_code == 0, run.stderr
    assert "rollouts: 48 (48 with ng_trajectory)" in run.stdout


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--workers", "9"], "--workers is not a flag of an export"),
        (
            ["--slurm", "--all", "--report", "x"],
            "--all, --report, --slurm are not flags of an export",
        ),
    ],
)
def test_an_export_refuses_the_flags_of_other_commands_by_name(
    cli, sample_run, flags, named
) -> None:
    run = cli("atif", f"+rollouts_jsonl_fpath={sample_run.rollouts}", *flags)
    assert run.exit_code == 2
    assert named in run.stderr


def test_a_usage_error_with_json_is_one_line(cli, sample_run) -> None:
    run = cli("mlflow", f"+rollouts_jsonl_fpath={sample_run.rollouts}", "+nope=1", "--json")
    assert run.exit_code == 2
    assert len(run.stdout.splitlines()) == 1
    assert json.loads(run.stdout)["exit_code"] == 2
    assert not [line for line in run.stderr.splitlines() if line.startswith("failed")]


def test_an_invalid_value_for_a_secret_option_is_not_echoed(cli, sample_run) -> None:
    run = cli(
        "evalrdl",
        f"+rollouts_jsonl_fpath={sample_run.rollouts}",
        "+meta.api_token=[31415926535897932384]",
    )
    assert run.exit_code == 2
    assert "invalid value for +meta.api_token" in run.stderr
    assert "(value not shown)" in run.stderr
    assert "31415926535897932384" not in run.output


def test_an_all_digit_token_can_be_passed_as_it_is(cli, sample_run) -> None:
    run = cli(
        "mlflow",
        f"+rollouts_jsonl_fpath={sample_run.rollouts}",
        "+mlflow_tracking_token=31415926535897932384",
        "+mlflow_run_name=2024",
        "--dry-run",
    )
    assert run.exit_code == 0, run.output
    assert "31415926535897932384" not in run.output


@pytest.mark.parametrize(
    ("command", "flag"),
    [
        (["inspect"], "--dry-run"),
        (["list"], "--workers=2"),
        (["envs"], "--slurm"),
        (["save-config"], "--fake=x"),
        (["contract", "verify", "wandb"], "--json"),
    ],
)
def test_each_command_refuses_the_flags_of_others_by_name(cli, sample_run, command, flag) -> None:
    run = cli(*command, sample_run.rollouts, flag)
    assert run.exit_code == 2
    assert f"{flag.split('=')[0]} is not a flag of this command" in run.stderr


def test_inspect_json_is_one_line(cli, sample_run) -> None:
    run = cli("inspect", sample_run.rollouts, "--json")
    assert len(run.stdout.splitlines()) == 1
    assert json.loads(run.stdout)["rollout_count"] == 48


def test_a_reader_that_goes_away_ends_the_output_without_a_traceback(sample_run) -> None:
    import subprocess
    import sys

    aggregate = [
        {"agent_ref": {"name": "a"}, "agent_metrics": {f"m{i}": float(i) for i in range(20_000)}}
    ]
    sample_run.run.aggregate_metrics.write_text(json.dumps(aggregate))
    process = subprocess.Popen(
        [sys.executable, "-m", "evalexport", "inspect", str(sample_run.rollouts)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    assert process.stderr is not None
    process.stdout.readline()
    process.stdout.close()  # as `| head -1` does
    errors = process.stderr.read().decode()
    assert process.wait(timeout=60) == 0  # `set -o pipefail` scripts keep going
    assert "Traceback" not in errors
    assert "BrokenPipeError" not in errors


def test_non_finite_metrics_are_named_by_the_result_and_not_planned(cli, sample_run) -> None:
    aggregate = json.loads(sample_run.run.aggregate_metrics.read_text())
    aggregate[0]["agent_metrics"]["broken"] = float("inf")
    sample_run.run.aggregate_metrics.write_text(json.dumps(aggregate))
    run = cli("mlflow", f"+rollouts_jsonl_fpath={sample_run.rollouts}", "--dry-run", "--json")
    result = json.loads(run.stdout)
    assert not any(name.endswith("/broken") for name in result["plan"]["metric_names"])
    said = "1 metrics are NaN or infinite and are not logged: aime24_math_simple_agent/broken"
    assert f"Note: {said}." in result["message"]
    assert result["notices"] == [said]


def test_paths_with_a_hash_a_colon_or_a_leading_hash_are_taken_as_written(
    cli, make_sample_run, tmp_path
) -> None:
    sample = make_sample_run("run #3: final", agents=("aime24_math_tool_agent",))
    output = tmp_path / "traj #2: out"
    run = cli(
        "atif",
        f"+rollouts_jsonl_fpath={sample.rollouts}",
        f"+output_dirpath={output}",
        "+agent_version=1",
    )
    assert run.exit_code == 0, run.output
    assert (output / "manifest.jsonl").is_file()


def _exit_code_into_a_closed_pipe(*args: object) -> int:
    """``evalexport ARGS | true``: the command's exit code when whoever reads its stdout has
    gone before it prints (its pipe's reading end closed)."""
    import os
    import subprocess
    import sys

    read, write = os.pipe()
    os.close(read)
    try:
        completed = subprocess.run(
            [sys.executable, "-m", "evalexport", *map(str, args)],
            stdout=write,
            stderr=subprocess.DEVNULL,
            check=False,
            timeout=120,
            # stdout block-buffered as in a shell pipe (CI's environment may set it unbuffered)
            env={k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"},
        )
    finally:
        os.close(write)
    return completed.returncode


def test_a_result_decided_before_the_pipe_closed_keeps_its_exit_code(sample_run, tmp_path) -> None:
    """``evalexport ... | true`` and ``| head -1`` keep a failure a failure for ``set -o
    pipefail`` (#59: both gave 0); a closed pipe alone fails nothing."""
    assert (
        _exit_code_into_a_closed_pipe(
            "mlflow", f"+rollouts_jsonl_fpath={tmp_path / 'nope.jsonl'}", "--dry-run"
        )
        == 1
    )
    assert _exit_code_into_a_closed_pipe("inspect", sample_run.run.aggregate_metrics) == 1
    assert _exit_code_into_a_closed_pipe("inspect", sample_run.rollouts) == 0
    assert _exit_code_into_a_closed_pipe("--help") == 0


def test_an_unknown_flag_names_the_flags_every_command_takes(cli) -> None:
    said = cli("-V")
    assert said.exit_code == 2
    assert "unknown flag -V" in said.stderr
    assert "--all" not in said.stderr.splitlines()[0]  # envs' own, not every command's


def test_help_is_asked_as_users_ask_it(cli) -> None:
    """``evalexport help``, ``evalexport help COMMAND`` and ``list --help`` print help (#59:
    'unknown exporter help', and the list itself)."""
    overview = cli("help")
    assert overview.exit_code == 0
    assert overview.stdout == cli("--help").stdout
    assert cli("help", "mlflow").stdout == cli("mlflow", "--help").stdout
    assert cli("help", "plan").stdout == cli("plan", "--help").stdout
    listed = cli("list", "--help")
    assert listed.exit_code == 0
    assert listed.stdout.startswith("usage: evalexport list [--json]")


def test_the_help_of_a_default_named_by_the_benchmark_says_the_rule_the_dry_run_applies(
    cli,
) -> None:
    """The naming rule is said from the same facts :attr:`RunArtifacts.benchmark` applies:
    ``example_rollouts.jsonl`` and a job's ``rollouts.jsonl`` are named by their directory."""
    from evalexport.run import GENERIC_STEMS

    for exporter in ("mlflow", "wandb"):
        shown = " ".join(cli(exporter, "--help").stdout.split())
        assert "example_rollouts.jsonl, rollouts.jsonl" in shown
        assert "the directory holding it" in shown
        assert all(
            f"{stem}_rollouts.jsonl" in shown or stem == "rollouts" for stem in GENERIC_STEMS
        )


def test_list_says_what_atif_reads(cli) -> None:
    listed = cli("list").stdout
    atif = next(line for line in listed.splitlines() if line.startswith("atif"))
    assert "ng_trajectory" in atif
    assert "recorded_conversations" in atif


def test_inspect_of_a_gym_jobs_benchmark_directory_inspects_its_run(cli, tmp_path) -> None:
    from tests.support.jobs import make_gym_job

    job = make_gym_job(tmp_path / "evals", tasks=1, repeats=1)
    shown = cli("inspect", job.directory / "aime24")
    assert shown.exit_code == 0, shown.output
    assert str(job.job.rollouts("aime24")) in shown.stdout


def test_the_cli_keeps_what_a_run_decided_in_that_run_not_in_its_modules() -> None:
    """The command at hand and the exit code decided before printing live in the run's
    ``Invocation`` (#66): no ``global`` in the CLI's modules, so a program that runs the CLI
    more than once never gets one run's state in the next. (Not two at once in threads: an
    export points the process's stdout at stderr while it runs.)"""
    import ast
    from pathlib import Path

    import evalexport.cli

    package = Path(evalexport.cli.__file__).parent
    holding = sorted(
        f"{path.name}:{node.lineno}"
        for path in package.glob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Global)
    )
    assert holding == []


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["plan", "task", "tasks.json"], "plan"),  # raised in plan's own branch
        (["plan", "run", "plan.yaml", "--workers", "many"], "plan"),  # in its flag check
        (["contract", "scaffold", "tinytrack"], "contract"),  # in a helper of contract's
        (["list", "extra"], "list"),
        (["envs", "run"], "envs"),  # envs run reads its own command line
        (["contract", "bogus", "x"], "contract"),
        (["plan", "bogus", "p.yaml"], "plan"),
        # refused by the parser, before the command runs: still the command's help
        (["mlflow", "--bogus"], "mlflow"),
        (["plan", "run", "p.yaml", "--workers"], "plan"),
        (["inspect", "--bogus"], "inspect"),
        (["atif", "--workers", "2"], "atif"),
    ],
)
def test_a_usage_error_raised_anywhere_in_a_command_points_to_that_commands_help(
    cli, argv: list[str], command: str
) -> None:
    done = cli(*argv)
    assert done.exit_code == 2, done.output
    assert done.stderr.startswith("evalexport: error: "), done.stderr
    assert f"Run 'evalexport {command} --help' for usage." in done.stderr
    # the help named once, at the end: no "(see evalexport X --help)" in the message too
    assert len(re.findall(r"(?:evalexport|see) [\w-]+ --help", done.stderr)) == 1, done.stderr
    assert done.stdout == ""  # a usage error prints no help text on stdout
    assert "Traceback" not in done.output


def test_a_usage_error_of_no_command_points_to_the_tools_help(cli) -> None:
    done = cli("--bogus")
    assert done.exit_code == 2
    assert done.stderr.endswith("Run 'evalexport --help' for usage.\n"), done.stderr
