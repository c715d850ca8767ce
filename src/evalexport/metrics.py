"""Flattening aggregate metrics into names a tracking system can store (SPEC §1).

Shared by every tracking exporter so MLflow, W&B and the dry run agree on every name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, final

__all__ = ["FlatMetrics", "flatten_metrics"]


@final
@dataclass(frozen=True)
class FlatMetrics:
    """Numeric metrics and text values (tags or summary entries), by flattened name."""

    metrics: dict[str, float] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    values: dict[str, bool | int | float | str] = field(default_factory=dict)
    """Every metric and text with its value as the file holds it (``True`` stays ``True``):
    what W&B's summary takes, as NeMo Gym logs it."""


def flatten_metrics(aggregate: Iterable[Mapping[str, Any]]) -> FlatMetrics:
    """``<agent>/<metric>`` for ``agent_metrics``, ``key_metrics/<agent>/<metric>`` for
    ``key_metrics``; nested mappings joined with ``/``.

    Numbers are metrics and booleans become 0/1; strings are kept as text; ``None``, lists and
    ``group_level_metrics`` are not metrics (they travel in the artifacts). Values are kept
    as they are: pass@k percentages stay percentages.
    """
    metrics: dict[str, float] = {}
    texts: dict[str, str] = {}
    values: dict[str, bool | int | float | str] = {}
    for entry in aggregate:
        agent = str(entry["agent_ref"]["name"])
        for section, prefix in (("agent_metrics", agent), ("key_metrics", f"key_metrics/{agent}")):
            section_values = entry.get(section)
            if isinstance(section_values, Mapping):
                _flatten_into(section_values, prefix, metrics, texts, values)
    return FlatMetrics(
        dict(sorted(metrics.items())), dict(sorted(texts.items())), dict(sorted(values.items()))
    )


def _flatten_into(
    section: Mapping[str, Any],
    prefix: str,
    metrics: dict[str, float],
    texts: dict[str, str],
    values: dict[str, bool | int | float | str],
) -> None:
    for key, value in section.items():
        name = f"{prefix}/{key}"
        if isinstance(value, Mapping):
            _flatten_into(value, name, metrics, texts, values)
        elif isinstance(value, bool | int | float):
            metrics[name] = float(value)
            values[name] = value
        elif isinstance(value, str):
            texts[name] = value
            values[name] = value
