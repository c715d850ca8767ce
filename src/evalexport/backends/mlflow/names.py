"""Names, values and batches as MLflow accepts them, the way NeMo Gym logs them (SPEC §3.6).

NeMo Gym also logs to MLflow while a run goes (``nemo_gym/exporters/mlflow.py`` in nemo-gym
0.7.0); a run exported afterwards must line up with one logged live, so names and params follow
Gym's rules, written anew here, in the parent, where the dry run can show them:

* names: ``@`` becomes ``_at_``; every character outside letters, digits, ``_ / . - :`` and
  space becomes ``_`` (``pass@1[avg-of-32]/x`` → ``pass_at_1_avg-of-32_/x``); empty path
  segments go; all-dot segments and leading dots become underscores of the same length; a name
  over 250 characters keeps both ends around ``___``. A name with nothing left is dropped.
* params: the saved config as dotted keys, list items as ``key[i]``, each value as Python's
  ``str()`` cut to 6000 characters; empty mappings and lists give no param.

Beyond Gym: two names that sanitize alike are told apart by a hash suffix, with a warning (Gym
sends both and MLflow keeps one). A list that would give more than :data:`MAX_LIST_PARAMS`
params (Gym logs one a leaf, whatever their number: a list of 90,000 task records was 180,000
params, 1,800 requests) is one param under its own key holding its JSON, cut to MLflow's value
limit, and the result says so (:class:`ListAsOneParam`); the whole list is in
``global_config.json``. Batches stay within MLflow's limits (``mlflow/utils/validation.py``),
kept for 2.x and 3.x alike.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Final, final

__all__ = [
    "MAX_ENTITIES_PER_BATCH",
    "MAX_KEY_LENGTH",
    "MAX_LIST_PARAMS",
    "MAX_METRICS_PER_BATCH",
    "MAX_PARAMS_TAGS_PER_BATCH",
    "MAX_PARAM_VALUE_LENGTH",
    "MAX_TAG_VALUE_LENGTH",
    "Batch",
    "ListAsOneParam",
    "Params",
    "SanitizedNames",
    "cut_value",
    "flatten_params",
    "params_of",
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
MAX_LIST_PARAMS: Final = 1000
"""The most params one list of the saved config gives, named as Gym names them (``key[i]``);
a list that would give more is one param. The longest list of nemo-gym 0.7.0's 916 config
files gives 185 (36 items), a run's merged config a few of those: no config of Gym's reaches
it, so Gym's names hold for every list it writes."""

_INVALID: Final[re.Pattern[str]] = re.compile(r"[^/\w.\- :]")
_LEADING_DOTS: Final[re.Pattern[str]] = re.compile(r"^\.+")
_ELISION: Final = "___"


def _normal_path(name: str) -> str:
    segments = [segment for segment in name.split("/") if segment]
    segments = ["_" * len(segment) if set(segment) == {"."} else segment for segment in segments]
    return _LEADING_DOTS.sub(lambda match: "_" * len(match.group()), "/".join(segments))


def _elide(name: str) -> str:
    if len(name) <= MAX_KEY_LENGTH:
        return name
    kept = MAX_KEY_LENGTH - len(_ELISION)
    head, tail = kept - kept // 2, kept // 2
    return name[:head] + _ELISION + (name[-tail:] if tail else "")


def sanitize_name(name: str) -> str:
    """The name Gym's MLflow exporter logs for ``name``; ``""`` when nothing is left of it."""
    return _normal_path(_elide(_normal_path(_INVALID.sub("_", name.replace("@", "_at_")))))


@final
@dataclass(frozen=True)
class SanitizedNames:
    """Names made valid for MLflow (original -> sent), with a warning for each one changed or
    dropped."""

    names: dict[str, str] = field(default_factory=dict)
    """Original name -> the name sent to MLflow."""
    warnings: list[str] = field(default_factory=list)


