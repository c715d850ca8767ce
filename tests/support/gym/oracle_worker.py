"""Runs inside the NeMo Gym environment: one JSON request per line in, one answer per line out.

Standard library plus nemo_gym only; evalexport is not installed there.
"""

import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any


def _metrics_to_log(aggregate: list[dict[str, Any]]) -> dict[str, object]:
    """The metrics Gym's rollout collection hands its exporters after a run (read from
    ``nemo_gym/rollout_collection.py``: top-level primitive values only)."""
    primitive = (bool, int, float, str, type(None))
    metrics: dict[str, object] = {}
    for entry in aggregate:
        agent = entry["agent_ref"]["name"]
        for section, prefix in (("agent_metrics", agent), ("key_metrics", f"key_metrics/{agent}")):
            metrics.update(
                {
                    f"{prefix}/{key}": value
                    for key, value in (entry.get(section) or {}).items()
                    if isinstance(value, primitive)
                }
            )
    return metrics


def _live_export(request: dict[str, Any]) -> dict[str, object]:
    """Run one of Gym's live exporters over a finished run, as a live run would call it."""
    import logging
    from importlib import import_module

    from nemo_gym.rollout_collection import _rollout_for_export
    from omegaconf import DictConfig

    warnings: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            warnings.append(record.getMessage())

    handler = Collect(level=logging.WARNING)
    logging.getLogger("nemo_gym").addHandler(handler)
    os.environ.update(request.get("environment", {}))
    module_name, class_name = {
        "mlflow": ("nemo_gym.exporters.mlflow", "MLflowExporter"),
        "wandb": ("nemo_gym.exporters.wandb", "WandbExporter"),
    }[request["backend"]]
    exporter = getattr(import_module(module_name), class_name)(DictConfig(request["config"]))
    rows = [
        _rollout_for_export(json.loads(line))
        for line in Path(request["rollouts"]).read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    aggregate = json.loads(Path(request["aggregate"]).read_text(encoding="utf-8"))
    exporter.setup()
    run_id = getattr(exporter, "run_id", None) or getattr(
        getattr(exporter, "run", None), "id", None
    )
    run_dir = getattr(getattr(exporter, "run", None), "dir", None)
    exporter.export_config()
    exporter.export_metrics(_metrics_to_log(aggregate))
    exporter.export_rollouts(rows)
    exporter.teardown()
    logging.getLogger("nemo_gym").removeHandler(handler)
    return {"run_id": run_id, "run_dir": run_dir, "warnings": warnings, "error": None}


def _reverify(request: dict[str, Any]) -> dict[str, object]:
    """Gym's ``gym eval reverify --input-format atif`` ingress over an ATIF export: its
    manifest loaded as Gym loads it, each entry projected against the run's rows."""
    from nemo_gym.atif_reverification import (
        index_materialized_inputs,
        load_atif_manifest,
        project_atif_manifest_entry,
    )

    manifest = Path(request["manifest"])
    try:
        entries = load_atif_manifest(manifest)
    except Exception as error:
        return {"manifest_error": f"{type(error).__name__}: {error}"}
    rows = [
        json.loads(line)
        for line in Path(request["rollouts"]).read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    projected: list[str] = []
    refused: dict[str, str] = {}
    try:
        inputs = index_materialized_inputs(rows)
    except Exception as error:  # rows Gym cannot index (no task or rollout index): none joins
        reason = f"the rollouts: {type(error).__name__}: {error}"
        refused = {str(entry.trajectory_path): reason for entry in entries}
        return {
            "manifest_error": None,
            "entries": len(entries),
            "projected": [],
            "refused": refused,
        }
    for entry in entries:
        try:
            project_atif_manifest_entry(entry, inputs, manifest_directory=manifest.parent)
            projected.append(str(entry.trajectory_path))
        except Exception as error:
            refused[str(entry.trajectory_path)] = f"{type(error).__name__}: {error}"
    return {
        "manifest_error": None,
        "entries": len(entries),
        "projected": projected,
        "refused": refused,
    }


def _aggregate_math(request: dict[str, Any]) -> dict[str, object]:
    """The aggregate-metrics entry NeMo Gym's rollout collection writes for a math run scored by
    its ``math_with_judge`` resources server (the environment behind its aime24 config): each
    row stripped as ``_call_aggregate_metrics`` strips it before posting, then the server's own
    ``/aggregate_metrics`` (``compute_aggregate_metrics`` with the server's ``compute_metrics``,
    ``get_key_metrics`` and ``compute_repeat_metrics``), the entry labelled as collection labels
    it."""
    import types

    from nemo_gym.reward_profile import compute_aggregate_metrics
    from resources_servers.math_with_judge.app import LibraryJudgeMathResourcesServer as Server

    heavy = (
        "response",
        "responses_create_params",
        "ng_agent_observations",
        "ng_model_call_capture",
        "ng_trajectory",
    )
    stripped = []
    for line in Path(request["rollouts"]).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        entry = {key: value for key, value in row.items() if key not in heavy}
        response = row.get("response") or {}
        metadata = {
            key: response[key]
            for key in ("usage", "incomplete_details")
            if response.get(key) is not None
        }
        if metadata:
            entry["response"] = metadata
        stripped.append(entry)
    # The server's hooks use nothing of a server but its class (a static score function).
    metrics = compute_aggregate_metrics(
        stripped,
        compute_metrics_fn=types.MethodType(Server.compute_metrics, Server),
        get_key_metrics_fn=types.MethodType(Server.get_key_metrics, Server),
        compute_repeat_metrics_fn=types.MethodType(Server.compute_repeat_metrics, Server),
    )
    entry = {
        "agent_ref": {"name": request["agent"]},
        "_ng_environment_server": request["server"],
        "agent_metrics": metrics.agent_metrics,
        "key_metrics": metrics.key_metrics,
        "group_level_metrics": metrics.group_level_metrics,
        "repeat_level_metrics": metrics.repeat_level_metrics,
    }
    if metrics.perf_summary is not None:
        entry["perf_summary"] = metrics.perf_summary
    return {"entry": json.loads(json.dumps(entry, default=str))}


def _make_job(request: dict[str, Any]) -> dict[str, object]:
    """A ``gym eval submit`` job directory, written by Gym's own Slurm executor from a submit
    config and the ``sbatch`` answers of its benchmarks (``{name: [exit code, output]}``):
    the record, the resolved config and each benchmark's directory, as a submit leaves them.
    Nothing is queued; ``environment`` is set first (the ``host:`` values, the local index's
    ``XDG_CACHE_HOME``)."""
    from nemo_gym.orchestration.api import SubmitConfig
    from nemo_gym.orchestration.executors.connection import LocalConnection
    from nemo_gym.orchestration.executors.slurm import _MARKER, SlurmExecutor
    from nemo_gym.orchestration.jobs import new_gym_job_id, utc_now

    os.environ.update(request.get("environment", {}))
    config = SubmitConfig.model_validate(request["config"])
    now = utc_now()
    gym_job_id = new_gym_job_id(now)
    run_dir = Path(config.job.output_path) / gym_job_id
    cluster = next(iter(config.compute))
    compute = config.compute[cluster]
    output = "\n".join(
        f"{_MARKER}{name}:{code}:{said}" for name, (code, said) in request["sbatch"].items()
    )
    executor = SlurmExecutor()
    names = list(config.driver.benchmarks)
    record = executor._build_record(cluster, compute, gym_job_id, now, run_dir, names, output)
    run_dir.mkdir(parents=True)
    executor._stage(config, compute, run_dir, run_dir)
    executor.persist(record, config, LocalConnection().write_text)
    return {"job_dir": str(run_dir), "record": json.loads(record.dumps())}


def _conversation_errors(row: dict[str, Any]) -> dict[str, object]:
    """What Gym's own models say of a row's request and response: ``{key: error}``, empty
    when both accept (an aviary response with transitions: Gym's aviary model)."""
    from nemo_gym.openai_utils import NeMoGymResponse, NeMoGymResponseCreateParamsNonStreaming

    response_model: Any = NeMoGymResponse
    response = row.get("response")
    if isinstance(response, dict) and response.get("contains_transitions"):
        from resources_servers.aviary.schemas import AviaryNeMoGymResponse

        response_model = AviaryNeMoGymResponse
    errors: dict[str, str] = {}
    for key, model in (
        ("responses_create_params", NeMoGymResponseCreateParamsNonStreaming),
        ("response", response_model),
    ):
        try:
            model.model_validate(row.get(key))
        except Exception as error:  # the oracle reports, the test decides
            errors[key] = f"{type(error).__name__}: {error}"
    return {"errors": errors}


def main() -> None:
    from nemo_gym import __version__
    from nemo_gym.atif_export import ExportAtifConfig, export_rollouts_to_atif
    from nemo_gym.rollout_observability import TrajectoryRecord

    # The answers go out on a copy of stdout; what Gym's code or an SDK prints (MLflow's
    # "View run ... at" links to a server) goes to stderr, not into them.
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    for line in sys.stdin:
        request = json.loads(line)
        action = request["action"]
        answer: dict[str, object] = {}
        if action == "version":
            import nemo_gym

            answer = {
                "version": __version__,
                "site_packages": str(Path(nemo_gym.__file__).resolve().parents[1]),
            }
        elif action == "validate":
            try:
                TrajectoryRecord.model_validate(request["record"])
                answer = {"error": None}
            except Exception as error:  # the oracle reports, the test decides
                answer = {"error": f"{type(error).__name__}: {error}"}
        elif action == "strict_errors":
            from pydantic import ValidationError

            try:
                TrajectoryRecord.model_validate(request["record"], strict=True)
                answer = {"errors": []}
            except ValidationError as error:
                found = error.errors(include_url=False)
                answer = {"errors": [[list(each["loc"]), each["msg"]] for each in found]}
        elif action == "live_export":
            try:
                answer = _live_export(request)
            except Exception as error:
                answer = {
                    "error": f"{type(error).__name__}: {error}",
                    "trace": traceback.format_exc(),
                }
        elif action == "reverify":
            answer = _reverify(request)
        elif action == "conversation":
            answer = _conversation_errors(request["row"])
        elif action == "make_job":
            answer = _make_job(request)
        elif action == "aggregate_math":
            answer = _aggregate_math(request)
        elif action == "load_job_record":
            from nemo_gym.orchestration.jobs import SubmissionRecord

            try:
                loaded = SubmissionRecord.load(json.loads(Path(request["path"]).read_text()))
                answer = {"record": json.loads(loaded.dumps()), "error": None}
            except Exception as error:
                answer = {"record": None, "error": f"{type(error).__name__}: {error}"}
        elif action == "health":
            from nemo_gym.rollout_health import run_health_checks

            result = run_health_checks(
                Path(request["rollouts"]), output_dir=Path(request["output"]), workers=1
            )
            answer = {"verdicts": result.summary["run"]["verdicts"]}
        elif action == "failure_row":
            from aiohttp import ClientResponseError, RequestInfo
            from multidict import CIMultiDict, CIMultiDictProxy
            from nemo_gym.rollout_collection import _agent_request_failure_row
            from yarl import URL

            url = URL(request["url"])
            info = RequestInfo(url, "POST", CIMultiDictProxy(CIMultiDict()), url)
            status = request["status"]
            refused = ClientResponseError(info, (), status=status, message=request["message"])
            answer = {"row": _agent_request_failure_row(refused, status)}
        elif action == "mlflow_name":
            from nemo_gym.exporters.mlflow import _sanitize_key

            answer = {"names": [_sanitize_key(name) for name in request["names"]]}
        elif action == "atif":
            try:
                config = ExportAtifConfig(
                    rollouts_jsonl_fpath=Path(request["rollouts"]),
                    output_dirpath=Path(request["output"]),
                    session_id=request["session_id"],
                    agent_version=request["agent_version"],
                )
                result = export_rollouts_to_atif(config)
                answer = {"trajectory_count": result.trajectory_count, "error": None}
            except Exception as error:
                answer = {
                    "error": str(error) or traceback.format_exc(limit=3),
                    "type": type(error).__name__,
                }
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
