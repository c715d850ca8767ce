"""The text rules (SPEC §2): where in a string a secret stands, and whether it is one.

A secret stands after a secret's name (``NAME=value``, ``--name value``, ``name: value``,
``"name": "value"``), in a URL (its userinfo, its query), after an auth scheme (``Bearer``,
``Basic``) or behind an issuer's prefix (``sk-``, ``hf_``, ``AKIA``…). Whether it is one
depends on the text's kind (:data:`~evalexport.masking.names.TextKind`): in **structured**
text (a saved config's strings, a payload's, a message) a name's position is masked whatever
its value looks like, unless it holds none (:func:`~evalexport.masking.shapes.is_no_value`);
in **free** text (a row's prose, answers, code) only a value that looks generated is
(:func:`~evalexport.masking.shapes.looks_generated`), but for the positions no prose shares
(a URL's userinfo and query, an ``Authorization:`` header), masked as in structured text.

Every rule starts at an anchor (a word of a secret's name, ``@``, a scheme, a prefix) found
in one pass over the text lower-cased (every anchor at once: :func:`anchor_places`), and the
rules' patterns run only where an anchor stands: linear in the text,
whatever it holds (a saved config may hold a 1 MB few-shot prompt, a row a 20 KB answer).
What the rules find is a list of spans, each masked as one ``****`` (overlapping spans as one).
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable, Collection
from typing import Final

import ahocorasick_rs

from evalexport.masking.names import (
    FREE,
    KEY_QUALIFIERS,
    SECRET_LAST_WORDS,
    SECRET_NAMES,
    SECRET_WORDS,
    STRUCTURED,
    TextKind,
    is_secret_key,
    key_words,
    names_a_parameter,
    names_a_secret,
)
from evalexport.masking.shapes import (
    KNOWN_CREDENTIAL,
    MASK,
    is_interpolation,
    is_no_value,
    looks_generated,
    looks_like_basic_credential,
    looks_like_bearer_credential,
    looks_like_credential,
    looks_random,
)

__all__ = [
    "ANCHORS",
    "KEY_QUALIFIERS",
    "KNOWN_CREDENTIAL",
    "LAST_WORD_ANCHORS",
    "LAST_WORD_GOES_ON",
    "MASK",
    "SECRET_LAST_WORDS",
    "SECRET_NAMES",
    "SECRET_WORDS",
    "anchor_places",
    "ends_a_last_word",
    "is_interpolation",
    "is_secret_key",
    "key_words",
    "looks_like_credential",
    "looks_random",
    "lowered",
    "mask_text",
    "run_end",
    "secret_spans",
]

Span = tuple[int, int]

NAME_ANCHORS: Final = ("secret", "pass", "pwd", "credential", "cookie")
"""Lower-cased, each found anywhere: every secret name holds one of these or of
:data:`LAST_WORD_ANCHORS` (``pass``: ``password``, ``passwd``, ``passphrase``)."""
LAST_WORD_ANCHORS: Final = ("token", "key", "auth")
"""Lower-cased, each found where no lower-case letter follows (``hf_token``, ``apiKey``,
``X-Auth``, not ``tokens``, ``keyboard``, ``author``), or where its word goes on as a secret
name's does (:data:`LAST_WORD_GOES_ON`)."""
LAST_WORD_GOES_ON: Final = {"key": "data", "auth": "oriz"}
"""``clientKeyData`` (kubeconfig's), ``authorization``: an anchor followed by these letters is
one too."""
PREFIX_ANCHORS: Final = ("sk-", "hf_", "ghp_", "github_pat_", "glpat-", "xoxb-", "nvapi-", "akia")
ANCHORS: Final = (*NAME_ANCHORS, *LAST_WORD_ANCHORS, "@", "bearer", "basic", *PREFIX_ANCHORS)
"""Every anchor a rule starts from, lower-cased: a text that holds none is one no rule
changes (:func:`evalexport.masking.values.may_hold_secret` looks for them). A URL's query is
read from its parameters' names, its userinfo from the ``@`` before its host."""
_FINDER: Final = ahocorasick_rs.BytesAhoCorasick([anchor.encode() for anchor in ANCHORS])
"""Every anchor found in one pass over a text's bytes (Aho-Corasick, compiled): a long text
costs one scan, not one an anchor (``docs/performance.md``, "Masking a row-heavy run")."""


