"""The config a run was launched with, rebuilt from its files and overrides (SPEC §2).

NeMo Gym runs save no config of their own. ``evalexport save-config`` rebuilds it the way the
run was launched: the YAML files merged in order with OmegaConf (later files win, mappings merge
key by key, lists are replaced), then the command line's Hydra-style overrides:

* ``key=value`` sets a key the files define (a typo is refused, as Hydra refuses it);
* ``+key=value`` adds a key they do not define;
* ``++key=value`` sets a key whether or not it is defined;
* ``~key`` removes a key.

Values parse as YAML, as Hydra parses them; interpolations such as ``${oc.env:HF_TOKEN}`` stay
as written. A file that lists others under ``config_paths`` pulls them in as NeMo Gym does: each
included file merges before the file that named it (which overrides it), includes of includes
likewise, and a path is looked up beside the current directory, then beside the including
file. NeMo Gym's ``env.yaml`` (merged after the config files) is named last among the files. The result is then masked and saved by :func:`evalexport.masking.save_run_config`.
OmegaConf is imported only here.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalexport.masking import shown_override

__all__ = ["LaunchConfigError", "merge_launch_config"]


class LaunchConfigError(ValueError):
    """A config file or override cannot be merged; the message names it and says why.

    ``usage`` is true when the command line itself is wrong (an override's syntax or key).
    """

    def __init__(self, message: str, *, usage: bool = False) -> None:
        super().__init__(message)
        self.usage = usage


_MAX_CONFIG_BYTES = 64 * 1024 * 1024
"""The largest config file read (as the saved config it becomes: a real one is kilobytes)."""


def _load(path: Path) -> Any:
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException
    from yaml import YAMLError

    from evalexport.host.files import RunFileError, read_bounded
    from evalexport.ingress import DocumentRefused, load_yaml

    try:
        data = read_bounded(path, _MAX_CONFIG_BYTES, "Config file", "is it a config?")
    except RunFileError as error:  # missing, unreadable, a FIFO, a directory, too large
        raise LaunchConfigError(str(error)) from None
    try:  # the ingress gate measures it before OmegaConf builds it (an alias bomb, say)
        load_yaml(data, path, what="config file")
    except DocumentRefused as refused:
        if not refused.malformed:
            raise LaunchConfigError(str(refused)) from None
    try:
        loaded = OmegaConf.create(data.decode("utf-8", "replace"))
    except (YAMLError, OmegaConfBaseException) as error:
        raise LaunchConfigError(
            f"Config file {path} is not valid YAML: {_parser_words(error)}"
        ) from None
    if not OmegaConf.is_dict(loaded):
        raise LaunchConfigError(f"Config file {path} holds a list, not a mapping of options")
    return loaded


def _parser_words(error: Exception) -> str:
    """The YAML parser's own words, with the line and column it stopped at: ``found duplicate
    key datasets (line 68, column 1), while constructing a mapping (line 1, column 1)``."""
    from yaml import MarkedYAMLError

    if isinstance(error, MarkedYAMLError) and error.problem:
        said = [_at(error.problem, error.problem_mark)]
        if error.context:
            said.append(_at(error.context, error.context_mark))
        return ", ".join(said)
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return "; ".join(lines) or type(error).__name__


def _at(words: str, mark: Any) -> str:
    if mark is None:
        return words
    return f"{words} (line {mark.line + 1}, column {mark.column + 1})"


def _apply(config: Any, override: str) -> Any:
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException
    from yaml import YAMLError

    if override.startswith("~"):
        key = override[1:].split("=", 1)[0]
        parent, _, leaf = key.rpartition(".")
        node = OmegaConf.select(config, parent) if parent else config
        if node is None or leaf not in node:
            raise LaunchConfigError(
                f"override {shown_override(override)!r}: there is no {key} to remove", usage=True
            )
        del node[leaf]
        return config
    forced, added = override.startswith("++"), override.startswith("+")
    body = override.lstrip("+")
    key, separator, value = body.partition("=")
    if not separator or not key:
        raise LaunchConfigError(
            f"override {shown_override(override)!r} has no '='; write key=value", usage=True
        )
    parent, _, leaf = key.rpartition(".")
    node = OmegaConf.select(config, parent, default=None) if parent else config
    exists = OmegaConf.is_dict(node) and leaf in node
    if not forced and added and exists:
        raise LaunchConfigError(
            f"override {shown_override(override)!r}: {key} is already set by the config files; "
            f"write {key}=... to change it (or ++{key}=...)",
            usage=True,
        )
    if not forced and not added and not exists:
        raise LaunchConfigError(
            f"override {shown_override(override)!r}: the config files do not set {key}; "
            f"write +{key}=... to add it",
            usage=True,
        )
    try:
        return OmegaConf.merge(config, OmegaConf.from_dotlist([f"{key}={value}"]))
    except YAMLError as error:  # a value is read as YAML: "[1,2"
        raise LaunchConfigError(
            f"override {shown_override(override)!r}: its value is not YAML: {_parser_words(error)}",
            usage=True,
        ) from None
    except OmegaConfBaseException as error:
        raise LaunchConfigError(
            f"override {shown_override(override)!r}: {str(error).splitlines()[0]}", usage=True
        ) from None


_INCLUDES = "config_paths"


def _with_includes(path: Path, seen: tuple[Path, ...]) -> list[object]:
    """``path``'s includes (recursively, in merge order), then ``path`` itself."""
    from omegaconf import OmegaConf

    resolved = path.resolve()
    if resolved in seen:
        chain = " -> ".join(str(item) for item in (*seen, resolved))
        raise LaunchConfigError(f"config_paths include each other in a cycle: {chain}")
    config = _load(path)
    included = config.get(_INCLUDES) if _INCLUDES in config else None
    if included is None:
        return [config]
    if not OmegaConf.is_list(included):
        raise LaunchConfigError(f"{path}: config_paths must be a list of paths")
    configs: list[object] = []
    for entry in included:
        candidates = [Path(str(entry)), path.parent / str(entry)]
        found = next((candidate for candidate in candidates if candidate.is_file()), None)
        if found is None:
            raise LaunchConfigError(
                f"{path}: config_paths entry {entry!r} was not found "
                f"(looked in {Path.cwd()} and {path.parent})"
            )
        configs += _with_includes(found, (*seen, resolved))
    return [*configs, config]


def merge_launch_config(
    files: Sequence[str | os.PathLike[str]], overrides: Sequence[str] = ()
) -> dict[str, object]:
    """The launched config: ``files`` merged in order, then ``overrides``; unresolved."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    if not files:
        raise LaunchConfigError(
            "name at least one config file the run was launched with", usage=True
        )
    try:
        config = OmegaConf.merge(
            *(loaded for path in files for loaded in _with_includes(Path(path), ()))
        )
    except OmegaConfBaseException as error:
        raise LaunchConfigError(
            f"cannot merge the config files: {str(error).splitlines()[0]}"
        ) from None
    for override in overrides:
        config = _apply(config, override)
    container = OmegaConf.to_container(config, resolve=False)
    assert isinstance(container, dict)
    return {str(key): value for key, value in container.items()}
