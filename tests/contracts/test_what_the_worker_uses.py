"""Contracts count only what the worker uses, and bind real SDKs' methods as they are bound.

- A surface's ``reads`` narrow each class to the attributes the worker reads back (and drop
  the constructor of a class it only reads): a release that drops what the worker never
  touches passes; one that drops a declared read fails; a read the worker makes outside its
  declared reads is a recorded-call problem.
- Classmethods, staticmethods and properties are extracted as bound, scaffolded as such, and
  recorded without ``cls``; Enum defaults are matched as written, by the scaffold and the
  recorder alike.
- A release whose requirement cannot be built says how to use a copy installed by hand.
"""

from __future__ import annotations

import enum
import json
import os
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from evalexport.contracts.check import ContractError, Sides, compare_manifests, load_manifests
from evalexport.contracts.narrowing import (
    narrowed,
    unread_findings,
    where_found,
    whole_class_note,
)
from evalexport.contracts.recorded import check_recorded_calls
from evalexport.contracts.scaffold import write_scaffold
from evalexport.contracts.surface_extractor import default_text
from evalexport.spec.sdk import Surface
from evalexport.testing import recording
from tests.contracts.test_scaffold import _extract_from
from tests.support.tasklog_sdk import tasklog_modules

ROOT = Path(__file__).resolve().parents[2]
EXTRACTOR = ROOT / "src" / "evalexport" / "contracts" / "surface_extractor.py"

TASKLOG = Surface(
    "tasklog",
    (
        "tasklog.Task.init",
        "tasklog.Task.get_logger",
        "tasklog.Task.close",
        "tasklog.Task.running_locally",
        "tasklog.Logger.report_scalar",
    ),
    reads={"tasklog.Task": ("id",), "tasklog.Logger": ()},
)


def _tree(root: Path, modules: dict[str, str]) -> Path:
    for path, source in modules.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(source)
    return root


def _extract(source_root: Path, sdk: str, paths: tuple[str, ...]) -> dict[str, object]:
    """The manifest of a source tree, extracted in a process of its own (as the CLI does)."""
    return _extract_from(source_root, sdk, list(paths))


@pytest.fixture(scope="module")
def tasklog(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, object]]:
    """Manifests of real tasklog 2.0 and 2.1 (clearml's shape), extracted from their sources."""
    root = tmp_path_factory.mktemp("tasklog")
    return {
        version: _extract(
            _tree(root / version, tasklog_modules(version)), "tasklog", TASKLOG.extracted
        )
        for version in ("2.0", "2.1")
    }


# Narrowing ----------------------------------------------------------------------------------


def test_the_committed_mlflow_manifests_compared_as_releases_differ_in_nothing_the_worker_uses() -> (
    None
):
    from evalexport.contracts.drift import surface_of

    old, new = load_manifests(ROOT / "contracts" / "mlflow")
    whole = compare_manifests(old, new, Sides.release(old, new))
    # RunInfo's constructor, unused client methods, Run.inputs, Span's and the tracing
    # calls' request_id renamed trace_id (the worker traces from MLflow 3 only: ``since``),
    # and the span batches' classes and calls, which 2.22.1 lacks or has otherwise (the worker
    # batches spans from MLflow 3.4 on: ``since``); TraceInfo's constructor and attributes and
    # Assessment's constructor (a resumed run's traces are looked up from MLflow 3 on:
    # ``since``; an Assessment is only read, its ``name``, never built).
    assert len(whole) == 52
    surface = surface_of("mlflow")
    assert (
        compare_manifests(narrowed(old, surface), narrowed(new, surface), Sides.release(old, new))
        == []
    )


