"""``evalexport plan render``: the shell tail a job script runs after each benchmark's driver.

The tail captures the driver's exit code before anything else, runs each export with its
resolved options, appends each ``ExportResult`` as one JSON line to the benchmark's export log,
and exits with the driver's code — an export failure does not fail the job unless the plan says
``fail_job_on_export_failure: true``. The log is never inside the run directory (SPEC §6): the
EvalRDL exporter uploads that directory as it is, so a line appended there would change the
next upload and defeat its dedupe. It is ``<export_log_dir>/<benchmark>_exports.jsonl``, by
default in ``evalexport-logs/`` beside the run directory.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from evalexport.plans.model import ExportPlan, ExportTask, resolve_tasks

__all__ = ["environments_needed", "export_log", "render_tail", "render_tails"]


def export_log(benchmark: str, run_dir: Path, log_dir: Path | None) -> Path:
    """The file a benchmark's job tail appends its results to: outside its run directory."""
    directory = (log_dir or run_dir.parent / "evalexport-logs").absolute()
    return directory / f"{benchmark}_exports.jsonl"


def render_tail(
    benchmark: str,
    tasks: list[ExportTask],
    fail_job: bool,
    command: str = "evalexport",
    log_dir: Path | None = None,
) -> str:
    """The shell tail a job script runs after ``benchmark``'s driver step: its exports, logged."""
    if not tasks:
        return f"# evalexport: no exports for {benchmark}\n"
    log_path = export_log(benchmark, tasks[0].rollouts.parent, log_dir)
    log = shlex.quote(str(log_path))
    lines = [
        f"# --- evalexport: exports after benchmark {benchmark} ---",
        "evalexport_driver_status=$?",
        "evalexport_export_failed=0",
        f"mkdir -p {shlex.quote(str(log_path.parent))}",
    ]
    for task in tasks:
        arguments = " ".join(
            shlex.quote(token) for token in [task.exporter, *task.overrides(), "--json"]
        )
        lines.append(f"{command} {arguments} >> {log} || evalexport_export_failed=1")
    if fail_job:
        lines.append(
            'if [ "$evalexport_driver_status" -eq 0 ] && [ "$evalexport_export_failed" -ne 0 ]; then exit 1; fi'
        )
    lines.append('exit "$evalexport_driver_status"')
    return "\n".join(lines) + "\n"


def render_tails(plan: ExportPlan, command: str = "evalexport") -> dict[str, str]:
    """The tail of each benchmark, by benchmark."""
    tasks = resolve_tasks(plan)
    return {
        benchmark: render_tail(
            benchmark,
            [task for task in tasks if task.benchmark == benchmark],
            plan.job.fail_job_on_export_failure,
            command,
            plan.job.export_log_dir,
        )
        for benchmark in plan.job.benchmarks
    }


def environments_needed(plan: ExportPlan) -> dict[str, str]:
    """What each exporter needs installed: its SDK environment (the requirements its options
    name, asked of the options alone: no target is resolved, no credential helper asked), or
    nothing beyond evalexport."""
    from evalexport.spec.declarations import SdkConfig
    from evalexport.spec.options import parse_options
    from evalexport.spec.registry import load_exporter

    needs: dict[str, str] = {}
    for task in resolve_tasks(plan):
        exporter_class = load_exporter(task.exporter)
        if exporter_class.sdk is None:
            needs[task.exporter] = f"nothing beyond evalexport itself ({install_hint()})"
            continue
        config = parse_options(
            exporter_class,
            {"rollouts_jsonl_fpath": str(task.rollouts), **task.options, "dry_run": True},
        )
        requirements = config.requirements() if isinstance(config, SdkConfig) else ("its SDK",)
        needs[task.exporter] = (
            f"its own environment with {' '.join(requirements)}, built on first use in "
            "$EVALEXPORT_CACHE_DIR (build it ahead of the job where nodes lack the index)"
        )
    return needs


def install_hint() -> str:
    """How a compute node installs the evalexport this machine has: from the checkout or the
    wheel it was installed from, else the same version from the index it came from."""
    import importlib.metadata
    import json
    from urllib.parse import unquote, urlparse

    from evalexport._version import __version__

    try:
        origin = importlib.metadata.distribution("evalexport").read_text("direct_url.json")
    except importlib.metadata.PackageNotFoundError:
        origin = None
    url = urlparse(str(json.loads(origin).get("url", ""))) if origin else None
    if url is not None and url.scheme == "file":
        source = unquote(url.path)
        if source.endswith(".whl"):
            return f"pip install {source}, a path the nodes can read"
        return (
            f"pip install {source} on a path the nodes can read, or a wheel of it: "
            f"pip wheel --no-deps -w DIR {source}, then pip install DIR/evalexport-{__version__}-*.whl"
        )
    return f"pip install evalexport=={__version__} from the index this machine installed it from"
