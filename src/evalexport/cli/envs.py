"""``evalexport envs``: list and remove the cached SDK environments."""

from __future__ import annotations

import json
from typing import Any

from evalexport._format import human_size
from evalexport.cli._args import OK, Arguments, usage_error

SUMMARY = "list the cached SDK environments; 'envs remove NAME' or 'envs remove --all'"
FLAGS = ("--json", "--all")
VALUE_FLAGS: tuple[str, ...] = ()


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
        print(
            "usage: evalexport envs [--json]\n       evalexport envs remove NAME | --all\n\n"
            "NAME is an environment's directory name, or an exporter name for all of its "
            f"environments. Environments live in {environments_root()}."
        )
        return OK
    if rest[:1] == ["remove"]:
        names = rest[1:]
        if remove_all == bool(names):
            return usage_error("'envs remove' takes one NAME or --all")
        chosen = (
            environments
            if remove_all
            else [env for env in environments if names[0] in (env.path.name, env.exporter)]
        )
        if not chosen:
            known = ", ".join(env.path.name for env in environments) or "none"
            return usage_error(f"no environment named {names[0]!r}; environments: {known}")
        for environment in chosen:
            remove_environment(environment)
            print(f"removed {environment.path}")
        return OK
    if rest:
        return usage_error(f"unknown 'envs' argument {rest[0]!r}; use 'envs' or 'envs remove'")
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
