"""The one masking function (SPEC §2): :func:`mask_value` masks a value of any shape (a config,
a payload, a row, a trace) by the rules of :mod:`.rules`, at any depth, and in the JSON texts
strings hold (a tool call's ``arguments``), as a text of its kind reads
(:data:`~evalexport.masking.names.TextKind`: a config's strings are structured, a row's free
text); :func:`may_hold_secret` tells, at the speed of a few byte scans, the texts it cannot
change, and a JSON text is masked where its strings need it (:mod:`.rows`), never parsed and
written again whole.

Pure functions of their arguments. :mod:`evalexport.egress` applies them to everything an
export sends; :mod:`.configs` to a run's config as it is saved.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, Final

import ahocorasick_rs

from evalexport.masking.names import (
    STRUCTURED,
    TextKind,
    names_a_secret,
    names_a_vocabulary_token,
)
from evalexport.masking.rows import masked_json_text
from evalexport.masking.rules import (
    ANCHORS,
    LAST_WORD_ANCHORS,
    LAST_WORD_GOES_ON,
    MASK,
    is_interpolation,
    mask_text,
)
from evalexport.masking.vocabulary import is_vocabulary_marker

__all__ = [
    "ValueMasking",
    "is_json_schema",
    "mask_json_text",
    "mask_value",
    "may_hold_secret",
    "secret_forms",
]

# What every text masking can change holds, lower-cased (ASCII only, as the rules read names):
# an anchor of the rules (a word of a secret's name, "@", an auth scheme, a credential's
# prefix: rules.ANCHORS; a last word only where a name ends, "hf_token", not "tokens"), or
# "\u" or "\/", escapes that may spell one in JSON text a string holds, all found in one pass.
# tests/property/test_egress_prefilter.py holds mask_value to it.
_WORDS: Final = (*ANCHORS, "\\u", "\\/")
_PREFILTER: Final = ahocorasick_rs.BytesAhoCorasick([word.encode() for word in _WORDS])
_LAST_WORDS: Final = {
    index: (LAST_WORD_GOES_ON[word].encode() if word in LAST_WORD_GOES_ON else None)
    for index, word in enumerate(_WORDS)
    if word in LAST_WORD_ANCHORS
}
"""Each last word's index among :data:`_WORDS`, and the letters it may go on with."""


_PIECE: Final = 1 << 20
"""A long text is looked through a megabyte at a time, never copied whole."""
_OVERLAP: Final = max(len(word) for word in _WORDS) + 1
"""What each piece shares with the next: an anchor across two pieces, and the character a
last word's end is told by."""


def may_hold_secret(text: str) -> bool:
    """Whether masking could change ``text`` or a value whose JSON text it is (``False``: it
    cannot; :func:`mask_value` leaves it as it is). A superset: ``True`` for some texts that
    hold nothing to mask."""
    if len(text) <= _PIECE:
        return _holds_anchor(text)
    return any(
        _holds_anchor(text[start : start + _PIECE + _OVERLAP])
        for start in range(0, len(text), _PIECE)
    )


def _holds_anchor(text: str) -> bool:
    # One byte a character, as the rules find their anchors (rules.anchor_places).
    data = text.encode("latin-1", "replace").lower()
    for index, _, end in _PREFILTER.find_matches_as_indexes(data, overlapping=True):
        if index not in _LAST_WORDS or end == len(data) or not 97 <= data[end] <= 122:
            return True  # an anchor, or a last word no lower-case letter follows
        goes_on = _LAST_WORDS[index]
        if goes_on is not None and data.startswith(goes_on, end):
            return True  # "clientKeyData", "authorization"
    return False


_SCHEMA_TYPES: Final = frozenset(
    {"string", "number", "integer", "boolean", "object", "array", "null"}
)
_SCHEMA_KEYWORDS: Final = frozenset({"properties", "anyOf", "oneOf", "allOf", "$ref", "enum"})