def test_the_committed_wandb_manifests_differ_only_in_what_the_worker_calls() -> None:
    from evalexport.contracts.drift import surface_of

    old, new = load_manifests(ROOT / "contracts" / "wandb")
    surface = surface_of("wandb")
    findings = compare_manifests(
        narrowed(old, surface), narrowed(new, surface), Sides.release(old, new)
    )
    assert findings  # wandb.init's parameters really moved between 0.17 and 0.31
    assert {f.path for f in findings} <= set(surface.paths)
    assert not [f for f in findings if f.code.startswith("attribute")]
    # ... but the worker passes them by keyword (positional["wandb.init"] == 0): no finding.
    assert not [f for f in findings if f.code == "moved"]
    placed_anyhow = replace(surface, positional={})
    moved = [
        f
        for f in compare_manifests(
            narrowed(old, placed_anyhow), narrowed(new, placed_anyhow), Sides.release(old, new)
        )
        if f.code == "moved"
    ]
    assert len(moved) == 23
    assert {f.path for f in moved} == {"wandb.init"}


def test_a_call_passing_more_by_position_than_declared_is_a_recorded_problem() -> None:
    from evalexport.contracts.drift import surface_of

    surface = surface_of("wandb")
    old, new = load_manifests(ROOT / "contracts" / "wandb")
    records = [
        {"name": "wandb.init", "args": [], "kwargs": {"project": "p"}, "site": "worker.py:1"},
        {"name": "wandb.init", "args": ["job"], "kwargs": {}, "site": "worker.py:2"},
        # a method by its class path is recorded with its instance first: not the worker's place
        {"name": "wandb.sdk.wandb_run.Run.log", "args": ["<Run>", {"a": 1}], "site": "w.py:3"},
    ]
    assert check_recorded_calls(records, [old, new], surface=surface) == [
        "worker.py:2: wandb.init(...) is passed 1 argument by position, but the surface's "
        "positional['wandb.init'] says 0, so a parameter that moves there goes unseen: pass them "
        "by keyword, or declare positional['wandb.init'] = 1"
    ]


def test_what_the_worker_uses_from_a_release_on_does_not_count_before_it() -> None:
    from evalexport.contracts.drift import surface_of

    old, new = load_manifests(ROOT / "contracts" / "mlflow")
    surface = surface_of("mlflow")
    assert "mlflow.tracking.MlflowClient.start_trace" not in narrowed(old, surface)["entries"]
    assert "mlflow.tracking.MlflowClient.start_trace" in narrowed(new, surface)["entries"]
    # Span.trace_id and TraceInfo.trace_id: MLflow 3's
    assert unread_findings(old, surface, "mlflow 2.22.1") == []
    earlier = Surface("mlflow", surface.paths, reads=surface.reads)  # the same, ungated
    assert [f.name for f in unread_findings(old, earlier, "mlflow 2.22.1")] == [
        "trace_id",
        "trace_id",
    ]


def test_a_release_lacking_only_methods_the_worker_never_uses_passes(tasklog) -> None:
    old, new = tasklog["2.0"], tasklog["2.1"]
    assert "upload_artifact" in new["entries"]["tasklog.Task"]["attributes"]
    assert "upload_artifact" not in old["entries"]["tasklog.Task"]["attributes"]
    whole = compare_manifests(new, old, Sides.release(new, old))
    assert {f.name for f in whole} == {"upload_artifact", "set_comment"}
    assert (
        compare_manifests(narrowed(new, TASKLOG), narrowed(old, TASKLOG), Sides.release(new, old))
        == []
    )


def test_a_class_only_read_counts_its_reads_and_not_its_constructor(tasklog) -> None:
    entry = narrowed(tasklog["2.1"], TASKLOG)["entries"]["tasklog.Task"]
    assert entry["parameters"] is None
    assert list(entry["attributes"]) == ["id"]
    assert entry["attributes"]["id"]["kind"] == "property"


def test_a_release_that_drops_a_declared_read_is_a_finding(tasklog) -> None:
    surface = Surface("tasklog", TASKLOG.paths, reads={"tasklog.Task": ("id", "log", "owner")})
    found = unread_findings(tasklog["2.1"], surface, "tasklog 2.1")
    assert [f.line() for f in found] == [
        'error: tasklog.Task: attribute "owner", which the worker reads (the surface\'s reads), '
        "is not in tasklog 2.1"
    ]


