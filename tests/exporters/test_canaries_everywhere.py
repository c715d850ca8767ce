"""No planted secret leaves through any exporter, whatever shape it has (SPEC §2).

A hand-written saved config that was never masked holds the factory's canaries and every
shape that used to leak: a ``nvapi-`` key, a secret flag followed by its value, JSON and header
lines inside strings, a numbered key, an environment-style ``*_KEY`` name and a token as a
URL's user part, long or short. Every exporter runs over it; stdout, stderr, logs, results,
MLflow's store and artifacts, the offline W&B run, the EvalRDL store and call log and the
environment records are searched for every canary. In the SDK environments' cache only the
files written or changed during the test are read: the canaries are made by the test, so a
file untouched since before it cannot hold one (the installed packages, a gigabyte, are not
read again).
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

import pytest
import yaml

pytestmark = [pytest.mark.downloads, pytest.mark.long]

SHAPES = {
    "notes": "rotated nvapi-{c}abcdefghijklmnop yesterday",
    "command": "python serve.py --hf-token {c} --max-tokens 100",
    "payload": '{{"api_key": "{c}", "model": "m"}}',
    "api_key_2": "{c}",
    "OPENAI_KEY": "{c}",
    "mirror": "https://{c}0123456789abcdef@pkgs.example.com/simple",
    "headers_text": "Accept: json\nX-Api-Key: {c}\n",
}
SHORT_SHAPES = {
    # a short token as a URL's user part: 13 characters, shorter than any rule of length
    "repo_url": "https://{s}@github.com/o/r.git",
}


def test_every_exporter_over_every_canary_shape_leaks_nothing(
    cli, make_sample_run, mlflow_python, wandb_python, evalrdl_sdk, caplog, tmp_path
) -> None:
    started = time.time() - 1  # a file system's timestamps may be coarser than the clock's
    sample = make_sample_run(agents=("aime24_math_tool_agent",), mask_saved_config=False)
    canaries = list(sample.canaries.all)
    config = yaml.safe_load(sample.run.saved_config.read_text())
    for index, (key, shape) in enumerate(SHAPES.items()):
        canary = f"CANARYSHAPE{index}x{sample.canaries.suffix}"
        canaries.append(canary)
        config[key] = shape.format(c=canary)
    for key, shape in SHORT_SHAPES.items():
        short = f"tk{sample.canaries.suffix}"[:13]
        canaries.append(short)
        config[key] = shape.format(s=short)
    sample.run.saved_config.write_text(yaml.safe_dump(config))

    outputs: list[str] = []
    with caplog.at_level(logging.DEBUG):
        for args in (
            ["atif", f"+output_dirpath={tmp_path / 'atif'}", "+agent_version=1"],
            ["mlflow", f"+mlflow_tracking_uri=sqlite:///{tmp_path / 'mlruns.db'}"],
            ["wandb", "+wandb_mode=offline"],
            ["evalrdl", "+wait=false"],
        ):
            for extra in (["--dry-run"], [], ["--json"]):
                run = cli(args[0], f"+rollouts_jsonl_fpath={sample.rollouts}", *args[1:], *extra)
                outputs.append(run.output)
    outputs.append(caplog.text)
    cache = Path(os.environ["EVALEXPORT_CACHE_DIR"])
    searched = [tmp_path, Path(os.environ["WANDB_DIR"]), cache]
    searched += [evalrdl_sdk.store, evalrdl_sdk.call_log]
    leaks = [
        f"{where}: {canary}"
        for where, text in enumerate(outputs)
        for canary in canaries
        if canary in text
    ]
    cache_files_read = 0
    for root in searched:
        files = [root] if root.is_file() else sorted(root.rglob("*")) if root.exists() else []
        for path in files:
            if sample.run.run_dir in path.parents:
                continue  # the run itself: where the canaries were planted
            if not path.is_file() or path.suffix in (".pyc", ".so"):
                continue
            if cache in path.parents:
                if _untouched_since(path, started):
                    continue
                cache_files_read += 1
            data = path.read_bytes()
            leaks += [f"{path}: {c}" for c in canaries if c.encode() in data]
    assert leaks == []
    # and the exports did happen: the search is not over empty stores
    assert (tmp_path / "atif" / "manifest.jsonl").is_file()
    assert (tmp_path / "mlruns.db").is_file()
    assert cache_files_read > 0  # the environments' records each export touches
    assert list(Path(os.environ["WANDB_DIR"]).glob("wandb/offline-run-*"))
    assert json.loads(outputs[-2].splitlines()[0])["status"] == "failed"  # evalrdl refuses


def _untouched_since(path: Path, started: float) -> bool:
    """Whether neither the file's bytes nor its metadata changed after ``started`` (the
    change time, which no copy or ``utime`` sets back, is checked with the modification time)."""
    status = path.stat()
    return max(status.st_mtime, status.st_ctime) < started