def sanitize_names(names: Iterable[str], kind: str) -> SanitizedNames:
    """Gym's MLflow name for each of ``names``; dropped and colliding names are warned about."""
    mapping: dict[str, str] = {}
    taken: dict[str, str] = {}
    warnings: list[str] = []
    for name in names:
        clean = sanitize_name(name)
        if not clean:
            warnings.append(f"{kind} {name!r} has no characters MLflow accepts; it is not logged")
            continue
        if clean in taken:
            suffix = "_" + hashlib.sha256(name.encode()).hexdigest()[:8]
            unique = _elide(clean[: MAX_KEY_LENGTH - len(suffix)] + suffix)
            warnings.append(
                f"{kind} {name!r} sanitizes to {clean!r} like {taken[clean]!r}; "
                f"logged as {unique!r} (NeMo Gym would log one over the other)"
            )
            clean = unique
        taken[clean] = name
        mapping[name] = clean
    return SanitizedNames(mapping, warnings)


@final
@dataclass(frozen=True)
class ListAsOneParam:
    """A list of the saved config logged as one param (past :data:`MAX_LIST_PARAMS`)."""

    key: str
    """Its dotted key, as the config names it (the param's name before sanitizing)."""
    items: int
    params: int
    """The params Gym's live exporter would log for it: one a leaf (``key[i].field``)."""
    length: int
    """The characters of its JSON, of which the param holds at most
    :data:`MAX_PARAM_VALUE_LENGTH`."""

    def notice(self) -> str:
        """What the result says of it: the key, its count, what was logged instead."""
        cut = (
            f", cut to {MAX_PARAM_VALUE_LENGTH:,} of its {self.length:,} characters"
            if self.length > MAX_PARAM_VALUE_LENGTH
            else ""
        )
        return (
            f"the saved config's list {self.key!r} holds {self.items:,} items, which NeMo "
            f"Gym's live MLflow exporter would log as {self.params:,} params "
            f"({self.key}[0], ...); it is logged as one param {self.key!r} holding its "
            f"JSON{cut}, as every list past {MAX_LIST_PARAMS:,} params is, and is whole in the "
            "run's global_config.json artifact"
        )


@final
@dataclass(frozen=True)
class Params:
    """The saved config as params, and the lists logged as one param each."""

    values: dict[str, str]
    lists: list[ListAsOneParam] = field(default_factory=list)


def _leaf_count(value: object) -> int:
    """The params Gym's flattening makes of ``value``: its leaves (an empty mapping or list
    makes none), counted without recursion."""
    count, stack = 0, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        else:
            count += 1
    return count


def _leaves(
    value: object, prefix: str, lists: list[ListAsOneParam], limit: int
) -> Iterator[tuple[str, str]]:
    if isinstance(value, Mapping):
        for key, inner in value.items():
            yield from _leaves(inner, f"{prefix}.{key}" if prefix else str(key), lists, limit)
    elif isinstance(value, list):
        if prefix and (count := _leaf_count(value)) > limit:
            text = json.dumps(value, ensure_ascii=False, default=str)
            lists.append(ListAsOneParam(prefix, len(value), count, len(text)))
            yield prefix, cut_value(text, MAX_PARAM_VALUE_LENGTH)
            return
        for index, inner in enumerate(value):
            yield from _leaves(inner, f"{prefix}[{index}]", lists, limit)
    elif prefix:
        yield prefix, str(value)[:MAX_PARAM_VALUE_LENGTH]


def params_of(config: Mapping[str, object], list_limit: int = MAX_LIST_PARAMS) -> Params:
    """The saved config as params, as Gym flattens it (``a.b`` and ``a.list[0]`` keys,
    ``str()`` values), but a list that would give more than ``list_limit`` params: one param
    under its key, its JSON cut to MLflow's value limit (:class:`ListAsOneParam`)."""
    lists: list[ListAsOneParam] = []
    values = dict(_leaves(config, "", lists, list_limit))
    return Params(values, lists)


def flatten_params(config: Mapping[str, object]) -> dict[str, str]:
    """The saved config as params (:func:`params_of`'s values)."""
    return params_of(config).values


def cut_value(value: object, limit: int) -> str:
    """``value`` as text of at most ``limit`` characters, saying how long it was if cut."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(text) <= limit:
        return text
    marker = f"...[cut: {len(text)} characters]"
    return text[: limit - len(marker)] + marker


@final
@dataclass
class Batch:
    """One ``log_batch`` request's worth of metrics, params and tags, within MLflow's limits."""

    metrics: dict[str, float] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)

    def entity_count(self) -> int:
        """Metrics, params and tags in this batch (MLflow takes at most 1,000 a request)."""
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
