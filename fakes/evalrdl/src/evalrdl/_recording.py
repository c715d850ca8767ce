"""Recording for fake SDKs: every call the code under test makes, and every attribute it reads
back, as the contract checks read them (:mod:`evalexport.contracts.recorded`).

A fake runs inside the worker's environment, where evalexport is not installed, so a fake
carries this module as a file of its own (``<package>/_recording.py``; ``evalexport contract
scaffold`` writes it, and ``fakes/evalrdl`` holds one that a test keeps identical to this
one). It needs nothing but the standard library::

    from tinytrack._recording import Recorder

    record = Recorder("tinytrack")  # logs to $TINYTRACK_FAKE_CALL_LOG when it is set


    @record.reads("tinytrack.Run")  # what the worker reads on a Run, and compares it with
    class Run: ...


    class Client:
        @record.calls("tinytrack.Client")  # a class: its constructor, ``self`` left out
        def __init__(self, project: str) -> None: ...

        @record.calls("tinytrack.Client.log")  # a method by class path: ``self`` recorded
        def log(self, metrics: dict[str, float]) -> None: ...

A call is recorded as ``{"name", "args", "kwargs", "site", "defaulted"}`` and a read as
``{"name", "read", "site"}`` (with ``"compared_with"`` when the worker compares a text it read
with another): one JSON line each. ``name`` is the dotted path of the SDK's surface. The
arguments are bound as the surface's manifest has the signature: a constructor (``__init__``
recorded under the class's path) and a method reached through an instance (a path with
``()``, ``evalrdl.Client().uploads.upload``) are recorded without ``self``; a method named by
its class path (``tinytrack.Client.log``) with it, as the manifest's signature of the plain
function has it; a classmethod (``clearml.Task.init``) without ``cls``, as a call on the class
passes it. ``defaulted`` maps each parameter the caller left to its default to the default as
the manifests write it (:func:`default_text`: an ``Enum`` member as
``module.Type.MEMBER``). ``site`` is the caller's ``file:line``, the first frame outside the
fake and the standard library; the worker's temporary copy of its body is named by the body's
own source file (``$EVALEXPORT_WORKER_BODY``, which the launcher sets).

Nothing is recorded while the log variable is unset, so the same fake runs quietly elsewhere.
"""

from __future__ import annotations

import enum
import functools
import inspect
import json
import os
import re
import sys
import sysconfig
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

__all__ = ["WORKER_BODY_VARIABLE", "Recorder", "default_text"]

WORKER_BODY_VARIABLE = "EVALEXPORT_WORKER_BODY"
"""Set by evalexport's launcher in a worker's environment: the worker body's source file."""
_WORKER_BODY_COPY = "evalexport_worker_body.py"

F = TypeVar("F", bound=Callable[..., Any])
C = TypeVar("C", bound=type)


class Recorder:
    """Records what the code under test does with one fake SDK.

    ``sdk``: the SDK's package name; the log goes to ``$<SDK>_FAKE_CALL_LOG`` (upper case) or
    to ``log_variable``. The fake's own package (whose frames are not call sites) is the one
    that makes the recorder, unless ``package`` names its directory.
    """

    def __init__(
        self, sdk: str, *, log_variable: str | None = None, package: str | None = None
    ) -> None:
        self.sdk = sdk
        self.log_variable = log_variable or f"{sdk.upper()}_FAKE_CALL_LOG"
        self._package = str(Path(package).resolve()) if package else _caller_package()
        paths = sysconfig.get_paths()
        self._stdlib = str(Path(paths["stdlib"]).resolve())
        self._installed = {str(Path(paths[key]).resolve()) for key in ("purelib", "platlib")}

    # What to record -------------------------------------------------------------------------

    def calls(self, name: str) -> Callable[[F], F]:
        """Decorate a function, a method or a constructor (``__init__``) recorded as ``name``.

        A classmethod or staticmethod is recorded as a call on the class passes it, without
        ``cls``: decorate it above ``@classmethod`` (``@record.calls("clearml.Task.init")``
        then ``@classmethod``), or below it with ``cls`` as the first parameter's name."""

        def decorate(function: F) -> F:
            if isinstance(function, classmethod):
                return cast("F", classmethod(record(function.__func__, drops_self=True)))
            if isinstance(function, staticmethod):
                return cast("F", staticmethod(record(function.__func__, drops_self=False)))
            return record(function, drops_self=_drops_self(function, name))

        def record(function: F, *, drops_self: bool) -> F:
            signature = inspect.signature(function)

            @functools.wraps(function)
            def wrapper(*args: object, **kwargs: object) -> Any:
                if self._log_path() is not None and (site := self._site()) is not None:
                    try:
                        passed = signature.bind(*args, **kwargs).arguments
                    except TypeError:
                        passed = {}
                    secrets = _secret_values(passed)
                    self._write(
                        {
                            "name": name,
                            "args": _jsonable(list(args[1:] if drops_self else args), secrets),
                            "kwargs": _jsonable(kwargs, secrets),
                            "site": site,
                            "defaulted": {
                                p.name: default_text(p.default)
                                for p in signature.parameters.values()
                                if p.default is not inspect.Parameter.empty and p.name not in passed
                            },
                        }
                    )
                return function(*args, **kwargs)

            return cast("F", wrapper)

        return decorate

    def reads(self, name: str) -> Callable[[C], C]:
        """Decorate a class: record each public attribute the code under test reads on its
        instances as read of ``name``, and what it compares a text attribute with."""
        recorder = self

        def decorate(cls: C) -> C:
            inherited = cast("Callable[[Any, str], Any]", cls.__getattribute__)

            def __getattribute__(instance: Any, attribute: str) -> Any:
                value = inherited(instance, attribute)
                if attribute.startswith("_") or recorder._log_path() is None:
                    return value
                site = recorder._site()
                if site is None:
                    return value
                recorder._write({"name": name, "read": attribute, "site": site})
                if type(value) is str:
                    return _ComparedText(value, recorder, name, attribute)
                return value

            cls.__getattribute__ = __getattribute__  # type: ignore[assignment]
            return cls

        return decorate

    # How it is written ----------------------------------------------------------------------

    def _log_path(self) -> str | None:
        return os.environ.get(self.log_variable) or None

    def _write(self, record: dict[str, Any]) -> None:
        path = self._log_path()
        if path is not None:
            with Path(path).open("a", encoding="utf-8") as log:
                log.write(json.dumps(record) + "\n")

    def _site(self, depth: int = 2) -> str | None:
        """``file:line`` of the code under test that called into the fake, skipping generated
        code and the standard library (a dataclass's ``__repr__`` reads for whoever called
        it); ``None`` when that caller is the fake itself, whose own calls are not the
        worker's."""
        frame: Any = sys._getframe(depth)
        while frame is not None and (
            frame.f_code.co_filename.startswith("<") or self._in_stdlib(frame.f_code.co_filename)
        ):
            frame = frame.f_back
        if frame is None:
            return None
        filename = frame.f_code.co_filename
        if str(Path(filename).resolve()).startswith(self._package + os.sep):
            return None
        if Path(filename).name == _WORKER_BODY_COPY and (
            source := os.environ.get(WORKER_BODY_VARIABLE)
        ):
            filename = source
        return f"{filename}:{frame.f_lineno}"

    def _in_stdlib(self, filename: str) -> bool:
        path = str(Path(filename).resolve())
        return path.startswith(self._stdlib + os.sep) and not any(
            path.startswith(installed + os.sep) for installed in self._installed
        )


