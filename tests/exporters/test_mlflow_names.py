"""Names, values and batches for MLflow (SPEC §3.6), and the mlflow dry run: no SDK needed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from evalexport.backends.mlflow.exporter import resolve_tracking_uri
from evalexport.backends.mlflow.names import (
    MAX_ENTITIES_PER_BATCH,
    MAX_KEY_LENGTH,
    MAX_LIST_PARAMS,
    MAX_METRICS_PER_BATCH,
    MAX_PARAM_VALUE_LENGTH,
    MAX_PARAMS_TAGS_PER_BATCH,
    flatten_params,
    params_of,
    plan_batches,
    sanitize_name,
    sanitize_names,
)

# MLflow's own rules (mlflow/utils/validation.py), restated to check our output against.
VALID = re.compile(r"^[/\w.\- :]*$")


def _mlflow_accepts(name: str) -> bool:
    import posixpath

    normalized = posixpath.normpath(name)
    return (
        bool(name)
        and bool(VALID.match(name))
        and len(name) <= MAX_KEY_LENGTH
        and normalized == name
        and not normalized.startswith(("..", "/"))
        and normalized != "."
    )


@pytest.mark.parametrize(
    ("name", "sanitized"),
    [
        (
            "agent/pass@1[avg-of-32]/symbolic_accuracy",
            "agent/pass_at_1_avg-of-32_/symbolic_accuracy",
        ),
        ("agent/majority@32/symbolic_accuracy", "agent/majority_at_32/symbolic_accuracy"),
        ("agent//mean/reward", "agent/mean/reward"),
        ("/agent/mean/reward/", "agent/mean/reward"),
        ("agent/../secret", "agent/__/secret"),
        ("agent/./x", "agent/_/x"),
        ("...x/y", "___x/y"),
        ("agent/score (%)", "agent/score ___"),
        ("agent/a:b", "agent/a:b"),
        ("agent/mean/reward", "agent/mean/reward"),
        ("ünïcode/ok", "ünïcode/ok"),
        ("//", ""),
    ],
)
def test_names_are_sanitized_to_what_mlflow_accepts(name: str, sanitized: str) -> None:
    assert sanitize_name(name) == sanitized
    assert sanitized == "" or _mlflow_accepts(sanitized)


def test_long_names_keep_both_ends_around_an_elision_as_gym_cuts_them() -> None:
    long_a = "agent/" + "a" * 300 + "/x"
    long_b = "agent/" + "a" * 300 + "/y"
    cut_a, cut_b = sanitize_name(long_a), sanitize_name(long_b)
    assert len(cut_a) == MAX_KEY_LENGTH
    assert cut_a == long_a[:124] + "___" + long_a[-123:]
    assert cut_a != cut_b
    assert _mlflow_accepts(cut_a)


def test_long_names_that_cut_alike_are_kept_apart_with_a_warning() -> None:
    middle_a = "agent/" + "a" * 300 + "/x"
    middle_b = "agent/" + "a" * 150 + "b" + "a" * 149 + "/x"
    result = sanitize_names([middle_a, middle_b], "metric")
    assert sanitize_name(middle_a) == sanitize_name(middle_b)
    assert result.names[middle_a] != result.names[middle_b]
    assert all(len(name) <= MAX_KEY_LENGTH for name in result.names.values())
    assert "NeMo Gym would log one over the other" in result.warnings[0]


def test_a_name_that_sanitizes_to_nothing_is_dropped_with_a_warning() -> None:
    result = sanitize_names(["ok/name", "///"], "metric")
    assert result.names == {"ok/name": "ok/name"}
    assert result.warnings == ["metric '///' has no characters MLflow accepts; it is not logged"]


def test_names_that_collide_after_sanitizing_are_kept_apart_with_a_warning() -> None:
    result = sanitize_names(["a/pass@1", "a/pass_at_1"], "metric")
    assert result.names["a/pass@1"] == "a/pass_at_1"
    assert result.names["a/pass_at_1"].startswith("a/pass_at_1_")
    assert "sanitizes to 'a/pass_at_1'" in result.warnings[0]


def test_params_are_the_saved_config_as_gym_flattens_it() -> None:
    params = flatten_params(
        {
            "judge": {"model": "m", "temperature": 0.0},
            "env": ["A=1", {"B": True}],
            "empty": {},
            "nothing": [],
            "none": None,
            "long": "x" * 7000,
        }
    )
    assert params == {
        "judge.model": "m",
        "judge.temperature": "0.0",
        "env[0]": "A=1",
        "env[1].B": "True",
        "none": "None",
        "long": "x" * MAX_PARAM_VALUE_LENGTH,
    }


def test_a_list_up_to_the_limit_keeps_gyms_names_item_by_item() -> None:
    """Gym names a list's params ``key[i]`` (``key[i].field`` for a record): a list of up to
    MAX_LIST_PARAMS of them keeps exactly those names."""
    records = [{"id": i, "split": "test"} for i in range(MAX_LIST_PARAMS // 2)]
    params = params_of({"tasks": records, "k": [1, [2, 3]]})
    assert params.lists == []
    assert params.values["tasks[0].id"] == "0"
    assert params.values[f"tasks[{MAX_LIST_PARAMS // 2 - 1}].split"] == "test"
    assert params.values["k[1][1]"] == "3"
    assert len(params.values) == MAX_LIST_PARAMS + 3


def test_a_list_past_the_limit_is_one_param_holding_its_json_and_said(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A config list of 90,000 records was 180,000 params (#65): it is one param under its
    key, its JSON cut to MLflow's value limit, and a notice names the key and its counts."""
    records = [{"id": f"task-{i}", "split": "test"} for i in range(90_000)]
    config = {"benchmark": "aime24", "data": {"tasks": records}, "env": ["A=1"]}
    params = params_of(config)
    assert sorted(params.values) == ["benchmark", "data.tasks", "env[0]"]
    value = params.values["data.tasks"]
    assert len(value) == MAX_PARAM_VALUE_LENGTH
    assert value.startswith('[{"id": "task-0", "split": "test"}, {"id": "task-1"')
    whole = json.dumps(records, ensure_ascii=False)
    assert value.endswith(f"...[cut: {len(whole)} characters]")
    (bounded,) = params.lists
    assert (bounded.key, bounded.items, bounded.params) == ("data.tasks", 90_000, 180_000)
    notice = bounded.notice()
    assert "'data.tasks' holds 90,000 items" in notice
    assert "would log as 180,000 params (data.tasks[0], ...)" in notice
    assert "logged as one param 'data.tasks' holding its JSON, cut to 6,000" in notice
    assert "global_config.json" in notice
    assert flatten_params(config) == params.values