def test_a_class_counted_whole_says_how_to_narrow_it(tasklog) -> None:
    whole = Surface("tasklog", ("tasklog.Task", "tasklog.Task.init"))
    findings = compare_manifests(
        narrowed(tasklog["2.1"], whole),
        narrowed(tasklog["2.0"], whole),
        Sides.release(tasklog["2.1"], tasklog["2.0"]),
    )
    assert findings
    (note,) = whole_class_note(findings, whole)
    assert "reads={'tasklog.Task': (...)}" in note
    assert whole_class_note(findings, TASKLOG) == []
    # verify's headline says why: not "in what the worker uses" for methods it never calls
    assert where_found(findings, whole) == (
        "in the classes the surface names whole (every public attribute counts)"
    )
    assert where_found(findings, TASKLOG) == "in what the worker uses"


def test_a_read_outside_the_declared_reads_is_a_recorded_problem(tasklog) -> None:
    records = [
        {"name": "tasklog.Task", "read": "id", "site": "worker.py:3"},
        {"name": "tasklog.Task", "read": "get_logger", "site": "worker.py:4"},  # a called path
        {"name": "tasklog.Task", "read": "log", "site": "worker.py:5"},
    ]
    assert check_recorded_calls(records, [tasklog["2.1"]], surface=TASKLOG) == [
        "worker.py:5: tasklog.Task.log is read, but the surface's reads of tasklog.Task leave it "
        "out, so no contract check holds it: add 'log' to reads['tasklog.Task']"
    ]


# Bindings, defaults ---------------------------------------------------------------------------


def test_classmethods_staticmethods_and_properties_are_extracted_as_bound(tasklog) -> None:
    entries = tasklog["2.1"]["entries"]
    init = entries["tasklog.Task.init"]
    assert init["binding"] == "classmethod"
    assert [p["name"] for p in init["parameters"]][:2] == ["project_name", "task_name"]  # no cls
    (task_type,) = [p for p in init["parameters"] if p["name"] == "task_type"]
    assert task_type["default"] == "tasklog.backend_interface.task.BackendTask.TaskTypes.training"
    assert entries["tasklog.Task.running_locally"]["binding"] == "staticmethod"
    assert "binding" not in entries["tasklog.Task.get_logger"]
    assert entries["tasklog.Task.get_logger"]["parameters"][0]["name"] == "self"


def test_a_classmethod_made_a_plain_method_is_drift(tasklog) -> None:
    fake = json.loads(json.dumps(tasklog["2.1"]))
    del fake["entries"]["tasklog.Task.init"]["binding"]
    assert [f.code for f in compare_manifests(tasklog["2.1"], fake)] == ["binding"]


def test_the_scaffold_of_a_classmethod_sdk_has_its_surface_as_written(tasklog, tmp_path) -> None:
    manifest = narrowed(tasklog["2.1"], TASKLOG)
    scaffold = write_scaffold(manifest, tmp_path / "fake")
    assert scaffold.notes == []
    source = (scaffold.source_root / "tasklog" / "__init__.py").read_text()
    assert '@record.calls("tasklog.Task.init")\n    @classmethod\n    def init(cls, ' in source
    assert (
        '@record.calls("tasklog.Task.running_locally")\n    @staticmethod\n    def running_locally()'
        in source
    )
    assert "    @property\n    def id(self)" in source
    assert (
        "default_member('tasklog.backend_interface.task.BackendTask.TaskTypes', 'training')"
        in source
    )
    assert source.count("SCAFFOLD: tasklog.") == 6  # 5 calls and 1 read, not Task's 23 attributes
    fake = _extract(scaffold.source_root, "tasklog", TASKLOG.extracted)
    assert compare_manifests(manifest, narrowed(fake, TASKLOG)) == []


