"""A trajectory's bytes as Gym writes them: pydantic-core's JSON indented by two spaces, written
by msgspec where the two agree (:func:`encode_json`)."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any, Final

__all__ = ["encode_json"]


_E_DIGIT: Final = re.compile(rb"e[0-9]")
"""Starts with a literal, so the search skips ahead as ``bytes.find`` does (a pattern starting
with ``[0-9]`` costs ten times as much on a trajectory file)."""


def _positive_exponent(data: bytes) -> bool:
    """Whether ``data`` holds a digit, ``e`` and a digit in a row: how msgspec writes a float
    with a positive exponent (``1e16``, where pydantic writes ``1e+16``)."""
    for match in _E_DIGIT.finditer(data):
        before = match.start() - 1
        if before >= 0 and 0x30 <= data[before] <= 0x39:
            return True
    return False


@functools.cache
def _fast_encoder() -> Callable[[Any], bytes | None]:
    """msgspec's encoder and indenter; ``None`` for a document it cannot write (pydantic then
    says why)."""
    import msgspec

    encode, indent = msgspec.json.Encoder().encode, msgspec.json.format
    refused = (msgspec.MsgspecError, TypeError, ValueError, RecursionError)

    def encoded(document: object) -> bytes | None:
        try:
            return indent(encode(document), indent=2)
        except refused:
            return None

    return encoded


def encode_json(document: object) -> bytes:
    """``document`` as Gym writes a trajectory file: pydantic-core's JSON, indented by two
    spaces, and a line break.

    msgspec writes the same bytes in half the time, but for one thing: a float with a positive
    exponent (``1e+16`` is ``1e16`` there). Its bytes are kept unless they hold a digit, an
    ``e`` and a digit in a row (a float so written, or such text in a string), and pydantic
    writes the rest (``tests/property/test_trajectory_encoding.py``).
    """
    data = _fast_encoder()(document)
    if data is not None and not _positive_exponent(data):
        return data + b"\n"
    from pydantic_core import to_json

    return to_json(document, indent=2) + b"\n"