def test_a_long_list_that_fits_a_param_is_whole_and_said_uncut() -> None:
    params = params_of({"ids": list(range(MAX_LIST_PARAMS + 1))})
    assert json.loads(params.values["ids"]) == list(range(MAX_LIST_PARAMS + 1))
    assert "cut" not in params.lists[0].notice()


def test_the_dry_run_says_a_long_list_is_one_param(cli, make_sample_run) -> None:
    """The dry run's result, as the export's, ends with the notice (naming the key and its
    counts), its plan holds the one param, and the batches are those of a config without the
    list."""
    import yaml

    sample = make_sample_run()
    config = sample.run.read_saved_config()
    plain = json.loads(
        cli("mlflow", f"+rollouts_jsonl_fpath={sample.rollouts}", "--dry-run", "--json").stdout
    )
    config["tasks"] = [{"id": f"task-{i}", "split": "test"} for i in range(3_000)]
    sample.run.saved_config.write_text(yaml.safe_dump(config))
    done = cli("mlflow", f"+rollouts_jsonl_fpath={sample.rollouts}", "--dry-run", "--json")
    assert done.exit_code == 0, done.output
    result = json.loads(done.stdout)
    plan = result["plan"]
    assert "tasks" in plan["param_names"]
    assert not any(name.startswith("tasks_") for name in plan["param_names"])
    assert len(plan["param_names"]) == len(plain["plan"]["param_names"]) + 1
    assert plan["batches"] == plain["plan"]["batches"]
    (notice,) = [n for n in result["notices"] if "'tasks'" in n]
    assert "holds 3,000 items" in notice
    assert "6,000 params (tasks[0], ...)" in notice
    assert f"Note: {notice}." in result["message"]