def ends_a_last_word(text: str, after: int, anchor: str) -> bool:
    """Whether a last-word anchor ending at ``after`` in ``text`` (as it is, or
    :func:`lowered`) ends a word there (no ASCII letter follows), or goes on as a secret
    name's word does (:data:`LAST_WORD_GOES_ON`)."""
    if after >= len(text):
        return True
    follows = text[after]
    if not ("a" <= follows <= "z" or "A" <= follows <= "Z"):
        return True
    goes_on = LAST_WORD_GOES_ON.get(anchor)
    if goes_on is None:
        return False
    word = text[after : after + len(goes_on)]
    return word.isascii() and word.lower() == goes_on


def mask_text(
    text: str, kind: TextKind = STRUCTURED, anchors: Collection[str] | None = None
) -> str:
    """``text`` with each secret it holds masked, as a text of ``kind`` reads (module
    docstring); structured by default, the strict reading. A caller that found them (a row's
    string) may give the only anchors (:data:`ANCHORS`) the text may hold."""
    if not text:
        return text
    spans = secret_spans(text, kind, anchors)
    return _masked(text, spans) if spans else text


def secret_spans(text: str, kind: TextKind, anchors: Collection[str] | None = None) -> list[Span]:
    """Where ``text`` holds secrets, as a text of ``kind`` reads: the spans to mask."""
    places = anchor_places(text)
    scan = _Scan(text, kind)
    if not places:
        return scan.spans
    # Each rule in turn (in _RULES' order), each of its anchors found, each place in order.
    for anchor in sorted(places, key=_RULE_ORDER.__getitem__):
        if anchors is None or anchor in anchors:
            rule = _RULE_OF[anchor]
            for at in places[anchor]:
                rule(scan, at, anchor)
    return scan.spans


def anchor_places(text: str) -> dict[str, list[int]]:
    """Where each anchor (:data:`ANCHORS`) stands in ``text``, its ASCII letters in any case:
    every place in order, overlapping ones too (``keykey``); an anchor absent has no entry.
    The text is looked through once, one byte a character (Latin-1, and ``?`` for any
    character beyond it: no anchor holds one), so a byte's place is its character's; a long
    text a megabyte at a time, never copied whole."""
    places: dict[str, list[int]] = {}
    for start in range(0, len(text), _PIECE):
        piece = text[start : start + _PIECE + _LONGEST_ANCHOR - 1]  # the text itself if short
        data = piece.encode("latin-1", "replace").lower()
        for index, at, _ in _FINDER.find_matches_as_indexes(data, overlapping=True):
            if at >= _PIECE:
                continue  # it starts in the next piece, which finds it
            anchor = ANCHORS[index]
            if (held := places.get(anchor)) is None:
                places[anchor] = [start + at]
            else:
                held.append(start + at)
    return places


_PIECE: Final = 1 << 20
"""How much of a text is looked through at once."""
_LONGEST_ANCHOR: Final = max(len(anchor) for anchor in ANCHORS)


def lowered(text: str) -> str:
    """``text`` with its ASCII letters lower-cased, every character where it was (``İ`` would
    become two under ``str.lower``)."""
    if text.isascii():
        return text.lower()
    return text.encode("utf-8", "surrogatepass").lower().decode("utf-8", "surrogatepass")


def run_end(run: re.Pattern[str], text: str, at: int) -> int:
    """Where the run of characters ``run`` matches (a pattern that matches the empty text
    too), starting at ``at``, ends."""
    match = run.match(text, at)
    return at if match is None else match.end()


def _masked(text: str, spans: list[Span]) -> str:
    """``text`` with each span, overlapping ones as one, replaced by ``****``."""
    merged: list[list[int]] = []
    for start, stop in sorted(spans):
        if start >= stop:
            continue
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], stop)
        else:
            merged.append([start, stop])
    pieces: list[str] = []
    done = 0
    for start, stop in merged:
        pieces += [text[done:start], MASK]
        done = stop
    return "".join(pieces) + text[done:]