def is_json_schema(value: Mapping[Any, Any]) -> bool:
    """Whether ``value`` is a JSON Schema (a tool's parameter ``{"type": "string",
    "description": ...}``): under a secret key (``api_key``, ``temporary_token``) it describes
    a secret's field and holds none, so its texts are masked by their own keys, not as a
    secret's."""
    kind = value.get("type")
    if isinstance(kind, str):
        return kind in _SCHEMA_TYPES
    if isinstance(kind, list):
        return bool(kind) and all(isinstance(k, str) and k in _SCHEMA_TYPES for k in kind)
    return any(keyword in value for keyword in _SCHEMA_KEYWORDS)


def secret_forms(secrets: Sequence[str]) -> tuple[str, ...]:
    """Each secret as written and as JSON escapes it (a secret holding ``"`` or ``\\`` is
    written escaped in a JSON text), longest first, so a secret is replaced before its
    prefix."""
    forms: set[str] = set()
    for secret in secrets:
        if secret:
            forms.add(secret)
            forms.add(json.dumps(secret, ensure_ascii=False)[1:-1])
    return tuple(sorted(forms, key=len, reverse=True))


def mask_value(value: Any, secrets: Sequence[str] = (), *, kind: TextKind = STRUCTURED) -> Any:
    """``value`` masked (SPEC §2), its texts read as ``kind`` says (``"structured"``, a
    config's or a payload's; ``"free"``, a row's or a trace's); the input is never changed,
    and what masking leaves as it is, is returned as it is (the same object).

    A secret-named key (:func:`~evalexport.masking.names.names_a_secret`, as ``kind`` reads
    names) has each text under it masked whole (a bare interpolation and, under a vocabulary
    key, a vocabulary marker excepted), a JSON Schema under it walked by the same rules; every
    other text has its secrets masked by the text rules (:func:`~evalexport.masking.rules.
    mask_text`), and a text that is a JSON object or array is masked as the value it holds
    (its keys are a mapping's keys). Keys are masked as texts. ``secrets`` (the values an
    export knows: its tokens) are replaced wherever they are. Mappings become dicts and
    sequences lists where anything changed.
    """
    return ValueMasking(secret_forms(secrets), kind).value(value)


def mask_json_text(text: str, secrets: Sequence[str] = (), *, kind: TextKind = STRUCTURED) -> str:
    """A JSON document's text (a table's cell, a trace's line) with :func:`mask_value` applied
    to what it holds (:meth:`ValueMasking.json_text`)."""
    return ValueMasking(secret_forms(secrets), kind).json_text(text)


