"""Flattening aggregate metrics into names a tracking system can store (SPEC §1).

Shared by every tracking exporter so MLflow, W&B and the dry run agree on every name.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, final

__all__ = ["FlatMetrics", "finite_numbers", "flatten_metrics"]


@final
@dataclass(frozen=True)
class FlatMetrics:
    """Numeric metrics and text values (tags or summary entries), by flattened name."""

    metrics: dict[str, float] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    values: dict[str, bool | int | float | str] = field(default_factory=dict)
    """Every metric and text with its value as the file holds it (``True`` stays ``True``):
    what W&B's summary takes, as NeMo Gym logs it."""
    non_finite: list[str] = field(default_factory=list)
    """Metrics left out because their value is NaN or infinite (no tracking store keeps
    those faithfully: MLflow stores ±inf as ±1.8e308); exporters warn naming them."""
    entries: int = 0
    """How many entries (agents) the file held."""

    def empty_warning(self, path: Path) -> str | None:
        """A warning that the file at ``path`` gave no metric and no text at all, or ``None``:
        an export that logs no metric says so."""
        if self.metrics or self.texts or self.non_finite:
            return None
        held = f"{self.entries} entries" if self.entries != 1 else "1 entry"
        return (
            f"the aggregate metrics {path} hold {held} but no metric (no number or text under "
            "agent_metrics or key_metrics), so the run has no metrics; the file itself is "
            "sent as it is"
        )

    def non_finite_warning(self) -> str | None:
        """A warning naming the metrics that are NaN or infinite (dropped by the trackers), or
        ``None``."""
        if not self.non_finite:
            return None
        return (
            f"{len(self.non_finite)} metrics are NaN or infinite and are not logged: "
            + ", ".join(self.non_finite)
        )


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
    non_finite: list[str] = []
    entries = 0
    for entry in aggregate:
        entries += 1
        agent = str(entry["agent_ref"]["name"])
        for section, prefix in (("agent_metrics", agent), ("key_metrics", f"key_metrics/{agent}")):
            section_values = entry.get(section)
            if isinstance(section_values, Mapping):
                _flatten_into(section_values, prefix, metrics, texts, values)
    for name in [name for name, value in metrics.items() if not math.isfinite(value)]:
        del metrics[name], values[name]
        non_finite.append(name)
    return FlatMetrics(
        dict(sorted(metrics.items())),
        dict(sorted(texts.items())),
        dict(sorted(values.items())),
        sorted(non_finite),
        entries,
    )


def finite_numbers(section: Mapping[str, object], prefix: str) -> dict[str, float]:
    """The finite numbers of ``section`` (booleans as 0 and 1), by their names flattened as
    :func:`flatten_metrics` flattens them, under ``prefix``."""
    metrics: dict[str, float] = {}
    _flatten_into(section, prefix, metrics, {}, {})
    return {name: value for name, value in metrics.items() if math.isfinite(value)}


def _flatten_into(
    section: Mapping[str, object],
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