class _Scan:
    """One text being looked through: what the rules read, the spans they found, and where
    the names already read start."""

    __slots__ = ("kind", "names", "spans", "text", "values")

    def __init__(self, text: str, kind: TextKind) -> None:
        self.text = text
        self.kind: TextKind = kind
        self.spans: list[Span] = []
        self.names: set[int] = set()
        """Where each name looked at starts: a name found by two of its words is read once."""
        self.values: list[list[int]] = []
        """Where the values read after names stand, merged and in order: a name inside one
        (``token=x?token=x?…``) is part of that value, and a million of them are read once."""

    def in_a_value(self, at: int) -> bool:
        """Whether ``at`` stands inside a value already read."""
        index = bisect.bisect_right(self.values, [at, _END]) - 1
        return index >= 0 and at < self.values[index][1]

    def read_value(self, start: int, stop: int) -> None:
        """Note the value read from ``start`` to ``stop``."""
        index = bisect.bisect_left(self.values, [start, -1])
        self.values.insert(index, [start, stop])
        merged: list[list[int]] = []
        for span in self.values[max(0, index - 1) : index + 2]:
            if merged and span[0] <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], span[1])
            else:
                merged.append(span)
        self.values[max(0, index - 1) : index + 2] = merged


_END: Final = 1 << 62


# --- after a secret's name -------------------------------------------------------------------

_NAME_CHARACTERS: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"
"""What a name is made of, read back from an anchor (as the word rule reads names: ASCII)."""
_NAME_OR_QUERY: Final = _NAME_CHARACTERS + "?&;#"
"""What may stand before a name's first letter when the name goes on before it, or when it
is a URL's parameter."""
_NAME_REST = re.compile(r"[A-Za-z0-9_.-]*")
_MAX_NAME = 128
_MAX_LINE_PREFIX: Final = 64
_PAIR_VALUE = {
    '"': re.compile(r"\s*:\s*\"(?P<value>(?:[^\"\\]|\\.)*)\"", re.DOTALL),
    "'": re.compile(r"\s*:\s*'(?P<value>(?:[^'\\]|\\.)*)'", re.DOTALL),
}
_ESCAPED_PAIR_VALUE = re.compile(r'\\"\s*:\s*\\"(?P<value>(?:[^"\\]|\\[^"])*)\\"')
_ASSIGNED = re.compile(
    r"[ \t]*=(?!=)[ \t]*(?P<value>(?:[rRbBuUfF]{1,2}(?=[\"']))?(?:\"[^\"\n]*\"|'[^'\n]*')"
    r"|[^\s\"'&#]+)"
)
_COLON = re.compile(r"[ \t]*:(?!:|//)[ \t]*")
_LINE_VALUE = re.compile(r"[^\n]*")
_ESCAPED_LINE_VALUE = re.compile(r"[^\n\"\\]*")
_INLINE_VALUE = re.compile(r"\"[^\"\n]*\"|'[^'\n]*'|[^\s\"'\\]+")
_HEADER_CREDENTIAL = re.compile(r"[^\s\"'\\]*")
_FLAG_VALUE = re.compile(r"\s+(?P<value>\"[^\"\n]*\"|'[^'\n]*'|[^\s\"'-][^\s\"']*)")
_SCHEME_WORD = re.compile(r"(?i:bearer|basic|token|digest|bot)[ \t]+")
_TRAILING = ".,;:!?…)]}>"


