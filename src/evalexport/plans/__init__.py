"""Export plans for multi-benchmark jobs: validation, job-script tails, batch and Slurm runs."""

from __future__ import annotations

from evalexport.plans.model import ExportTask, PlanError, resolve_tasks
from evalexport.plans.validation import load_plan, validate_plan

__all__ = ["ExportTask", "PlanError", "load_plan", "resolve_tasks", "validate_plan"]