def test_a_bases_property_set_in_a_subclass_init_stays_a_property(tasklog) -> None:
    # clearml's Task.id: IdObjectBase's property, assigned through its setter in a subclass's
    # __init__ (``self.id = id``); the subclass's assignment must not make it an instance
    # attribute, or the scaffold writes ``self.id = None`` and no property.
    attributes = tasklog["2.1"]["entries"]["tasklog.Task"]["attributes"]
    assert attributes["id"] == {"kind": "property", "annotation": "Any"}
    assert attributes["log"]["kind"] == "instance"  # a plain ``self.log = log`` still is one


def test_nested_classes_are_recorded_as_classes_with_their_bases_and_members(tasklog) -> None:
    attributes = tasklog["2.1"]["entries"]["tasklog.Task"]["attributes"]
    assert attributes["TaskTypes"] == {
        "kind": "class",
        "bases": ["enum.Enum"],
        "members": {
            "training": "training",
            "testing": "testing",
            "inference": "inference",
            "data_processing": "data_processing",
        },
    }
    assert attributes["DeleteError"] == {"kind": "class", "bases": ["builtins.Exception"]}


CLEARML_READS = Surface(
    "tasklog",
    TASKLOG.paths,
    reads={"tasklog.Task": ("DeleteError", "TaskTypes", "id", "log"), "tasklog.Logger": ()},
)


def test_the_scaffold_of_clearmls_shape_holds_an_id_property_and_classes_as_classes(
    tasklog, tmp_path
) -> None:
    manifest = narrowed(tasklog["2.1"], CLEARML_READS)
    scaffold = write_scaffold(manifest, tmp_path / "fake")
    assert scaffold.notes == []
    source = (scaffold.source_root / "tasklog" / "__init__.py").read_text()
    assert "self.id = " not in source
    assert "    @property\n    def id(self) -> 'Any':" in source
    assert "    class TaskTypes(enum.Enum):\n" in source
    assert "        training = 'training'\n" in source
    assert "    class DeleteError(Exception):\n" in source
    assert "def TaskTypes" not in source
    fake = _extract(scaffold.source_root, "tasklog", CLEARML_READS.extracted)
    assert compare_manifests(manifest, narrowed(fake, CLEARML_READS)) == []


def test_a_nested_class_drifting_is_said_in_plain_words(tasklog) -> None:
    real = narrowed(tasklog["2.1"], CLEARML_READS)
    fake = json.loads(json.dumps(real))
    attributes = fake["entries"]["tasklog.Task"]["attributes"]
    attributes["TaskTypes"] = {"kind": "method"}
    attributes["DeleteError"]["bases"] = ["builtins.ValueError"]
    attributes["id"] = {"kind": "instance"}  # read alike: a value either way, no finding
    assert [f.message for f in compare_manifests(real, fake)] == [
        "class \"DeleteError\" is built on ['builtins.Exception'] in real 2.1 but on "
        "['builtins.ValueError'] in the fake",
        'attribute "TaskTypes" is a class in real 2.1 but a method in the fake',
    ]
    attributes["id"] = {"kind": "method"}
    attributes["log"] = {"kind": "method"}
    said = [f.message for f in compare_manifests(real, fake)]
    assert 'attribute "id" is a property in real 2.1 but a method in the fake' in said
    assert 'attribute "log" is an instance in real 2.1 but a method in the fake' in said
    attributes["TaskTypes"] = {"kind": "class", "bases": ["enum.Enum"], "members": {"training": 1}}
    (members,) = [f for f in compare_manifests(real, fake) if "members" in f.message]
    assert "{'training': 1}" in members.message


