"""The rollouts reader's fast path (msgspec) reads every line exactly as ``json.loads`` does,
and refuses every line ``json.loads`` refuses with the strict parser's message."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from evalexport.reading import RunFileError, rollouts
from evalexport.run import RunArtifacts

RUN = RunArtifacts(Path("/runs/r/aime24_rollouts.jsonl"))

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()  # any size: 2**64 and beyond are ints for json, floats for some parsers
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()  # NaN and infinities included: json writes them as NaN, Infinity
    | st.text()  # lone surrogates included: json writes them as \\ud800 escapes
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
)


def _same(left: Any, right: Any) -> bool:
    """Equal, with types and NaN compared as json.loads gives them."""
    if type(left) is not type(right):
        return False
    if isinstance(left, float) and math.isnan(left):
        return math.isnan(right)
    if isinstance(left, dict):
        return list(left) == list(right) and all(_same(left[k], right[k]) for k in left)
    if isinstance(left, list):
        return len(left) == len(right) and all(map(_same, left, right))
    return bool(left == right)


def _parsed(line: bytes) -> Any:
    try:
        rollout = rollouts._parse_line(RUN, line, 7)
    except RunFileError as error:
        return ("refused", str(error))
    return rollout


def _strictly(line: bytes, monkeypatch: pytest.MonkeyPatch) -> Any:
    with monkeypatch.context() as patched:
        patched.setattr(rollouts, "_fast_decode", lambda: lambda raw: None)  # msgspec refuses all
        return _parsed(line)


@given(record=st.dictionaries(st.text(max_size=8), VALUES), ascii_only=st.booleans())
@example(record={"n": 2**64 + 1, "m": -(2**63) - 1}, ascii_only=True)
@example(record={"x": float("nan"), "y": float("-inf"), "z": 1e308 * 10}, ascii_only=True)
@example(record={"s": "\ud800"}, ascii_only=True)
def test_a_line_reads_as_json_loads_reads_it(record: dict[str, Any], ascii_only: bool) -> None:
    text = json.dumps(record, ensure_ascii=ascii_only)
    try:
        line = (text + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate written raw cannot be UTF-8
        return
    rollout = _parsed(line)
    assert not isinstance(rollout, tuple), rollout
    assert rollout.size_bytes == len(line)
    assert _same(rollout.record, json.loads(text))


@pytest.mark.parametrize(
    "line",
    [
        b'{"a": 1, "a": 2}\n',  # the last of duplicate keys, as json.loads keeps it
        b'{"big": 123456789012345678901234567890, "e": 1E5, "neg": -0}\n',
        b'{"x": 1e400}\n',
        b'{"x": NaN, "y": -Infinity}\n',
        b'{"s": "\\ud800\\udc00 \\ud800"}\n',
        b"   \n",
        b"[1, 2]\n",
        b"null\n",
        b'{"a": [1, 2,]}\n',
        b'{"a": "\x01"}\n',
        b'\xef\xbb\xbf{"a": 1}\n',
        b'{"a": "\xff"}\n',
        b"[" * 5000 + b"]" * 5000 + b"\n",
        b'{"a": 1} trailing\n',
        b'{"a": 1}\r\n',
    ],
)
def test_the_fast_path_changes_no_verdict_and_no_message(
    line: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast, strict = _parsed(line), _strictly(line, monkeypatch)
    if isinstance(strict, tuple) or strict is None:
        assert fast == strict
    else:
        assert _same(fast.record, strict.record)
        assert (fast.line_number, fast.size_bytes) == (strict.line_number, strict.size_bytes)


@given(record=st.dictionaries(st.text(max_size=8), VALUES, min_size=1), cut=st.integers(1, 50))
def test_a_cut_line_is_refused_with_the_strict_parsers_message(
    record: dict[str, Any], cut: int
) -> None:
    text = json.dumps(record)
    line = text[: max(len(text) - cut, 1)].encode()
    try:
        json.loads(line)
    except json.JSONDecodeError:
        pass
    else:
        return  # still a complete document
    fast = _parsed(line + b"\n")
    assert fast[0] == "refused", fast
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(rollouts, "_fast_decode", lambda: lambda raw: None)  # msgspec refuses all
        assert _parsed(line + b"\n") == fast
