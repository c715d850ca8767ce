"""tasklog: a real SDK built in the tests, in the shape of clearml 2.1.12 (which CI cannot
install): a ``Task`` whose entry point is a classmethod (``Task.init(project_name=...,
task_name=..., task_type=TaskTypes.training)``, the default a member of an Enum nested in a
backend base class, with clearml's own ``__repr__``), an ``id`` property inherited from an
id-object base and assigned through its setter in the subclass's ``__init__`` (``self.id =
id``), an exception class nested in the task (``Task.DeleteError``), a staticmethod, a ``Logger`` reached through ``get_logger()``, and dozens of
public methods an exporter never touches.

Releases: 2.0 lacks two of those unused methods; 2.1 is the one the guide commits; 2.2 pins
``tasklog-core==2.2``, which no index serves (as ``mlflow==3.18.0`` pinned an unpublished
``mlflow-tracing``).
"""

from __future__ import annotations

from pathlib import Path

from evalexport.testing.wheels import build_wheel

_BACKEND = '''
"""tasklog.backend_interface.task: what the server's task object is."""

from enum import Enum
from typing import Any


class IdObject:
    _id: str | None = None

    @property
    def id(self) -> Any:
        return self._id

    @id.setter
    def id(self, value: str | None) -> None:
        self._id = value


class BackendTask(IdObject):
    class DeleteError(Exception):
        pass

    class TaskTypes(Enum):
        def __str__(self) -> str:
            return str(self.value)

        def __repr__(self) -> str:
            return f"TaskTypes.{self.value}"

        training = "training"
        testing = "testing"
        inference = "inference"
        data_processing = "data_processing"

    def __init__(self, id: str | None = None, log: object = None) -> None:
        super().__init__()
        self.id = id  # through IdObject's setter: ``id`` stays a property
        self.log = log

    def mark_completed(self, ignore_errors: bool = True, status_message: str | None = None) -> None:
        pass

    def mark_failed(self, ignore_errors: bool = True, status_reason: str | None = None) -> None:
        pass

    def get_status(self) -> str:
        return "in_progress"

    def reload(self) -> None:
        pass

{unused}
'''

_LOGGER = '''
"""tasklog.logger: what a task reports through."""


class Logger:
    def __init__(self, private_task: object) -> None:
        self._task = private_task

    def report_scalar(self, title: str, series: str, value: float, iteration: int) -> None:
        pass

    def report_text(self, msg: str, level: int = 20, print_console: bool = True) -> None:
        pass

    def report_table(self, title: str, series: str, iteration: int, table_plot: object = None) -> None:
        pass

    def flush(self, wait: bool = False) -> bool:
        return True
'''

_TASK = '''
"""tasklog.task: the Task users start with ``Task.init``."""

import uuid
from collections.abc import Sequence
from typing import Any

from tasklog.backend_interface.task import BackendTask
from tasklog.logger import Logger

TaskTypes = BackendTask.TaskTypes


class Task(BackendTask):
    @classmethod
    def init(
        cls,
        project_name: str | None = None,
        task_name: str | None = None,
        task_type: "Task.TaskTypes" = TaskTypes.training,
        tags: Sequence[str] | None = None,
        reuse_last_task_id: bool | str = True,
        output_uri: str | bool | None = None,
        auto_connect_frameworks: bool | dict[str, bool] = True,
        deferred_init: bool = False,
    ) -> "Task":
        return cls(id=uuid.uuid4().hex)

    @classmethod
    def get_task(
        cls,
        task_id: str | None = None,
        project_name: str | None = None,
        task_name: str | None = None,
    ) -> "Task":
        return cls(id=task_id)

    @staticmethod
    def running_locally() -> bool:
        return True

    def get_logger(self) -> Logger:
        return Logger(self)

    def close(self) -> None:
        pass

    def connect(self, mutable: Any, name: str | None = None) -> Any:
        return mutable

{unused}
'''

_INIT = '''
"""tasklog {version}: the real SDK as its users have it (it would talk to a server)."""

from tasklog.logger import Logger
from tasklog.task import Task

__version__ = "{version}"
__all__ = ["Logger", "Task"]
'''

_UNUSED_EVERYWHERE = [
    "add_tags",
    "get_parameters",
    "set_parameters",
    "get_reported_scalars",
    "execute_remotely",
    "set_name",
    "get_output_log_web_page",
]
_UNUSED_FROM_2_1 = ["upload_artifact", "set_comment"]


def _methods(names: list[str]) -> str:
    return "".join(
        f"    def {name}(self, *args: Any, **kwargs: Any) -> None:\n        pass\n\n"
        for name in names
    )


def tasklog_modules(version: str) -> dict[str, str]:
    """The sources of tasklog ``version`` (2.0, 2.1 or 2.2), path -> source."""
    later = version != "2.0"
    return {
        "tasklog/__init__.py": _INIT.format(version=version),
        "tasklog/backend_interface/__init__.py": "",
        "tasklog/backend_interface/task.py": _BACKEND.replace(
            "{unused}", _methods(_UNUSED_EVERYWHERE[:3])
        ),
        "tasklog/logger.py": _LOGGER,
        "tasklog/task.py": _TASK.replace(
            "{unused}", _methods(_UNUSED_EVERYWHERE[3:] + (_UNUSED_FROM_2_1 if later else []))
        ),
    }


def tasklog_wheelhouse(directory: Path) -> Path:
    """Wheels of tasklog 2.0, 2.1 and 2.2 (whose pin on ``tasklog-core==2.2`` nothing serves)."""
    for version in ("2.0", "2.1", "2.2"):
        requires = ("tasklog-core==2.2",) if version == "2.2" else ()
        build_wheel(directory, "tasklog", version, tasklog_modules(version), requires)
    return directory
