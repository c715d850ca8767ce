"""``evalexport save-config``: a NeMo Gym run's masked config, from what it was launched with."""

from __future__ import annotations

import json
import sys

from evalexport.cli._args import FAILED, OK, Arguments, UsageError

SUMMARY = (
    "save a run's masked config from the files and overrides it was launched "
    "with: 'save-config ROLLOUTS CONFIG.yaml [...] [key=value ...]'"
)
FLAGS = ("--json",)
VALUE_FLAGS: tuple[str, ...] = ()

_SAVE_CONFIG_USAGE = """usage: evalexport save-config ROLLOUTS CONFIG.yaml [CONFIG.yaml ...] [key=value ...]

Write <stem>_resolved_config.yaml beside ROLLOUTS for a run made without one (NeMo Gym saves
none): the config files merged in order, then the overrides, as the run was launched
(key=value sets a key the files define, +key=value adds one, ++key=value sets either way,
~key removes one). Interpolations such as ${oc.env:HF_TOKEN} stay as written; every secret is
masked. An existing saved config is never overwritten: delete it to save it again."""


def run(arguments: Arguments, rest: list[str]) -> int:
    """``evalexport save-config ROLLOUTS CONFIG.yaml [...] [key=value ...]``."""
    from evalexport.launch_config import LaunchConfigError, merge_launch_config
    from evalexport.masking import find_unmasked_secrets, save_run_config
    from evalexport.run import RunArtifacts

    if arguments.help:
        print(_SAVE_CONFIG_USAGE)
        return OK
    if len(rest) < 2:
        raise UsageError("save-config takes the run's rollouts file and its config files")
    rollouts, *tokens = rest
    files = [token for token in tokens if "=" not in token and not token.startswith(("~", "+"))]
    overrides = [token for token in tokens if token not in files]
    run = RunArtifacts.from_rollouts_path(rollouts)

    def failed(message: str) -> int:
        if arguments.json:
            print(json.dumps({"status": "failed", "message": message}))
        print(f"failed: {message}", file=sys.stderr if arguments.json else sys.stdout)
        return FAILED

    if not run.rollouts.is_file():
        return failed(f"Rollouts file not found: {run.rollouts}")
    if run.saved_config.exists():
        return failed(f"{run.saved_config} already exists; delete it to save the config again")
    try:
        config = merge_launch_config(files, overrides)
    except LaunchConfigError as error:
        if error.usage:
            raise UsageError(f"save-config: {error}") from None
        return failed(str(error))
    masked = find_unmasked_secrets(config)
    path = save_run_config(config, run.rollouts)
    message = f"saved {path}" + (
        f" ({len(masked)} secret value{'' if len(masked) == 1 else 's'} masked: "
        f"{', '.join(masked)})"
        if masked
        else ""
    )
    if arguments.json:
        print(json.dumps({"status": "succeeded", "message": message, "path": str(path)}))
    else:
        print(f"succeeded: {message}")
    return OK
