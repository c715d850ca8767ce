"""RFC 8259 JSON read the way NeMo Gym's strict ATIF export reads it.

Gym's exporter refuses a rollout line whose JSON would change meaning on the way through Python:
duplicate object keys (which value won?), numbers that are not finite or that a float cannot hold
exactly (``1e400``, ``0.10000000000000000001``), ``NaN``/``Infinity``, and strings holding a
lone surrogate (not encodable as UTF-8). evalexport refuses the same lines, so both exporters
agree on which rows are convertible. Equality follows JSON too: ``true`` is not ``1``.

:func:`loads_strict` and :func:`loads_strict_line` read at msgspec's speed (about 2x ``json``)
where that is exact, and hand every other text to the strict ``json`` parser, whose verdict and
message stand.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from decimal import Decimal
from typing import Any, Final

__all__ = [
    "StrictJsonError",
    "json_equal",
    "loads_strict",
    "loads_strict_line",
    "unencodable_path",
]

# Below this many significant digits a decimal literal names exactly one double, and that
# double's shortest repr is the literal itself, so the exact Decimal comparison can be skipped.
_EXACT_DIGITS = 15


class StrictJsonError(ValueError):
    """A JSON text is not strict RFC 8259 JSON; the message says why."""


def _reject_constant(value: str) -> Any:
    raise StrictJsonError(f"non-JSON numeric constant {value!r}")


def _significant_digits(literal: str) -> int:
    mantissa = literal.lstrip("-").split("e")[0].split("E")[0].replace(".", "")
    return len(mantissa.strip("0"))


def _finite_float(literal: str) -> float:
    value = float(literal)
    if len(literal) <= _EXACT_DIGITS and 1e-300 < abs(value) < 1e300:
        return value  # most literals: a short one names its double exactly (below)
    if not math.isfinite(value):
        raise StrictJsonError(f"JSON number {literal!r} exceeds the finite float range")
    if value == 0.0:
        if _significant_digits(literal):
            raise StrictJsonError(f"JSON number {literal!r} underflows the finite float range")
        return value
    if 1e-300 < abs(value) < 1e300 and (
        len(literal) <= _EXACT_DIGITS or _significant_digits(literal) <= _EXACT_DIGITS
    ):
        return value
    if Decimal(literal) != Decimal(repr(value)):
        raise StrictJsonError(
            f"JSON number {literal!r} cannot be represented without precision loss"
        )
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, object]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise StrictJsonError(f"duplicate object key {key!r}")
            seen.add(key)
    return result


_UNDECIDED: Final = object()
"""What the fast decoder gives for a text it leaves to the strict parser."""
_STRICT_DECODER: Final = json.JSONDecoder(
    parse_constant=_reject_constant, parse_float=_finite_float, object_pairs_hook=_unique_keys
)
"""Made once: ``json.loads`` with hooks builds a decoder on every call."""


def _strictly(text: str) -> Any:
    """``json.loads(text, <the strict hooks>)``, with the decoder made once."""
    if text.startswith("\ufeff"):  # as json.loads says it
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    return _STRICT_DECODER.decode(text)


def loads_strict(text: str | bytes) -> Any:
    """Parse ``text``, raising :class:`StrictJsonError` (or ``json.JSONDecodeError``).

    A text msgspec can decide exactly (see :func:`_fast_strict_decoder`) is read by msgspec;
    every other text by ``json`` with the strict hooks, whose verdict and message stand.
    """
    if isinstance(text, bytes):  # decoded as json.loads decodes bytes
        return _strictly(text.decode(json.detect_encoding(text), "surrogatepass"))
    try:
        value = _fast_strict_decoder()(text.encode("utf-8"))
    except UnicodeEncodeError:  # a lone surrogate: the strict parser tells
        value = _UNDECIDED
    return value if value is not _UNDECIDED else _strictly(text)


@functools.cache
def _fast_strict_decoder() -> Callable[[bytes], Any]:
    """msgspec reading a line exactly as :func:`loads_strict` would.

    The returned function gives the decoded value, or ``_UNDECIDED`` for a line it cannot
    vouch for. msgspec gives the objects ``json`` gives for what it accepts (integers of any
    size included) and refuses ``NaN``, lone surrogates, bad UTF-8 and malformed text. Two
    things it does not check, so they are checked here, exactly:

    * numbers: every float literal goes through :func:`_finite_float`, the strict parser's
      own check, as msgspec's ``float_hook``; a literal it refuses makes the line undecided;
    * duplicate keys, which msgspec resolves silently (the last wins). In JSON text a ``:``
      outside strings separates exactly one object member, and a string holds a ``:`` only as
      itself or as the escape ``\\u003a``. On a line without that escape, every ``:`` of the
      decoded value comes from a ``:`` of the line, and re-encoding writes each once more,
      while a dropped duplicate member takes its separator (and any ``:`` of its own) with
      it: the line holds a duplicate key exactly when it has more ``:`` bytes than its decoded
      value re-encoded. A line with the escape is left to the strict parser.
    """
    import msgspec

    decode = msgspec.json.Decoder(float_hook=_finite_float).decode
    encode = msgspec.json.Encoder().encode
    refused = (msgspec.MsgspecError, RecursionError, ValueError)

    def decoded(raw: bytes) -> Any:
        if b"\\u003" in raw and (b"\\u003a" in raw or b"\\u003A" in raw):
            return _UNDECIDED
        try:
            value = decode(raw)
            if raw.count(b":") != encode(value).count(b":"):
                return _UNDECIDED
        except refused:
            return _UNDECIDED
        return value

    return decoded


def loads_strict_line(raw: bytes) -> Any:
    """One UTF-8 line of a rollouts file read as :func:`loads_strict` reads it.

    Raises what :func:`loads_strict` raises, for the line without its line break (so an
    error's column is the column on the line), or ``UnicodeDecodeError`` for bytes that are
    not UTF-8.
    """
    value = _fast_strict_decoder()(raw)
    if value is not _UNDECIDED:
        return value
    return _strictly(raw.decode("utf-8").rstrip("\r\n"))


def unencodable_path(value: object, path: str) -> str | None:
    """The path of the first string in ``value`` that UTF-8 cannot encode, or ``None``."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path
        return None
    if isinstance(value, list):
        for index, item in enumerate(value):
            if found := unencodable_path(item, f"{path}[{index}]"):
                return found
    elif isinstance(value, dict):
        for key, item in value.items():
            if found := unencodable_path(key, f"{path}.<key>") or unencodable_path(
                item, f"{path}.{key}"
            ):
                return found
    return None


def json_equal(left: object, right: object) -> bool:
    """JSON equality: ``true`` differs from ``1``, ``1`` equals ``1.0``, key order is ignored."""
    if left is None or right is None:
        return left is right
    left_bool, right_bool = isinstance(left, bool), isinstance(right, bool)
    if left_bool or right_bool:
        return left_bool and right_bool and left == right
    if isinstance(left, int | float) or isinstance(right, int | float):
        return isinstance(left, int | float) and isinstance(right, int | float) and left == right
    if isinstance(left, str) or isinstance(right, str):
        return isinstance(left, str) and isinstance(right, str) and left == right
    if isinstance(left, list) or isinstance(right, list):
        return (
            isinstance(left, list)
            and isinstance(right, list)
            and len(left) == len(right)
            and all(json_equal(a, b) for a, b in zip(left, right, strict=True))
        )
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)
    return False