class ValueMasking:
    """:func:`mask_value` with its secrets' forms made once (:func:`secret_forms`) and its
    texts' kind, for a caller that masks many values alike (an export's gate)."""

    def __init__(self, secrets: tuple[str, ...], kind: TextKind = STRUCTURED) -> None:
        self.secrets = secrets
        self.kind: TextKind = kind
        self._short: dict[str, str] = {}
        """Each short text masked so far (:meth:`text`) and what it became: a run's rows
        repeat their keys and short values (``"role"``, ``"assistant"``) in every row."""
        self._keys: dict[str, tuple[bool, bool, str | None]] = {}
        """How each short key was read (:meth:`_key`)."""
        self._long: dict[str, str] = {}
        """The last long texts masked (:meth:`text`) and what they became: a row's answer is
        a cell of two tables (the rollouts' and the samples' ``final_answer``)."""

    def value(self, value: Any) -> Any:
        """``value`` masked; the same object where nothing changed."""
        kind = type(value)  # a parsed row's own types first, told without an ABC's check
        if kind is str:
            return self.text(value)
        if kind is dict:
            return self.mapping(value)
        if kind is list:
            return self.items(value)
        if kind in _SCALARS:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return self.mapping(value)
        if isinstance(value, list | tuple):
            return _items(value, self.value)
        return value

    def mapping(self, value: Mapping[Any, Any]) -> Any:
        """A mapping masked: each key's value by the key's rule, each key as a text."""
        # Made only once something changes (most mappings keep every item): the items before
        # it copied then.
        masked: dict[Any, Any] | None = None if isinstance(value, dict) else {}
        keys = self._keys
        # A logprobs entry ({"token": "Paris", "logprob": -0.1}, its top_logprobs' alike):
        # its token is a word the model wrote, no credential.
        logprobs = "logprob" in value
        for position, (key, item) in enumerate(value.items()):
            if type(key) is str and (read := keys.get(key)) is not None:
                secret, keep_markers, shown = read
            elif isinstance(key, str):
                secret, keep_markers, shown = self._key(key)
            else:
                secret, keep_markers, shown = False, False, None
            if logprobs and key == "token":
                secret = False
            if secret:
                new = self.under_secret_key(item, keep_markers)
            elif (kind := type(item)) is str:
                new = self.text(item)
            elif kind in _SCALARS:
                new = item
            else:
                new = self.value(item)
            if masked is None:
                if shown is None and new is item:
                    continue
                masked = dict(itertools.islice(value.items(), position))
            if shown is None:
                shown = key
            else:
                while shown in masked or (shown != key and shown in value):
                    shown += "*"  # two keys that mask alike: both kept
            masked[shown] = new
        return value if masked is None else masked

    def items(self, value: list[Any]) -> list[object]:
        """A list masked item by item: the list itself when no item changed (copied only once
        one does)."""
        masked: list[object] | None = None
        for position, item in enumerate(value):
            if (kind := type(item)) is dict:
                new = self.mapping(item)
            elif kind is str:
                new = self.text(item)
            elif kind in _SCALARS:
                new = item
            else:
                new = self.value(item)
            if masked is None:
                if new is item:
                    continue
                masked = value[:position]
            masked.append(new)
        return value if masked is None else masked

    def _key(self, key: str) -> tuple[bool, bool, str | None]:
        """How a mapping's key is read (remembered for the next mapping that holds it):
        whether it names a secret, whether a vocabulary marker under it is kept, and the key
        as it is shown (``None``: as it is)."""
        secret = names_a_secret(key, self.kind)
        shown = self.text(key)
        read = (secret, secret and names_a_vocabulary_token(key), None if shown is key else shown)
        if type(key) is str and len(key) <= _REMEMBERED:
            if len(self._keys) >= _REMEMBERED_TEXTS:
                self._keys.clear()
            self._keys[key] = read
        return read

    def known(self, text: str) -> str:
        """``text`` with only the known secrets removed (no rule applied)."""
        masked = text
        for secret in self.secrets:
            if secret in masked:
                masked = masked.replace(secret, MASK)
        return text if masked == text else masked

    def under_secret_key(self, value: Any, keep_markers: bool, *, nested: bool = False) -> Any:
        """A value under a secret key: each text masked whole (a bare interpolation and, with
        ``keep_markers``, a vocabulary marker kept), a JSON Schema walked by the rules. An
        integer of four digits or more the key itself names (``password: 13572468``, a PIN,
        a numeric key: not ``nested`` in a mapping under it) is masked too; other numbers,
        booleans and ``None`` are kept (``api_key: 0``; ``credentials: {port: 5432}``)."""
        if isinstance(value, str):
            keep = is_interpolation(value) or (keep_markers and is_vocabulary_marker(value))
            return value if keep or value == MASK else MASK
        if isinstance(value, Mapping):
            if is_json_schema(value):
                return self.mapping(value)
            masked = {
                key: self.under_secret_key(item, False, nested=True) for key, item in value.items()
            }
            return value if masked == value and isinstance(value, dict) else masked
        if isinstance(value, list | tuple):
            return _items(
                value, lambda item: self.under_secret_key(item, keep_markers, nested=nested)
            )
        if type(value) is int and not nested and abs(value) >= _SECRET_DIGITS:
            return MASK
        return value

    def text(self, text: str, anchors: Collection[str] | None = None) -> str:
        """A text masked by the text rules, or as the JSON it holds; the known secrets
        removed. A caller that found them may give the rules' anchors the text may hold
        (:func:`~evalexport.masking.rules.mask_text`)."""
        if anchors is None and len(text) <= _REMEMBERED_LONG:
            short = len(text) <= _REMEMBERED
            memo = self._short if short else self._long
            remembered = memo.get(text)
            if remembered is None:
                if len(memo) >= (_REMEMBERED_TEXTS if short else _REMEMBERED_LONG_TEXTS):
                    memo.clear()
                remembered = memo[text] = self._masked_text(text, None)
            return text if remembered == text else remembered
        return self._masked_text(text, anchors)

    def _masked_text(self, text: str, anchors: Collection[str] | None) -> str:
        masked = text
        if text:
            nested = self.nested_json(text) if _looks_like_json(text) else None
            masked = mask_text(text, self.kind, anchors) if nested is None else nested
        masked = self.known(masked)
        return text if masked == text else masked

    def json_text(self, text: str) -> str:
        """A JSON document's text masked as the value it holds: each string that needs it
        masked where it stands (:func:`~evalexport.masking.rows.masked_json_text`), the rest
        kept byte for byte; a text that is not JSON is masked as text."""
        masked = masked_json_text(self, text)
        return self.parsed_json_text(text) if masked is None else self.known(masked)

    def parsed_json_text(self, text: str) -> str:
        """:meth:`json_text` by parsing the text whole, masking the value and writing it again
        compactly where anything changed: the reference the fast path is held to, and where
        it goes when a text is beyond it."""
        try:
            held = json.loads(text)
        except (ValueError, RecursionError):
            return self.text(text)
        masked = self.value(held)
        if masked is held:
            return self.known(text)
        return self.known(json.dumps(masked, ensure_ascii=False, separators=(",", ":")))

    def nested_json(self, text: str) -> str | None:
        """``text`` masked as the JSON object or array it is, or ``None`` when it is none."""
        if not may_hold_secret(text):
            return text  # nothing in it a rule reads, held as JSON or not
        stripped = text.strip()
        try:
            held = json.loads(stripped)
        except (ValueError, RecursionError):
            return None
        if not isinstance(held, dict | list):
            return None
        masked = self.value(held)
        if masked is held:
            return text
        return _encoded_like(masked, stripped)


