"""MLflow export cost against a real local server: batched exporter vs one call per value.

    python benchmarks/mlflow_export.py [--metrics 10000] [--params 2000]

Builds (or reuses) the mlflow exporter's environment, starts ``mlflow server`` on 127.0.0.1
behind a counting proxy, and exports a run with that many metrics and params twice: with the
mlflow exporter (``log_batch`` within MLflow's limits) and with a naive worker body that calls
``log_metric`` and ``log_param`` once per value. Prints tracking requests and wall time side by
side. Needs the package index the first time (the environment is cached after that).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

NAIVE_BODY = """
def run(payload):
    from mlflow.tracking import MlflowClient
    client = MlflowClient(tracking_uri=payload["tracking_uri"])
    experiment = client.get_experiment_by_name(payload["experiment_name"])
    experiment_id = experiment.experiment_id if experiment else client.create_experiment(payload["experiment_name"])
    run_id = client.create_run(experiment_id, run_name="naive").info.run_id
    for batch in payload["batches"]:
        for key, value in batch["metrics"].items():
            client.log_metric(run_id, key, value)
        for key, value in batch["params"].items():
            client.log_param(run_id, key, value)
        for key, value in batch["tags"].items():
            client.set_tag(run_id, key, value)
    client.set_terminated(run_id, "FINISHED")
    return {"status": "succeeded", "exit_code": 0, "message": "naive", "details": {"run_id": run_id}}
"""


def make_big_run(directory: Path, metrics: int, params: int) -> Path:
    from evalexport.masking import save_run_config
    from evalexport.testing.factory import make_run

    sample = make_run(directory, tasks=2, repeats=2)
    per_agent = metrics // 2
    aggregate = [
        {
            "agent_ref": {"name": agent},
            "agent_metrics": {
                f"group{i // 100}/pass@1[avg-of-4]/metric{i}": i / 7 for i in range(per_agent)
            },
        }
        for agent in ("agent_a", "agent_b")
    ]
    sample.run.aggregate_metrics.write_text(json.dumps(aggregate))
    config = {
        f"section{j // 50}": {f"option{i}": f"value {i}" for i in range(j, j + 50)}
        for j in range(0, params, 50)
    }
    save_run_config(config, sample.rollouts)
    return sample.rollouts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--metrics", type=int, default=10_000)
    parser.add_argument("--params", type=int, default=2_000)
    args = parser.parse_args()
    from evalexport.exporters.mlflow import MLflowExporter
    from evalexport.isolation import EnvironmentSpec, ensure_environment, run_worker
    from evalexport.run import RunArtifacts
    from evalexport.testing.mlflow_server import MLflowServer
    from evalexport.testing.proxy import FailingProxy

    exporter = MLflowExporter()
    requirement = exporter.Config.model_fields["requirement"].default
    environment = ensure_environment(EnvironmentSpec("mlflow", (requirement,)))
    with tempfile.TemporaryDirectory(prefix="mlflow-bench-") as scratch_name:
        scratch = Path(scratch_name)
        rollouts = make_big_run(scratch / "run", args.metrics, args.params)
        run = RunArtifacts.from_rollouts_path(rollouts)
        with MLflowServer(environment.python, scratch / "server") as server:
            rows = []
            proxy = FailingProxy(server.port)
            config = exporter.parse_config(
                {
                    "rollouts_jsonl_fpath": str(rollouts),
                    "mlflow_tracking_uri": proxy.url,
                    "mlflow_experiment_name": "bench",
                    "upload_rollouts": False,
                }
            )
            start = time.perf_counter()
            result = exporter.export(run, config)
            rows.append(
                (
                    "evalexport (log_batch)",
                    proxy.requests,
                    time.perf_counter() - start,
                    result.status.value,
                )
            )
            proxy.close()
            plan = exporter.dry_run_plan(run, config)

            proxy = FailingProxy(server.port)
            naive_body = scratch / "naive.py"
            naive_body.write_text(NAIVE_BODY)
            payload = exporter.worker_payload(
                run, config.model_copy(update={"mlflow_tracking_uri": proxy.url}), scratch
            )
            start = time.perf_counter()
            outcome = run_worker(environment, naive_body, payload, time_limit=3600)
            status = (
                outcome.result["status"] if outcome.result else f"no result: {outcome.log_tail()}"
            )
            rows.append(
                ("naive (one call per value)", proxy.requests, time.perf_counter() - start, status)
            )
            proxy.close()
    print(
        f"run: {len(plan.metric_names)} metrics, {len(plan.param_names)} params, {len(plan.tag_names)} tags; "
        f"{plan.batches} log_batch requests planned"
    )
    print(f"{'exporter':<28} {'requests':>9} {'wall s':>8}  status")
    for name, requests, seconds, status in rows:
        print(f"{name:<28} {requests:9d} {seconds:8.2f}  {status}")
    (_, fast_requests, fast_s, _), (_, slow_requests, slow_s, _) = rows
    print(
        f"naive / batched: {slow_requests / max(fast_requests, 1):.0f}x the requests, {slow_s / fast_s:.1f}x the time"
    )


if __name__ == "__main__":
    main()