def test_classes_named_by_their_path_in_a_class_are_scaffolded_in_it(tasklog, tmp_path) -> None:
    # The worker passes task_type=Task.TaskTypes.testing and catches Task.DeleteError.
    surface = replace(
        TASKLOG, paths=(*TASKLOG.paths, "tasklog.Task.TaskTypes", "tasklog.Task.DeleteError")
    )
    real = _extract(_tree(tmp_path / "real", tasklog_modules("2.1")), "tasklog", surface.extracted)
    kinds = real["entries"]["tasklog.Task.TaskTypes"]
    assert kinds["kind"] == "class"
    assert kinds["bases"] == ["enum.Enum"]
    assert list(kinds["members"]) == ["training", "testing", "inference", "data_processing"]
    manifest = narrowed(real, surface)
    scaffold = write_scaffold(manifest, tmp_path / "fake")
    assert scaffold.notes == []
    source = (scaffold.source_root / "tasklog" / "__init__.py").read_text()
    assert "\n    class TaskTypes(enum.Enum):\n" in source
    assert "\n    class DeleteError(Exception):\n" in source
    fake = _extract(scaffold.source_root, "tasklog", surface.extracted)
    assert compare_manifests(manifest, narrowed(fake, surface)) == []
    fake["entries"]["tasklog.Task.TaskTypes"]["members"].pop("testing")
    (finding,) = compare_manifests(manifest, narrowed(fake, surface))
    assert finding.path == "tasklog.Task.TaskTypes"
    assert "'testing': 'testing'" in finding.message


def test_an_enum_named_by_its_path_is_its_members(tmp_path) -> None:
    modules = {
        "kinds/__init__.py": (
            "import enum\n\n\nclass Color(str, enum.Enum):\n    RED = 'red'\n    BLUE = 'blue'\n"
        )
    }
    surface = Surface("kinds", ("kinds.Color",))
    real = _extract(_tree(tmp_path / "real", modules), "kinds", surface.extracted)
    assert real["entries"]["kinds.Color"] == {
        "kind": "class",
        "bases": ["builtins.str", "enum.Enum"],
        "members": {"RED": "red", "BLUE": "blue"},
        "parameters": None,
        "attributes": {},
    }
    scaffold = write_scaffold(real, tmp_path / "fake")
    source = (scaffold.source_root / "kinds" / "__init__.py").read_text()
    assert "\nclass Color(str, enum.Enum):\n" in source
    fake = _extract(scaffold.source_root, "kinds", surface.extracted)
    assert compare_manifests(real, fake) == []


_RECORDED = """
import enum
from tasklog._recording import Recorder

record = Recorder("tasklog")
Kind = enum.Enum("Kind", [("training", "training")], module="tasklog.kinds")


class Task:
    @record.calls("tasklog.Task.init")  # above @classmethod
    @classmethod
    def init(cls, project_name: str | None = None, task_type: object = Kind.training) -> "Task":
        return cls()

    @classmethod
    @record.calls("tasklog.Task.get_task")  # below it: cls named as such
    def get_task(cls, task_id: str | None = None) -> "Task":
        return cls()

    @record.calls("tasklog.Task.running_locally")
    @staticmethod
    def running_locally(flag: bool = True) -> bool:
        return flag

    @record.calls("tasklog.Task().close")
    def close(self, now: bool = False) -> None:
        pass
"""


def test_a_classmethod_is_recorded_as_called_on_the_class_and_binds(tmp_path: Path) -> None:
    package = tmp_path / "fake" / "tasklog"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(_RECORDED)
    (package / "_recording.py").write_text(Path(recording.__file__).read_text())
    worker = tmp_path / "worker.py"
    worker.write_text(
        textwrap.dedent(
            """
            import sys
            sys.path.insert(0, sys.argv[1])
            from tasklog import Task
            task = Task.init(project_name="evals")
            Task.get_task("t1")
            Task.running_locally(False)
            task.running_locally()
            task.close()
            """
        )
    )
    log = tmp_path / "calls.jsonl"
    completed = subprocess.run(
        [sys.executable, "-I", str(worker), str(package.parent)],
        env={**os.environ, "TASKLOG_FAKE_CALL_LOG": str(log)},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["name"], r["args"], r["kwargs"]) for r in records] == [
        ("tasklog.Task.init", [], {"project_name": "evals"}),
        ("tasklog.Task.get_task", ["t1"], {}),
        ("tasklog.Task.running_locally", [False], {}),
        ("tasklog.Task.running_locally", [], {}),
        ("tasklog.Task().close", [], {}),
    ]
    assert records[0]["defaulted"] == {"task_type": "tasklog.kinds.Kind.training"}
    manifest = _extract(
        package.parent,
        "tasklog",
        (
            "tasklog.Task.init",
            "tasklog.Task.get_task",
            "tasklog.Task.running_locally",
            "tasklog.Task().close",
        ),
    )
    assert check_recorded_calls(records, [manifest]) == []


