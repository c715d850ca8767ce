"""Where a W&B export goes, in W&B's own terms: the mode its environment variables name, the
directory it writes every run under (checked, since W&B falls back to ``/tmp`` without a
word), where it stages uploads, what it records of the process, and whether an online export
has a key where the SDK would look for one (without reading it)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final, Literal

from evalexport.spec import SettingError, named_option

__all__ = [
    "describing_the_evaluation",
    "missing_credentials",
    "mode_from_environment",
    "project_refusal",
    "staging_beside_the_run",
    "unwritable_reason",
]


def mode_from_environment(text: str) -> Literal["online", "offline"]:
    """``$WANDB_MODE`` as an export's mode (``dryrun`` is W&B's old name for offline, ``run``
    for online); :class:`SettingError` for one evalexport cannot export in (``disabled``)."""
    value = text.lower()
    if value in ("online", "run"):
        return "online"
    if value in ("offline", "dryrun"):
        return "offline"
    raise SettingError(
        f"WANDB_MODE={text!r}: evalexport exports online or offline (then wandb sync); "
        f"{'W&B logs nothing when disabled; ' if value == 'disabled' else ''}set WANDB_MODE to "
        f"online or offline, give {named_option('wandb_mode', 'online|offline')}, or unset it"
    )


PROJECT_FORBIDS: Final = "/\\#?%:"
"""The characters W&B refuses in a project name (its settings' ``validate_project``)."""
PROJECT_LIMIT: Final = 128
"""The longest project name W&B takes, in characters."""


def project_refusal(project: str, source: str) -> str | None:
    """Why W&B would refuse ``project`` as a project name (given by ``source``), or ``None``:
    found before anything is built, as W&B finds it only when its run starts."""
    found = sorted({char for char in project if char in PROJECT_FORBIDS})
    if found:
        entity = (
            f"; to name an entity as well, set WANDB_ENTITY or {named_option('wandb_entity')}"
            if "/" in found
            else ""
        )
        return (
            f"W&B project name {project!r} ({source}) holds {', '.join(map(repr, found))}, "
            f"which W&B refuses in a project name ({' '.join(PROJECT_FORBIDS)}){entity}"
        )
    if len(project) > PROJECT_LIMIT:
        return (
            f"W&B project name {project[:40]!r}... ({source}) is {len(project)} characters; "
            f"W&B takes at most {PROJECT_LIMIT}"
        )
    return None


def unwritable_reason(directory: Path) -> str | None:
    """W&B writes every run (online ones too) under ``<dir>/wandb``; when it cannot, it falls
    back to ``/tmp/wandb`` without a word. The directory is checked here instead.

    The SDK creates what is missing (Slurm scripts set ``WANDB_DIR=/scratch/$USER/wandb``
    before it exists), so the nearest directory that exists must be writable.
    """
    runs = directory / "wandb"
    existing = next(path for path in (runs, *runs.parents) if os.path.lexists(path))
    if existing.is_dir() and os.access(existing, os.W_OK | os.X_OK):
        return None
    if existing.is_dir():
        problem = f"{existing} is not writable"
    elif existing.exists():
        problem = f"{existing} is not a directory"
    else:
        problem = f"{existing} is a broken symlink"
    return (
        f"Cannot write the W&B run under {runs}: {problem}. Set WANDB_DIR to a directory "
        "you can write to (it may not exist yet), or export from one."
    )


def staging_beside_the_run(directory: Path) -> dict[str, str]:
    """Where W&B stages what it uploads (table artifacts among it): under the W&B directory the
    run is written to, unless ``$WANDB_DATA_DIR`` says otherwise, never the user's
    ``~/.local/share/wandb`` (an offline run's tables wait there for ``wandb sync``)."""
    if os.environ.get("WANDB_DATA_DIR"):
        return {}
    return {"WANDB_DATA_DIR": str(directory / "wandb" / "data")}


def describing_the_evaluation(rollouts: Path) -> dict[str, str]:
    """What W&B records of the process that logs: evalexport's command as its program, and
    neither the worker's paths, its Python nor its environment's requirements (the
    evaluation's own config is the run's config). Each setting under the names of the wandb
    releases of the matrix: ``WANDB__*`` before 0.19, ``WANDB_X_*`` after."""
    program = f"evalexport wandb +rollouts_jsonl_fpath={rollouts}"
    environment = {"WANDB_PROGRAM": program}
    for name in ("DISABLE_META", "SAVE_REQUIREMENTS", "DISABLE_MACHINE_INFO"):
        value = "false" if name == "SAVE_REQUIREMENTS" else "true"
        environment[f"WANDB__{name}"] = value
        environment[f"WANDB_X_{name}"] = value
    return environment


def missing_credentials(key_given: bool) -> str | None:
    """Why an online export would be refused for want of an API key, or ``None``: looked for
    where the SDK looks (``WANDB_API_KEY``, an identity token file, the ``api_key`` of its
    settings files, the ``.netrc`` entry of its server), without reading the key itself."""
    if key_given:
        return None
    if os.environ.get("WANDB_API_KEY") or os.environ.get("WANDB_IDENTITY_TOKEN_FILE"):
        return None
    from urllib.parse import urlparse

    base_url = os.environ.get("WANDB_BASE_URL") or "https://api.wandb.ai"
    host = urlparse(base_url).hostname or base_url
    home = Path.home()
    config_dir = Path(os.environ.get("WANDB_CONFIG_DIR") or home / ".config" / "wandb")
    for settings in (config_dir / "settings", Path.cwd() / "wandb" / "settings"):
        if _mentions(settings, "api_key"):
            return None
    netrcs = [Path(os.environ["NETRC"])] if os.environ.get("NETRC") else []
    netrcs += [home / ".netrc", home / "_netrc"]
    if any(_netrc_has(path, host) for path in netrcs):
        return None
    return (
        f"No W&B API key for an online export to {host}: WANDB_API_KEY is not set, "
        f"{named_option('wandb_api_key')} was not given, and no `wandb login` was found (no "
        f"api_key in {config_dir / 'settings'}, no {host} entry in {netrcs[0]}). Set "
        "WANDB_API_KEY, run `wandb login`, or export offline with "
        f"{named_option('wandb_mode', 'offline')} (then `wandb sync`)."
    )


def _mentions(path: Path, key: str) -> bool:
    try:
        return any(line.split("=")[0].strip() == key for line in path.read_text().splitlines())
    except (OSError, UnicodeDecodeError):
        return False


def _netrc_has(path: Path, host: str) -> bool:
    import netrc

    try:
        return netrc.netrc(str(path)).authenticators(host) is not None
    except (OSError, netrc.NetrcParseError):
        return False
