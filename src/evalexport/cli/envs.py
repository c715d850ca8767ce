"""``evalexport envs``: list, remove, and run the tools of the cached SDK environments.

``evalexport envs run NAME TOOL [ARGS ...]`` runs a tool an SDK installs (``mlflow ui``,
``mlflow server``, ``wandb sync``) from the environment evalexport exports with, so a user
needs no SDK of their own: NAME is an exporter (its environment for the default requirement,
or for ``--requirement REQ``, built when missing) or an environment's directory name
(``evalexport envs`` lists them). Everything after TOOL is the tool's own, passed as it is.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalexport.cli._args import FAILED, OK, Arguments, UsageError
from evalexport.progress import human_size

if TYPE_CHECKING:
    from evalexport.isolation.environments import Environment

SUMMARY = (
    "list the cached SDK environments; 'envs remove NAME | --all'; "
    "'envs run NAME TOOL ...' runs an SDK's own tool (mlflow ui, wandb sync)"
)
FLAGS = ("--json", "--all")
VALUE_FLAGS: tuple[str, ...] = ()


_HELP = """usage: evalexport envs [--json]
       evalexport envs remove NAME | --all
       evalexport envs run NAME [--requirement REQ ...] TOOL [ARGS ...]

remove: NAME is an environment's directory name, or an exporter name for all of its
environments.

run: run TOOL, a command the SDK installs or the environment's own python, from an SDK
environment, with ARGS as they are. NAME
is an exporter (the environment of its default requirement, or of --requirement REQ; built if
missing) or an environment's directory name. For example:
  evalexport envs run mlflow mlflow ui --backend-store-uri sqlite:///$PWD/mlruns.db
  evalexport envs run mlflow mlflow server --host 127.0.0.1 --port 5000
  evalexport envs run wandb wandb sync wandb/offline-run-20260826_101500-abc123
  evalexport envs run mlflow python read_my_runs.py
The tool's exit code is the command's.

