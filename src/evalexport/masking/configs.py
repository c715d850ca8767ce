"""A run's config masked (SPEC §2): :func:`mask_config` is pure, and
:func:`save_run_config` writes the masked config where a run keeps it.

The saved config is the only config an exporter ever reads, so masking it once, when the run
is saved, keeps live secrets out of every backend; every export masks it again.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path, PurePath
from typing import Any

from evalexport.masking.rules import MASK, looks_like_credential
from evalexport.masking.values import mask_value

__all__ = [
    "SAVED_CONFIG_SUFFIX",
    "find_unmasked_secrets",
    "mask_config",
    "mask_config_reporting",
    "save_run_config",
    "saved_config_path",
]


def _is_sequence(value: object) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def mask_config(config: Any) -> Any:
    """``config`` masked (SPEC §2): :func:`~evalexport.masking.values.mask_value`, the one
    masking function, with no secret known beyond the rules. Pure and idempotent; the input
    is never changed; keys, list lengths, numbers, booleans and ``None`` are kept, so a
    reader can still tell a set secret from an unset one."""
    return mask_value(config)


def find_unmasked_secrets(config: object, _path: str = "") -> list[str]:
    """Dotted paths of the values that masking would change: live secrets left in a config."""
    return mask_config_reporting(config, _path)[1]


def mask_config_reporting(config: object, _path: str = "") -> tuple[Any, list[str]]:
    """:func:`mask_config`, and the dotted paths of the values it changed that looked like
    live credentials, from one pass of masking: what an export sends and what it warns of.
    A placeholder under a secret key (NeMo Gym's ``policy_api_key: dummy``, ``EMPTY``,
    ``none``) is masked as every value there is, but is no live secret to warn of."""
    masked = mask_config(config)
    return masked, list(_differences(config, masked, _path))


def _differences(original: Any, masked: Any, path: str) -> Iterator[str]:
    """The paths where ``masked`` differs from ``original``, named by the masked keys (a key
    that held a secret is never shown as it was)."""
    if masked is original:
        return
    if isinstance(original, Mapping):
        for (key, value), (shown, masked_value) in zip(
            original.items(), masked.items(), strict=True
        ):
            where = f"{path}.{shown}" if path else str(shown)
            if shown != key:
                yield where
            else:
                yield from _differences(value, masked_value, where)
    elif _is_sequence(original):
        for index, (value, masked_value) in enumerate(zip(original, masked, strict=True)):
            yield from _differences(value, masked_value, f"{path}[{index}]")
    elif original != masked and not (
        isinstance(original, str) and masked == MASK and not looks_like_credential(original)
    ):
        yield path


SAVED_CONFIG_SUFFIX = "_resolved_config.yaml"


def saved_config_path(rollouts_jsonl_fpath: str | os.PathLike[str]) -> Path:
    """Where a run's saved config lives, beside its rollouts file (SPEC §1): the one rule
    :class:`~evalexport.run.RunArtifacts` and :func:`save_run_config` both follow,
    ``<dir>/<stem>_resolved_config.yaml`` for ``<dir>/<stem>.jsonl``; absolute, never resolved,
    so a symlinked rollouts file does not move the run."""
    rollouts = Path(rollouts_jsonl_fpath).absolute()
    return rollouts.parent / f"{rollouts.stem}{SAVED_CONFIG_SUFFIX}"


def _to_yaml_data(value: Any, path: str) -> Any:
    if isinstance(value, Mapping):
        return {
            key: _to_yaml_data(item, f"{path}.{key}" if path else str(key))
            for key, item in value.items()
        }
    if _is_sequence(value):
        return [_to_yaml_data(item, f"{path}[{index}]") for index, item in enumerate(value)]
    if isinstance(value, PurePath):
        return str(value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise TypeError(
        f"Cannot save the run config: {path or '<root>'} is a {type(value).__name__}, "
        "which YAML cannot carry; convert it to a string, number, list or mapping first"
    )


def save_run_config(
    config: Mapping[str, object], rollouts_jsonl_fpath: str | os.PathLike[str]
) -> Path:
    """Write the run's config, unresolved and masked, beside its rollouts file.

    Interpolations such as ``${oc.env:HF_TOKEN}`` are kept as written: pass the config before
    resolving it. The file is written atomically; the path written is returned.
    """
    import yaml

    from evalexport.host.files import write_text_atomically

    data = _to_yaml_data(mask_config(config), "")
    target = saved_config_path(rollouts_jsonl_fpath)
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False)
    write_text_atomically(target, text)
    return target