def _after_a_name(found: _Scan, at: int, anchor: str) -> None:
    """A secret's name at the anchor, and the value its syntax puts after it (module
    docstring): a pair, an assignment, a flag's value, a header or a ``name: value``."""
    text = found.text
    if anchor in LAST_WORD_ANCHORS and not ends_a_last_word(text, at + len(anchor), anchor):
        return  # "tokens", "keyboard", "author": no last word
    end = at + len(anchor)
    if (
        (at == 0 or text[at - 1] not in _NAME_OR_QUERY)
        and (end == len(text) or text[end] not in _NAME_CHARACTERS)
        and not names_a_secret(text[at:end], found.kind)
    ):
        return  # a word of its own and no secret's name: "the key step", "a token"
    if found.in_a_value(at):
        return
    before = text[max(0, at - _MAX_NAME) : at]
    start = at - (len(before) - len(before.rstrip(_NAME_CHARACTERS)))
    if 0 < start < at and text[start - 1] == "\\" and text[start].isalpha():
        start += 1  # "\\npassword:": an escaped line break ends before the name
    if start in found.names:
        return  # found by another of its words
    found.names.add(start)
    # A name read on at most _MAX_NAME characters past its anchor, as before it: a run of
    # name characters as long as the text ("token_" * 3,200) is no name, and read whole from
    # each of its anchors it cost the square of its length.
    stop = match.end() if (match := _NAME_REST.match(text, at, at + _MAX_NAME)) else at
    name = text[start:stop].rstrip(".-")
    stop = start + len(name)
    bare = name.lstrip("-")
    if not bare:
        return
    if _in_a_query(text, start):  # /v1/data?token=…: a URL's, relative or not
        if names_a_parameter(bare, found.kind) and (assigned := _PARAMETER_VALUE.match(text, stop)):
            _judge(found, assigned.span("value"), structured=True)
        return
    if not names_a_secret(bare, found.kind):
        return
    structured = found.kind == STRUCTURED
    header = _names_a_header(bare)
    quote = text[start - 1] if start else ""
    if quote and quote in "\"'" and text.startswith(quote, stop):
        if (pair := _PAIR_VALUE[quote].match(text, stop + 1)) is not None:
            _judge_pair(found, pair.span("value"), structured=structured, header=header)
        return
    if text.startswith('\\"', stop) and text[max(0, start - 2) : start] == '\\"':
        if (escaped := _ESCAPED_PAIR_VALUE.match(text, stop)) is not None:
            _judge_pair(found, escaped.span("value"), structured=structured, header=header)
        return
    if (assigned := _ASSIGNED.match(text, stop)) is not None:
        value = assigned.span("value")
        value = (value[0], value[0] + _closed(assigned["value"]))
        _judge(found, value, structured=structured, trim=not structured)
        return
    if (colon := _COLON.match(text, stop)) is not None:
        _after_a_colon(found, start, colon.end(), bare)
        return
    if len(name) - len(bare) in (1, 2) and (flag := _FLAG_VALUE.match(text, stop)) is not None:
        value = flag.span("value")
        if text[value[0]] in "\"'":
            value = (value[0] + 1, value[1] - 1)  # the quotes are kept
        _judge(found, value, structured=structured)


@functools.lru_cache(maxsize=4096)
def _names_a_header(name: str) -> bool:
    """Whether ``name`` is an ``Authorization`` header's (``X-Authorization`` too)."""
    return key_words(name)[-1:] == ["authorization"]


def _in_a_query(text: str, start: int) -> bool:
    """Whether the name at ``start`` is a URL's query or fragment parameter: after ``?``,
    ``&``, ``;`` or ``#`` in a run of URL characters holding a ``/`` (looked for in the 512
    characters before it, by C's own searches: a text of a million ``?token=`` stays linear)."""
    if start == 0 or text[start - 1] not in "?&;#":
        return False
    bound = max(0, start - _MAX_URL_BEFORE)
    begins = max(text.rfind(end, bound, start) for end in _ENDS_A_URL) + 1
    return text.find("/", max(begins, bound), start) >= 0


_MAX_URL_BEFORE: Final = 512
_ENDS_A_URL: Final = (" ", "\t", "\n", "\r", '"', "'", "<", ">", "\\")
# A parameter's value ends before a quote: "'https://h/?api_key=V'" keeps its closing quote.
_PARAMETER_VALUE: Final = re.compile(r"=(?P<value>[^&#\s;\"'<>\\]*)")


def _judge_pair(found: _Scan, span: Span, *, structured: bool, header: bool) -> None:
    """A quoted pair's value (``"api_key": "…"``); an ``Authorization`` header's scheme kept
    (``"Authorization": "Bearer ****"``). In free text a pair is code (``headers={
    'Authorization': 'Bearer foobar'}`` in a test), read by the value's shape."""
    start, stop = span
    if header and (scheme := _SCHEME_WORD.match(found.text, start, stop)) is not None:
        start = scheme.end()
    _judge(found, (start, stop), structured=structured)