Environments live in {root}."""


def run(arguments: Arguments, rest: list[str]) -> int:
    """``evalexport envs [--json]``, ``evalexport envs remove NAME | --all``."""
    from evalexport.isolation.environments import (
        environments_root,
        list_environments,
        remove_environment,
    )

    remove_all, as_json = arguments.all, arguments.json
    environments = list_environments()
    if arguments.help:
        print(_HELP.format(root=environments_root()))
        return OK
    if rest[:1] == ["remove"]:
        names = rest[1:]
        if remove_all == bool(names):
            raise UsageError("'envs remove' takes one NAME or --all")
        chosen = (
            environments
            if remove_all
            else [env for env in environments if names[0] in (env.path.name, env.exporter)]
        )
        if not chosen:
            known = ", ".join(env.path.name for env in environments) or "none"
            raise UsageError(f"no environment named {names[0]!r}; environments: {known}")
        for environment in chosen:
            remove_environment(environment)
            print(f"removed {environment.path}")
        return OK
    if rest:
        raise UsageError(
            f"unknown 'envs' argument {rest[0]!r}; use 'envs', 'envs remove' or 'envs run'"
        )
    rows: list[dict[str, Any]] = [
        {
            "name": env.path.name,
            "exporter": env.exporter,
            "requirements": env.requirements,
            "python": env.record.get("python_version"),
            "size_bytes": env.size_bytes(),
            "last_used": (
                used.isoformat(timespec="seconds") if (used := env.last_used()) else None
            ),
            "path": str(env.path),
        }
        for env in environments
    ]
    if as_json:
        print(json.dumps(rows, indent=2))
    elif not rows:
        print(f"No SDK environments in {environments_root()}.")
    else:
        for row in rows:
            print(
                f"{row['name']}  {row['exporter']}  {' '.join(row['requirements'])}  "
                f"python {row['python']}  {human_size(row['size_bytes'])}  "
                f"last used {row['last_used'] or 'never'}\n    {row['path']}"
            )
    return OK


def run_tool(tokens: list[str]) -> int:
    """``evalexport envs run NAME [--requirement REQ ...] TOOL [ARGS ...]``: replace this
    process with TOOL of the chosen environment (so a Ctrl-C, a SIGTERM and the exit code are
    the tool's own, and nothing of evalexport is left running); the exit code of a refusal."""
    import logging

    from evalexport.isolation.environments import environments_root

    if not tokens:
        raise UsageError("'envs run' needs NAME and TOOL: evalexport envs run NAME TOOL [ARGS ...]")
    if tokens[0] in ("-h", "--help"):
        print(_HELP.format(root=environments_root()))
        return OK
    name, *rest = tokens
    requirements: list[str] = []
    while rest and rest[0].split("=", 1)[0] == "--requirement":
        flag, _, value = rest.pop(0).partition("=")
        if not value:
            if not rest:
                raise UsageError(f"envs run: {flag} needs a requirement (e.g. mlflow==2.22.1)")
            value = rest.pop(0)
        requirements.append(value)
    logging.basicConfig(level=logging.INFO, format="evalexport: %(message)s", stream=sys.stderr)
    try:
        environment = _environment(name, tuple(requirements))
    except LookupError as error:
        raise UsageError(f"envs run: {error}") from None
    except RuntimeError as error:  # the build failed: the installer's own words
        print(f"evalexport: error: {error}", file=sys.stderr)
        return FAILED
    tools = _tools(environment.path)
    if not rest:
        raise UsageError(
            f"envs run {name}: name the tool to run; {environment.path.name} has "
            f"{', '.join(tools) or 'none'}"
        )
    tool, *arguments = rest
    if tool == "python":  # the environment's own interpreter: to read what an export wrote
        tools = [*tools, "python"]
    if tool not in tools:
        raise UsageError(
            f"envs run {name}: {tool!r} is not a tool of {environment.path.name}; it has "
            f"{', '.join(tools) or 'none'}, and python (its own interpreter)"
        )
    executable = environment.path / "bin" / tool
    environ = {
        **os.environ,
        "VIRTUAL_ENV": str(environment.path),
        "PATH": os.pathsep.join([str(executable.parent), os.environ.get("PATH", "")]),
    }
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(executable, [tool, *arguments], environ)
    except OSError as error:  # execve returns only by raising
        print(f"evalexport: error: cannot run {executable}: {error.strerror}", file=sys.stderr)
    return FAILED


def _environment(name: str, requirements: tuple[str, ...]) -> Environment:
    """The environment NAME means: an environment's directory name, else an exporter's
    environment for ``requirements`` (its default requirement when none), built if missing."""
    from evalexport.isolation.environments import (
        EnvironmentBuildError,
        EnvironmentSpec,
        ensure_environment,
        list_environments,
    )
    from evalexport.spec.registry import (
        ExporterLoadError,
        UnknownExporterError,
        exporter_class,
    )

    if not requirements:
        for environment in list_environments():
            if environment.path.name == name:
                return environment
    try:
        chosen = exporter_class(name)
    except (UnknownExporterError, ExporterLoadError) as error:
        known = ", ".join(env.path.name for env in list_environments()) or "none built yet"
        raise LookupError(
            f"{name!r} is neither an exporter with an SDK nor an environment ({known}): {error}"
        ) from None
    if chosen.sdk is None:
        raise LookupError(f"the {name} exporter runs no SDK of its own, so it has no environment")
    if not requirements:
        default = chosen.Config.model_fields["requirement"].get_default()
        requirements = (default,) if isinstance(default, str) else tuple(default)
    try:
        return ensure_environment(EnvironmentSpec(chosen.name, requirements))
    except EnvironmentBuildError as error:
        raise RuntimeError(f"cannot build the {chosen.name} environment: {error}") from None


_NOT_TOOLS = frozenset({"activate", "deactivate", "pip", "pip3", "wheel", "python", "python3"})


def _tools(environment: Path) -> list[str]:
    """The commands an environment's packages installed (``mlflow``, ``wandb``), not its
    Python, pip or activation scripts."""
    directory = environment / "bin"
    return sorted(
        path.name
        for path in directory.iterdir()
        if path.is_file()
        and os.access(path, os.X_OK)
        and path.name not in _NOT_TOOLS
        and not path.name.startswith(("python", "pip", "activate"))
    )