_SECRET_DIGITS: Final = 1000
"""The smallest integer a secret key's own value is masked from: a PIN has four digits."""
_SCALARS: Final = frozenset({int, float, bool, type(None)})
"""JSON's other values: nothing in them to mask."""
_REMEMBERED: Final = 256
"""The longest text :meth:`ValueMasking.text` remembers (keys, roles, ids, short values)."""
_REMEMBERED_TEXTS: Final = 1 << 15
"""How many it remembers at most: past that it forgets them all and starts again."""
_REMEMBERED_LONG: Final = 1 << 18
"""The longest text :meth:`ValueMasking.text` remembers among the last long ones."""
_REMEMBERED_LONG_TEXTS: Final = 16
"""How many long texts it remembers (a row's few): at most 16 of 256 Ki characters held."""


def _looks_like_json(text: str) -> bool:
    """Whether ``text`` may be a JSON object or array (a tool call's ``arguments``): looked at
    its ends, never copied (a row's answer is tens of kilobytes)."""
    first, last = text[:1], text[-1:]
    if first.isspace():
        first = text.lstrip()[:1]
    if first not in ("{", "["):
        return False
    if last.isspace():
        last = text.rstrip()[-1:]
    return last in ("}", "]")


def _encoded_like(value: object, original: str) -> str:
    """``value`` as JSON in the style of ``original``: compact, or with ``json.dumps``'s
    spaces."""
    spaced = '": ' in original or '", ' in original
    separators = (", ", ": ") if spaced else (",", ":")
    return json.dumps(value, ensure_ascii=False, separators=separators)


def _items(value: list[Any] | tuple[Any, ...], masked: Callable[[Any], Any]) -> Any:
    """A list or tuple with each item ``masked``: the list itself when no item changed."""
    items = [masked(item) for item in value]
    unchanged = isinstance(value, list) and all(
        new is old for new, old in zip(items, value, strict=True)
    )
    return value if unchanged else items