def _closed(value: str) -> int:
    """The length of an unquoted value without the punctuation that closes what holds it
    (``[DB_PASSWORD=x]``, ``f(token=x)``, ``a=x, b=y``): a closer it does not open."""
    end = len(value)
    while end and value[end - 1] in ",;)]}" and _OPENERS[value[end - 1]] not in value[: end - 1]:
        end -= 1
    return end


_OPENERS: Final = {",": "\0", ";": "\0", ")": "(", "]": "[", "}": "{"}


def _after_a_colon(found: _Scan, start: int, value_at: int, name: str) -> None:
    """``name: value``: a header's or YAML's line of its own (the rest of the line), or a
    name in running text (the next word). An ``Authorization`` header is a header wherever
    a config writes it, and in a row on a line of its own or in quotes (``-H "Authorization:
    Bearer …"``); its scheme and quotes are kept, its credential masked unless it is none
    (``Bearer {{ token }}``)."""
    text = found.text
    begins = _line_prefix_start(text, start)
    own_line = begins == 0 or text[begins - 1] == "\n"
    escaped_line = text[max(0, begins - 2) : begins] == "\\n"
    structured = found.kind == STRUCTURED
    if _names_a_header(name):
        quote = text[start - 1] if start > 0 and text[start - 1] in "\"'" else ""
        if structured or own_line or escaped_line or quote:
            ends = quote or ("\\n" if escaped_line else "\n" if own_line else "")
            _judge(found, _credential(text, value_at, ends), structured=True)
            return
    elif (own_line or escaped_line) and structured:
        rest = run_end(_ESCAPED_LINE_VALUE if escaped_line else _LINE_VALUE, text, value_at)
        value = text[value_at:rest].rstrip(" \t\r")
        _judge(found, (value_at, value_at + len(value)), structured=True)
        return
    if (word := _INLINE_VALUE.match(text, value_at)) is not None:
        _judge(found, word.span(), structured=False, trim=True)


def _line_prefix_start(text: str, start: int) -> int:
    """Where the blanks before ``start`` begin, a list's dash among them (``  - name``,
    followed by a blank), looked for in the 64 characters before it."""
    bound = max(0, start - _MAX_LINE_PREFIX)
    begins = start
    while begins > bound and text[begins - 1] in " \t":
        begins -= 1
    if begins < start and begins > bound and text[begins - 1] == "-":
        begins -= 1
        while begins > bound and text[begins - 1] in " \t":
            begins -= 1
    return begins


def _credential(text: str, at: int, ends: str) -> Span:
    """Where an ``Authorization`` header's credential stands, its value starting at ``at``:
    after a quote and a scheme (``"Bearer …"``), up to the closing quote, or ``ends`` (the
    header's own end: the quote that opened it, its line's end), or the word's end."""
    quote = text[at] if at < len(text) and text[at] in "\"'" else ""
    start = at + len(quote)
    if (scheme := _SCHEME_WORD.match(text, start)) is not None:
        start = scheme.end()
    if quote or ends:
        stop = text.find(quote or ends, start)
        stop = len(text) if stop < 0 else stop
        return start, start + len(text[start:stop].rstrip(" \t\r"))
    return start, run_end(_HEADER_CREDENTIAL, text, start)


def _judge(found: _Scan, span: Span, *, structured: bool, trim: bool = False) -> None:
    """Mask ``span`` when it holds a value (a structured position) or a generated-looking one
    (free text); ``trim``: a sentence's punctuation after an unquoted value stays."""
    start, stop = span
    found.read_value(start, stop)
    value = found.text[start:stop]
    if structured:
        if not is_no_value(value):
            found.spans.append(span)
        return
    if looks_generated(value):
        if trim and value[:1] not in "\"'":
            stop = start + len(value.rstrip(_TRAILING))
        found.spans.append((start, stop))


# --- URLs ------------------------------------------------------------------------------------