def test_batches_stay_within_mlflows_limits_and_lose_nothing() -> None:
    metrics = {f"m/{i}": float(i) for i in range(10_000)}
    params = {f"p.{i}": str(i) for i in range(2_000)}
    tags = {f"t/{i}": "x" for i in range(50)}
    batches = plan_batches(metrics, params, tags)
    for batch in batches:
        assert len(batch.metrics) <= MAX_METRICS_PER_BATCH
        assert len(batch.params) + len(batch.tags) <= MAX_PARAMS_TAGS_PER_BATCH
        assert batch.entity_count() <= MAX_ENTITIES_PER_BATCH
    assert {k: v for b in batches for k, v in b.metrics.items()} == metrics
    assert {k: v for b in batches for k, v in b.params.items()} == params
    assert {k: v for b in batches for k, v in b.tags.items()} == tags
    assert len(batches) == 21  # 2,050 params and tags, 100 a batch; metrics fill the rest


def test_a_relative_sqlite_uri_is_pinned_to_the_current_directory(monkeypatch, tmp_path) -> None:
    monkeypatch.chdir(tmp_path)
    assert resolve_tracking_uri("sqlite:///mlruns.db") == f"sqlite:///{tmp_path}/mlruns.db"
    assert resolve_tracking_uri("sqlite:////abs/x.db") == "sqlite:////abs/x.db"
    assert resolve_tracking_uri("http://127.0.0.1:5000") == "http://127.0.0.1:5000"
    assert resolve_tracking_uri("mlruns") == (tmp_path / "mlruns").as_uri()


def test_the_dry_run_shows_sanitized_names_and_batches_and_builds_nothing(cli, sample_run) -> None:
    from evalexport.isolation import list_environments

    run = cli(
        "mlflow",
        f"+rollouts_jsonl_fpath={sample_run.rollouts}",
        "+mlflow_tracking_uri=http://127.0.0.1:9",
        "--dry-run",
        "--json",
    )
    assert run.exit_code == 0, run.output
    plan = json.loads(run.stdout)["plan"]
    assert (
        "aime24_math_tool_agent/pass_at_1_avg-of-4_/no_answer/std_dev_across_runs"
        in plan["metric_names"]
    )
    assert "judge.judge_api_key" in plan["param_names"]
    assert plan["tag_names"] == [
        "aime24_math_simple_agent/judge_model",
        "aime24_math_tool_agent/judge_model",
    ]
    assert plan["batches"] == 1
    assert plan["target"] == "http://127.0.0.1:9"
    assert list_environments() == []
    assert not Path("mlruns.db").exists()


def test_a_server_given_as_host_and_port_without_a_scheme_is_a_usage_error(cli, sample_run) -> None:
    run = cli(
        "mlflow",
        f"+rollouts_jsonl_fpath={sample_run.rollouts}",
        "+mlflow_tracking_uri=127.0.0.1:5055",
    )
    assert run.exit_code == 2
    assert "write http://127.0.0.1:5055 (or https://)" in run.stderr
    assert "Value error" not in run.stderr  # the validator's words, not pydantic's frame


def test_the_same_in_mlflow_tracking_uri_is_a_usage_error_naming_it(
    cli, sample_run, monkeypatch
) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "mlflow.internal:5000/prefix")
    run = cli("mlflow", f"+rollouts_jsonl_fpath={sample_run.rollouts}", "--dry-run")
    assert run.exit_code == 2, run.output
    assert "MLFLOW_TRACKING_URI: " in run.output
    assert "write http://mlflow.internal:5000/prefix" in run.output


def test_the_sdks_variables_steer_the_target_and_an_option_beats_them(
    cli, sample_run, monkeypatch, tmp_path
) -> None:
    import json

    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5999")
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "from-the-environment")
    dry = json.loads(
        cli("mlflow", f"+rollouts_jsonl_fpath={sample_run.rollouts}", "--dry-run", "--json").stdout
    )
    assert dry["plan"]["target"] == "http://127.0.0.1:5999"
    assert dry["plan"]["settings"] == {
        "mlflow_tracking_uri": "MLFLOW_TRACKING_URI from the environment",
        "mlflow_experiment_name": "MLFLOW_EXPERIMENT_NAME from the environment",
    }
    store = f"sqlite:///{tmp_path / 'mine.db'}"
    mine = json.loads(
        cli(
            "mlflow",
            f"+rollouts_jsonl_fpath={sample_run.rollouts}",
            f"+mlflow_tracking_uri={store}",
            "--dry-run",
            "--json",
        ).stdout
    )
    assert mine["plan"]["target"] == store
    assert mine["plan"]["settings"]["mlflow_tracking_uri"] == "+mlflow_tracking_uri"
