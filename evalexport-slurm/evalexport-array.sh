#!/bin/bash
#SBATCH --job-name=evalexport
#SBATCH --array=0-0%2
#SBATCH --output=/work/main/evalexport-slurm/logs/%A_%a.out
#SBATCH --export=ALL
exec /work/main/.venv/bin/python -m evalexport plan task /work/main/evalexport-slurm/tasks.json --index "$SLURM_ARRAY_TASK_ID" --result-dir /work/main/evalexport-slurm/results
