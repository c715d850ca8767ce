"""The exporter core is what every export runs through (docs/architecture.md, "The house, floor
by floor"): each built-in's export, profiled, calls into every module the document names as
the core, and every module all of them call is the core's, the spec's, a gate's, the machine's
or the Python API's. So the core's size, counted as the document names it, is the size of what
every export runs through.

ATIF and EvalRDL (its fake) run here; MLflow (its embedded store) and W&B (offline) join them
with ``--with_downloads``.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import evalexport
from evalexport.results import ExportStatus

ROOT = Path(__file__).resolve().parents[2]
SOURCE = Path(evalexport.__file__).resolve().parent

BELOW_AND_BESIDE = ("spec/", "ingress/", "egress/", "masking/", "host/", "api.py", "_lazy.py")
"""What the core calls and is not (docs/architecture.md): the spec, the two gates, masking,
the machine, and the Python API an export was asked through."""


def core_named_in_the_architecture() -> list[str]:
    text = " ".join((ROOT / "docs" / "architecture.md").read_text().split())
    found = re.search(
        r"The \*\*exporter core\*\* is what every export runs through, whatever its backend: "
        r"(.*?)\. It calls",
        text,
    )
    assert found is not None, "docs/architecture.md no longer names the exporter core"
    return re.findall(r"`([\w/.]+)`", found.group(1))


def _import_everything() -> None:
    """Every module an export may import, imported now, so that a profile sees what the export
    calls rather than what importing a module runs."""
    for module in pkgutil.walk_packages(evalexport.__path__, "evalexport."):
        name = module.name
        if ".testing" in name or name.endswith((".worker", ".runner", "__main__")):
            continue  # the test kit; and what runs only in a worker or as a command
        importlib.import_module(name)


@pytest.fixture
def profiled() -> Callable[[Callable[[], Any]], set[str]]:
    """``profiled(call)``: the modules of evalexport (paths under ``src/evalexport/``, the test
    kit left out) whose functions ``call`` calls, in this process and the threads it starts."""
    _import_everything()

    def modules_called(call: Callable[[], Any]) -> set[str]:
        called: set[str] = set()

        def note(frame: FrameType, event: str, _: object) -> None:
            code = frame.f_code
            # A function's code makes new locals; a module's or a class body's does not.
            if event == "call" and code.co_flags & inspect.CO_NEWLOCALS:
                path = Path(code.co_filename)
                if path.is_relative_to(SOURCE):
                    module = path.relative_to(SOURCE).as_posix()
                    if not module.startswith("testing/"):
                        called.add(module)

        threading.setprofile(note)  # type: ignore[arg-type]
        sys.setprofile(note)  # type: ignore[arg-type]
        try:
            result = call()
        finally:
            sys.setprofile(None)
            threading.setprofile(None)  # type: ignore[arg-type]
        assert result.status is ExportStatus.SUCCEEDED, result.message
        return called

    return modules_called


def _within(module: str, rooms: list[str] | tuple[str, ...]) -> bool:
    return any(module == room or (room.endswith("/") and module.startswith(room)) for room in rooms)


def _held_to_the_architecture(calls: dict[str, set[str]]) -> None:
    core = core_named_in_the_architecture()
    for exporter, called in calls.items():
        missed = [room for room in core if not any(_within(m, [room]) for m in called)]
        assert missed == [], (
            f"the {exporter} export does not run through {missed}: they are not the core"
        )
    every = set.intersection(*calls.values())
    unnamed = sorted(m for m in every if not _within(m, [*core, *BELOW_AND_BESIDE]))
    assert unnamed == [], (
        f"every export runs through {unnamed}: name it in docs/architecture.md's exporter core "
        "(or, if it is one, among the rooms below it)"
    )


def _atif(make_sample_run, tmp_path: Path) -> Callable[[], Any]:
    run = make_sample_run(agents=("aime24_math_tool_agent",))
    options = {"output_dirpath": tmp_path / "atif", "agent_version": "1"}
    return lambda: evalexport.export("atif", run.rollouts, **options)


def _evalrdl(make_sample_run, evalrdl_sdk) -> Callable[[], Any]:
    run = make_sample_run()
    evalrdl_sdk.distinct(run)
    return lambda: evalexport.export("evalrdl", run.rollouts)


def test_every_export_runs_through_the_core_and_the_core_is_what_they_all_run(
    profiled, make_sample_run, evalrdl_sdk, tmp_path: Path
) -> None:
    calls = {
        "atif": profiled(_atif(make_sample_run, tmp_path)),
        "evalrdl": profiled(_evalrdl(make_sample_run, evalrdl_sdk)),
    }
    _held_to_the_architecture(calls)
    # What only some exports run through is not the core: ATIF starts no SDK's worker.
    assert "isolation/delivery.py" not in calls["atif"]
    assert "isolation/delivery.py" in calls["evalrdl"]


@pytest.mark.downloads
def test_the_trackers_run_through_the_same_core(
    profiled, make_sample_run, evalrdl_sdk, mlflow_python, wandb_python, tmp_path: Path
) -> None:
    mlflow_run, wandb_run = make_sample_run(), make_sample_run()
    store = f"sqlite:///{tmp_path / 'mlruns.db'}"
    calls = {
        "atif": profiled(_atif(make_sample_run, tmp_path)),
        "evalrdl": profiled(_evalrdl(make_sample_run, evalrdl_sdk)),
        "mlflow": profiled(
            lambda: evalexport.export("mlflow", mlflow_run.rollouts, mlflow_tracking_uri=store)
        ),
        "wandb": profiled(
            lambda: evalexport.export("wandb", wandb_run.rollouts, wandb_mode="offline")
        ),
    }
    _held_to_the_architecture(calls)
