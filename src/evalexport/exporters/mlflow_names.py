"""Names, values and batches as MLflow accepts them (SPEC §3.6).

MLflow refuses a whole ``log_batch`` for one bad key, so every name is made acceptable here,
in the parent, where the dry run can show it: ``pass@1[avg-of-32]/symbolic_accuracy`` becomes
``pass_at_1_avg-of-32/symbolic_accuracy``; empty, ``.`` and ``..`` path segments go; names over
250 characters are cut in the middle around a hash, so two long names never collide. Limits are
MLflow's own (``mlflow/utils/validation.py``), kept for 2.x and 3.x alike.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, final

__all__ = [
    "MAX_ENTITIES_PER_BATCH",
    "MAX_KEY_LENGTH",
    "MAX_METRICS_PER_BATCH",
    "MAX_PARAMS_TAGS_PER_BATCH",
    "MAX_PARAM_VALUE_LENGTH",
    "MAX_TAG_VALUE_LENGTH",
    "Batch",
    "SanitizedNames",
    "cut_value",
    "flatten_params",
    "plan_batches",
    "sanitize_name",
    "sanitize_names",
]

MAX_METRICS_PER_BATCH = 1000
MAX_PARAMS_TAGS_PER_BATCH = 100
MAX_ENTITIES_PER_BATCH = 1000
MAX_KEY_LENGTH = 250
MAX_PARAM_VALUE_LENGTH = 6000
MAX_TAG_VALUE_LENGTH = 5000
"""8000 in MLflow 3; 5000 in MLflow 2.x, which the exporter also supports."""

_BRACKETED = re.compile(r"\[([^\]]*)\]")
_INVALID = re.compile(r"[^/\w.\- ]")
_CUT_MARKER_LENGTH = 10


def _shorten(name: str) -> str:
    if len(name) <= MAX_KEY_LENGTH:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    keep = MAX_KEY_LENGTH - _CUT_MARKER_LENGTH
    head, tail = name[: keep // 2], name[-(keep - keep // 2) :]
    # The hash is glued to the segments on both sides, so the cut creates no ".." segment.
    return f"{head}-{digest}-{tail}"


def sanitize_name(name: str) -> str:
    """The name MLflow will accept for ``name``; ``""`` when nothing of it is left."""
    text = name.replace("@", "_at_")
    text = _BRACKETED.sub(lambda match: f"_{match.group(1)}", text)
    text = _INVALID.sub("_", text)
    segments = []
    for segment in text.split("/"):
        stripped = segment.strip()
        if stripped in ("", "."):
            continue
        segments.append("_" if stripped == ".." else stripped)
    return _shorten("/".join(segments))


@final
@dataclass(frozen=True)
class SanitizedNames:
    names: dict[str, str] = field(default_factory=dict)
    """Original name -> the name sent to MLflow."""
    warnings: list[str] = field(default_factory=list)


def sanitize_names(names: Iterable[str], kind: str) -> SanitizedNames:
    """Sanitize every name; a name left empty is dropped and a collision is disambiguated,
    each with a warning naming the original."""
    mapping: dict[str, str] = {}
    taken: dict[str, str] = {}
    warnings: list[str] = []
    for name in names:
        clean = sanitize_name(name)
        if not clean:
            warnings.append(f"{kind} {name!r} has no characters MLflow accepts; it is not logged")
            continue
        if clean in taken:
            suffix = hashlib.sha256(name.encode()).hexdigest()[:6]
            unique = _shorten(f"{clean}_{suffix}")
            warnings.append(
                f"{kind} {name!r} sanitizes to {clean!r} like {taken[clean]!r}; logged as {unique!r}"
            )
            clean = unique
        taken[clean] = name
        mapping[name] = clean
    return SanitizedNames(mapping, warnings)


def cut_value(value: Any, limit: int) -> str:
    """``value`` as text of at most ``limit`` characters, saying how long it was if cut."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(text) <= limit:
        return text
    marker = f"...[cut: {len(text)} characters]"
    return text[: limit - len(marker)] + marker


def flatten_params(config: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """The saved config as dotted keys; lists and scalars become text within MLflow's limit."""
    params: dict[str, str] = {}
    for key, value in config.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping) and value:
            params.update(flatten_params(value, name))
        else:
            params[name] = cut_value("" if value is None else value, MAX_PARAM_VALUE_LENGTH)
    return params


@final
@dataclass
class Batch:
    metrics: dict[str, float] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)

    def entity_count(self) -> int:
        return len(self.metrics) + len(self.params) + len(self.tags)


def plan_batches(
    metrics: Mapping[str, float], params: Mapping[str, str], tags: Mapping[str, str]
) -> list[Batch]:
    """As few ``log_batch`` requests as MLflow's limits allow.

    Each batch takes up to 100 params and tags together, then fills with metrics up to 1000
    entities in all.
    """
    small = [("params", k, v) for k, v in params.items()] + [
        ("tags", k, v) for k, v in tags.items()
    ]
    pending_metrics = list(metrics.items())
    batches: list[Batch] = []
    while small or pending_metrics:
        batch = Batch()
        for kind, key, value in small[:MAX_PARAMS_TAGS_PER_BATCH]:
            getattr(batch, kind)[key] = value
        small = small[MAX_PARAMS_TAGS_PER_BATCH:]
        room = min(MAX_METRICS_PER_BATCH, MAX_ENTITIES_PER_BATCH - batch.entity_count())
        batch.metrics.update(pending_metrics[:room])
        pending_metrics = pending_metrics[room:]
        batches.append(batch)
    return batches
