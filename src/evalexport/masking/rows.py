"""A JSON text masked where its strings need it (SPEC §2, "What leaves"): the way a row's cell,
a trace's line or a table's row is masked without parsing and writing it again whole.

Every rule starts at an anchor (:data:`~evalexport.masking.rules.ANCHORS`), and no anchor can
stand outside a JSON string (JSON's other tokens are numbers, ``true``, ``false``, ``null``
and punctuation). So the text is looked through once for anchors, at the speed of
``str.find``; each string holding one is read alone (``json``'s own C scanner), masked as
:meth:`~evalexport.masking.values.ValueMasking.value` masks it where it stands (a key: its
value masked whole when the key names a secret; any other string: :meth:`~evalexport.masking.
values.ValueMasking.text`) and written again in its place; the rest of the text is kept as it
is. A text beyond this (an escape that may spell an anchor, a key the rules would rename, a
text that is not JSON) is left to the parsed path, which the fast path equals value for value
(``tests/property/test_row_masking.py``).
"""

from __future__ import annotations

import bisect
import json
import re
from typing import TYPE_CHECKING, Final

from evalexport.masking.names import names_a_secret, names_a_vocabulary_token
from evalexport.masking.rules import (
    LAST_WORD_ANCHORS,
    anchor_places,
    ends_a_last_word,
    run_end,
)

if TYPE_CHECKING:
    from evalexport.masking.values import ValueMasking

__all__ = ["masked_json_text"]

# An escape that may spell an anchor's character ("\u006b" for "k", "\/" for "/"): JSON text
# from json.dumps and msgspec writes neither, but a text from elsewhere may.
_HIDING: Final = re.compile(r"\\(?:/|u(?!00[01][0-9a-fA-F]))")
_DECODER: Final = json.JSONDecoder()
_SPACE: Final = re.compile(r"[ \t\r\n]*")
_SCAN_STRING: Final = json.decoder.scanstring  # type: ignore[attr-defined]


def masked_json_text(masking: ValueMasking, text: str) -> str | None:
    """``text``, a JSON document, with each string that holds an anchor masked where it stands
    (the known secrets are the caller's to remove); ``None`` when the text needs the parsed
    path (module docstring)."""
    if _HIDING.search(text) is not None:
        return None
    anchors = _Anchors(text)
    if not anchors.next:
        return text
    if text.lstrip()[:1] not in ("{", "[", '"'):
        return None
    pieces: list[str] = []
    done = 0
    logprobs: bool | None = None  # whether the text holds a logprobs entry, looked up once
    while anchors.next:
        at = min(anchors.next.values())
        opening = _opening_quote(text, at)
        if opening is None:
            return None
        try:
            held, end = _SCAN_STRING(text, opening + 1)
        except ValueError:
            return None
        colon = run_end(_SPACE, text, end)
        if not text.startswith(":", colon):  # a string in an array or a mapping's value
            masked_text = masking.text(held)
            if masked_text != held:
                pieces += [text[done:opening], _encoded(masked_text)]
                done = end
            anchors.skip(end)
            continue
        if masking.text(held) != held:
            return None  # a key the rules change: the parsed path keeps keys apart
        if not names_a_secret(held, masking.kind):
            anchors.skip(end)
            continue
        if held == "token":
            if logprobs is None:
                logprobs = '"logprob"' in text
            if logprobs:
                return None  # a logprobs entry's token may be the model's word: parsed path
        start = run_end(_SPACE, text, colon + 1)
        try:
            value, stop = _DECODER.raw_decode(text, start)
        except ValueError:
            return None
        masked = masking.under_secret_key(value, names_a_vocabulary_token(held))
        if masked is not value and masked != value:
            pieces += [text[done:start], _encoded(masked)]
            done = stop
        anchors.skip(stop)  # what the key holds is masked with it
    return "".join(pieces) + text[done:] if pieces else text


class _Anchors:
    """Where each anchor stands next in a text: every place of every anchor found in one pass
    (:func:`~evalexport.masking.rules.anchor_places`), each anchor then moved past the
    strings read."""

    def __init__(self, text: str) -> None:
        self._places: dict[str, list[int]] = {}
        self.next: dict[str, int] = {}
        for anchor, places in anchor_places(text).items():
            if anchor in LAST_WORD_ANCHORS:  # a last word only where no lower-case letter follows
                places = [at for at in places if ends_a_last_word(text, at + len(anchor), anchor)]
            if places:
                self._places[anchor] = places
                self.next[anchor] = places[0]

    def skip(self, end: int) -> None:
        """Move past ``end``: each anchor to its next place from there."""
        for anchor, at in list(self.next.items()):
            if at < end:
                places = self._places[anchor]
                index = bisect.bisect_left(places, end)
                if index < len(places):
                    self.next[anchor] = places[index]
                else:
                    del self.next[anchor]


def _opening_quote(text: str, at: int) -> int | None:
    """The quote that opens the JSON string holding ``at``: the last one before it that no
    backslash escapes."""
    quote = text.rfind('"', 0, at)
    while quote > 0:
        backslashes = 0
        while quote - backslashes > 0 and text[quote - backslashes - 1] == "\\":
            backslashes += 1
        if backslashes % 2 == 0:
            return quote
        quote = text.rfind('"', 0, quote)
    return quote if quote == 0 else None


def _encoded(value: object) -> str:
    """``value`` as the parsed path writes it (compact, ``ensure_ascii=False``)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