_SCHEME = re.compile(r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,31}\Z")
# A user part holds no quote or backslash: JSON text such as '"https://schema.org","@type"'
# holds no user.
_USER = re.compile(r"[^:/?#@\s\"'\\`]*")
_URL_TEMPLATE = re.compile(r"\{\{|\{%|\$\{|\$\(|%\(|^<[^<>]*>$")
_USER_TEMPLATE = re.compile(r"\{\{|\{%|\$\{|\$\(|%\(|^\$(?:[A-Za-z_]\w*|\d+)$|^<[^<>]*>$")
_MAX_PASSWORD = 512
"""The longest URL password looked for (a generated one is 20 to 64 characters)."""
_HOST_ENDS = frozenset("/?#:")
_RANDOM_USER = 16


def _at_a_user(found: _Scan, at: int, anchor: str) -> None:
    """A URL's userinfo, at an ``@``: its password (``scheme://user:****@host``, a password
    holding ``@``, ``/``, ``?`` or ``#`` included) and a user part that is a token by itself
    (``https://ghp_…@github.com``, not ``ssh://git@``), in any text: no prose writes these.
    (A URL's query is read from its parameters' names: :func:`_after_a_name`.)"""
    text = found.text
    bound = max(0, at - _MAX_PASSWORD - _MAX_USER)
    scheme_end = text.rfind("://", bound, at)
    for _ in range(_SCHEMES_LOOKED_AT):  # "https://u:ab://cd@host": each URL it may end
        if scheme_end < 0:
            return
        if _SCHEME.search(text, max(0, scheme_end - 32), scheme_end) is not None:
            _userinfo(found, scheme_end + 3, at)
        scheme_end = text.rfind("://", bound, scheme_end)


_MAX_USER: Final = 128
_SCHEMES_LOOKED_AT: Final = 4


def _userinfo(found: _Scan, start: int, at: int) -> None:
    """The userinfo of a URL whose authority starts at ``start``, if it ends at the ``@`` at
    ``at``: its spans noted."""
    text = found.text
    user_end = run_end(_USER, text, start)
    if user_end == at > start:
        if _is_a_secret_user(text[start:user_end], found.kind):
            found.spans.append((start, user_end))
        return
    if not (user_end < at and text.startswith(":", user_end)):
        return
    password_at = user_end + 1
    end = _host_at(text, password_at)
    if end is None or end < at:
        return
    if _is_a_password(text[password_at:end]):
        found.spans.append((password_at, end))
        user = text[start:user_end]
        if len(user) >= _RANDOM_USER and looks_random(user):
            found.spans.append((start, user_end))  # GitHub's https://TOKEN:x-oauth-basic@


def _is_a_secret_user(user: str, kind: TextKind) -> bool:
    """Whether a URL's user part, alone before its host, is masked: in a saved config any
    user but none (``<token>``, ``$USER``) and Git's own ``git`` (``ssh://git@github.com``), as
    0.4.0 masked them; in a row one that looks like a credential (``https://ghp_…@``,
    ``https://john7@``), not a name."""
    if user == MASK or _USER_TEMPLATE.search(user):
        return False
    if kind == STRUCTURED:
        return user not in _PUBLIC_USERS and not is_no_value(user)
    return looks_like_credential(user)


_PUBLIC_USERS: Final = frozenset({"git"})


def _is_a_password(password: str) -> bool:
    """Whether what stands between a URL's user and its host is a password: not a port and
    a path (``host:4873/@scope/pkg``), not a placeholder (``<token>``, ``${TOKEN}``; a bare
    ``$0`` or ``$ecret`` is as likely real), not masked already."""
    if password.endswith("/") and password.rstrip("/").isdigit():
        return False
    return password != MASK and _URL_TEMPLATE.search(password) is None


def _host_at(text: str, start: int) -> int | None:
    """Where the "@" before a URL's host is, the password starting at ``start``: the first
    "@" within :data:`_MAX_PASSWORD` characters, and before any whitespace or double quote
    (the end of a JSON string), that a host follows (characters up to "/", "?", "#", ":",
    whitespace or the end, none an "@")."""
    limit = min(len(text), start + _MAX_PASSWORD + 1)
    at = text.find("@", start, limit)
    while at >= start:
        if any(character.isspace() or character == '"' for character in text[start:at]):
            return None
        end = at + 1
        while end < len(text) and not (
            text[end] in _HOST_ENDS or text[end] == "@" or text[end].isspace()
        ):
            end += 1
        if (
            end > at + 1
            and (end == len(text) or text[end] != "@")
            and _port_or_none(text, end, limit)
        ):
            return at if at > start else None  # "user:@host": no password to mask
        at = text.find("@", end, limit)
    return None