class _Colour(enum.Enum):
    red = "red"


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        3,
        2.5,
        "text",
        b"x",
        (1, "a"),
        frozenset({1}),
        _Colour.red,
        object(),
        10**20,
    ],
    ids=lambda value: type(value).__name__,
)
def test_the_recorder_writes_defaults_as_the_manifests_do(value: object) -> None:
    assert recording.default_text(value) == default_text(value)


# A release that cannot be built from the index ------------------------------------------------


def test_a_release_whose_pins_do_not_resolve_is_offered_an_installed_copy(monkeypatch) -> None:
    import evalexport.isolation as isolation
    from evalexport.contracts.drift import check_matrix, verify_release

    def unresolvable(*_: object, **__: object) -> None:
        raise isolation.EnvironmentBuildError(
            "installing mlflow==3.18.0 failed: No solution found: mlflow-tracing==3.18.0 is not available"
        )

    monkeypatch.setattr(isolation, "ensure_environment", unresolvable)
    with pytest.raises(ContractError) as verified:
        verify_release("mlflow", ROOT / "contracts", requirement="mlflow==3.18.0")
    message = str(verified.value)
    assert "mlflow-tracing==3.18.0 is not available" in message
    assert "pip install --no-deps 'mlflow==3.18.0'" in message
    assert (
        "evalexport contract manifest mlflow --python /tmp/sdk-copy/bin/python --write" in message
    )
    with pytest.raises(ContractError) as matrix:
        check_matrix(ROOT / "contracts", sdks=["mlflow"])
    assert "--python /tmp/sdk-copy/bin/python" in str(matrix.value)


def test_python_must_be_an_environments_interpreter(cli, tmp_path: Path) -> None:
    refused = cli(
        "contract", "manifest", "mlflow", "--python", str(tmp_path / "nowhere" / "python")
    )
    assert refused.exit_code == 2
    assert "is not the python of a virtual environment" in refused.output


def test_extracting_an_sdk_writes_nothing_into_the_home(tmp_path, monkeypatch) -> None:
    """Importing an SDK to read its signatures may write into a home (MLflow's telemetry id in
    ~/.config/mlflow): the extractor gives it a scratch one, so `tox -e contracts` and
    `evalexport contract verify` leave the user's home as it was (#44)."""
    from evalexport.contracts import surface_extractor

    package = tmp_path / "site" / "homewriter"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        "import os\n"
        "from pathlib import Path\n"
        "_config = Path(os.environ.get('XDG_CONFIG_HOME') or Path.home() / '.config')\n"
        "(_config / 'homewriter').mkdir(parents=True, exist_ok=True)\n"
        "(_config / 'homewriter' / 'telemetry.json').write_text('{}')\n"
        "(Path.home() / '.homewriter-id').write_text('id')\n"
        "def record(value: int) -> None: ...\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    home = Path(os.environ["HOME"])
    before = sorted(home.rglob("*"))
    environment = {v: os.environ.get(v) for v in ("HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")}

    outcome = surface_extractor.run({"sdk": "homewriter", "surface": ["homewriter.record"]})

    assert outcome["status"] == "succeeded", outcome
    assert "homewriter.record" in json.dumps(outcome["output"])
    assert sorted(home.rglob("*")) == before
    assert {v: os.environ.get(v) for v in environment} == environment