class _ComparedText(str):
    """A text attribute that records what the code under test compares it with."""

    _recorder: Recorder
    _owner: str
    _attribute: str

    def __new__(cls, value: str, recorder: Recorder, owner: str, attribute: str) -> _ComparedText:
        text = super().__new__(cls, value)
        text._recorder, text._owner, text._attribute = recorder, owner, attribute
        return text

    def _compared(self, other: object) -> None:
        if isinstance(other, str) and (site := self._recorder._site(3)) is not None:
            self._recorder._write(
                {
                    "name": self._owner,
                    "read": self._attribute,
                    "compared_with": str(other),
                    "site": site,
                }
            )

    def __eq__(self, other: object) -> bool:
        self._compared(other)
        return str.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        self._compared(other)
        return str.__ne__(self, other)

    __hash__ = str.__hash__


def _drops_self(function: Callable[..., Any], name: str) -> bool:
    """Whether the recorded arguments leave out the first one, as the manifest's signatures
    have them: a constructor, a method reached through an instance (``()`` in its path) and
    a classmethod (its first parameter ``cls``; a call on the class passes none)."""
    qualified = getattr(function, "__qualname__", "")
    is_method = "." in qualified and "<locals>" not in qualified.rsplit(".", 1)[0]
    if not is_method:
        return False
    first = next(iter(inspect.signature(function).parameters), None)
    if first == "cls":
        return True
    if first != "self":
        return False  # a staticmethod's: every argument is the caller's
    return function.__name__ == "__init__" or "()" in name


def default_text(value: object) -> str:
    """A default as the manifests write it (``evalexport.contracts.surface_extractor``'s
    ``default_text``, which a test keeps this the same as): a literal by ``repr``, an ``Enum``
    member as ``module.Type.MEMBER``, anything else as ``<module.Type>``."""
    if type(value) is int and value == os.getpid():
        return "<process id>"
    literal = (type(None), bool, int, float, complex, str, bytes)
    if isinstance(value, literal) or (
        isinstance(value, tuple | frozenset) and all(isinstance(v, literal) for v in value)
    ):
        return repr(value)
    kind = type(value)
    qualified = f"{kind.__module__}.{kind.__qualname__}"
    if isinstance(value, enum.Enum):
        return f"{qualified}.{value.name}"
    return f"<{qualified}>"


def _caller_package() -> str:
    """The directory of the top-level package of the module that made the recorder."""
    frame: Any = sys._getframe(2)
    path = Path(frame.f_globals.get("__file__") or ".").resolve().parent
    while (path.parent / "__init__.py").exists():
        path = path.parent
    return str(path)


_SECRET_NAME = re.compile(r"token|passw|secret|credential|auth|api_?key", re.IGNORECASE)
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]{0,31}://[^:/?#@\s]*:)[^\s/]*(?=@)")
_MASK = "****"


def _secret_values(passed: dict[str, object]) -> list[str]:
    """The text passed to a parameter named like a secret (``token``, ``api_key``)."""
    return [
        value
        for key, value in passed.items()
        if _SECRET_NAME.search(key) and isinstance(value, str) and value
    ]


def _jsonable(value: object, secrets: Sequence[str] = ()) -> Any:
    """``value`` as JSON the log holds: never a secret the call was given (a parameter named
    like one, a URL's password)."""
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, _MASK)
        return _URL_PASSWORD.sub(lambda match: match["head"] + _MASK, value)
    if isinstance(value, int | float | bool) or value is None:
        return value
    if isinstance(value, dict):
        return {
            str(k): _MASK
            if _SECRET_NAME.search(str(k)) and isinstance(v, str) and v
            else _jsonable(v, secrets)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_jsonable(v, secrets) for v in value]
    return _jsonable(str(value), secrets)