def _port_or_none(text: str, end: int, limit: int) -> bool:
    """Whether what follows a host candidate ending at ``end`` is no port, or a port: a ":"
    then digits up to the host's end, which a path, a query, a space or the end follows, or
    a mark that ends a sentence or a quotation (``…@db:5432.``, ``…@host:5055, with …``)
    where no other "@" the password may end at (before ``limit``) comes before the next
    space. ``p@ss:wordSECRET@host`` is a password holding "@" then ":", not the host ``ss``
    with a port."""
    if end == len(text) or text[end] != ":":
        return True
    digits = end + 1
    while digits < len(text) and text[digits].isdigit():
        digits += 1
    if digits == end + 1:
        return False
    if digits == len(text) or text[digits] in "/?#" or text[digits].isspace():
        return True
    if text[digits] not in _ENDS_A_PORT:
        return False
    later = text.find("@", digits, limit)  # "p@ss:12,x@host": the password goes on
    return later < 0 or any(character.isspace() for character in text[digits:later])


_ENDS_A_PORT: Final = frozenset(",;.!)]}>'\"…")
"""What may end a URL straight after its port, in prose or in a quotation."""


# --- auth schemes and issuers' prefixes ------------------------------------------------------

_SCHEMES: Final = {"Bearer", "BEARER", "Basic", "BASIC"}
_BEARER_VALUE = re.compile(r"\s+(?P<value>[^\s\"'\\]+)")
# Basic's credential is base64 (RFC 7617): "Basic (1 ms)" and "Basic floating-point" are not.
_BASIC_VALUE = re.compile(r"\s+(?P<value>[A-Za-z0-9+/]{8,}={0,2})(?![^\s\"',;)\\])")


def _after_a_scheme(found: _Scan, at: int, anchor: str) -> None:
    """``Bearer <credential>``, ``Basic <base64>`` in HTTP's own spelling, wherever they
    stand (:func:`~evalexport.masking.shapes.looks_like_bearer_credential`,
    :func:`~evalexport.masking.shapes.looks_like_basic_credential`)."""
    text = found.text
    word = text[at : at + len(anchor)]
    if word not in _SCHEMES or (at > 0 and (text[at - 1].isalnum() or text[at - 1] == "_")):
        return
    free = found.kind == FREE
    end = at + len(word)
    if word.lower() == "bearer":
        if (bearer := _BEARER_VALUE.match(text, end)) is not None:
            value = bearer["value"]
            if looks_like_bearer_credential(value, generated=free):
                stop = bearer.end()
                if free:
                    stop = bearer.start("value") + len(value.rstrip(_TRAILING))
                found.spans.append((bearer.start("value"), stop))
    elif (basic := _BASIC_VALUE.match(text, end)) is not None and looks_like_basic_credential(
        basic["value"], generated=free
    ):
        found.spans.append(basic.span("value"))


def _after_a_prefix(found: _Scan, at: int, anchor: str) -> None:
    """A credential by its issuer's prefix (:data:`KNOWN_CREDENTIAL`), masked when what
    follows looks generated (``sk-proj-…``), not written (``sk-learn-VISIBLE``)."""
    match = KNOWN_CREDENTIAL.match(found.text, at)
    if match is not None and (match["head"] == "AKIA" or looks_random(match["value"])):
        found.spans.append(match.span("value"))


_RULES: Final[tuple[tuple[tuple[str, ...], Callable[[_Scan, int, str], None]], ...]] = (
    ((*NAME_ANCHORS, *LAST_WORD_ANCHORS), _after_a_name),
    (("@",), _at_a_user),
    (("bearer", "basic"), _after_a_scheme),
    (PREFIX_ANCHORS, _after_a_prefix),
)
_RULE_OF: Final = {anchor: rule for anchors, rule in _RULES for anchor in anchors}
_RULE_ORDER: Final = {anchor: order for order, anchor in enumerate(_RULE_OF)}
"""Each anchor's rule, and the order the anchors are looked at in (the rules', in turn)."""
