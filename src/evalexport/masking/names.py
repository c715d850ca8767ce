"""Which names say a secret follows (SPEC §2): a mapping's key, the ``NAME`` of ``NAME=value``,
a flag, a header, a URL's query parameter. Deliberately word-based: ``hf_token`` and
``accessToken`` are secrets, ``max_tokens`` and ``key_metrics`` are not.

Where a name sits decides how far its words go (:data:`TextKind`): a saved config's names are
read as 0.4.0 read them (a bare ``key``, and ``credential``, ``cookie`` or ``authorization``
anywhere in a name), since every value it masked there stays masked; a row's names are read
by the rule alone, less the names of a model's vocabulary (:mod:`.vocabulary`), which look
like secrets in a rollout and hold none.
"""

from __future__ import annotations

import functools
import re
from typing import Final, Literal

from evalexport.masking.vocabulary import is_vocabulary_name

__all__ = [
    "FREE",
    "KEY_QUALIFIERS",
    "SECRET_LAST_WORDS",
    "SECRET_NAMES",
    "SECRET_WORDS",
    "STRUCTURED",
    "TextKind",
    "is_secret_key",
    "key_words",
    "names_a_parameter",
    "names_a_secret",
    "names_a_vocabulary_token",
]

TextKind = Literal["structured", "free"]
"""How a text is read (SPEC §2). ``"structured"``: a saved config's, a payload's, a message's
strings, where a secret's name says what follows is one whatever it looks like.
``"free"``: a row's prose, answers and code, where only a value's shape says it is one (but
for the positions no prose shares: a URL's userinfo and query, an ``Authorization:`` header
line, a mapping's key)."""
STRUCTURED: Final[TextKind] = "structured"
FREE: Final[TextKind] = "free"

SECRET_WORDS: Final = frozenset(
    {"secret", "secrets", "password", "passwords", "passwd", "pwd", "passphrase"}
)
"""Words that make a key secret wherever they stand in it (``db.password``, ``client_secret``)."""
SECRET_LAST_WORDS: Final = frozenset(
    {"token", "auth", "apikey", "credential", "credentials", "cookie", "cookies", "authorization"}
)
"""Words that make a key secret as its last word (``hf_token``, ``Proxy-Authorization``,
``Set-Cookie``), never before another (``token_count``, ``cookie_checker``)."""
KEY_QUALIFIERS: Final = frozenset(
    {"api", "access", "secret", "private", "client", "master", "signing", "encryption", "ssh"}
)
"""The words before a last word ``key`` that make it a credential (``api_key``, ``ssh-key``);
``key`` alone names a dictionary's key in NeMo Gym's rows (a document's, a record's), not a
secret."""
SECRET_NAMES: Final = frozenset({("client", "key", "data")})
"""Whole names, as words, that no word rule reaches: kubeconfig's ``client-key-data`` (a
private key in base64)."""
_GLUED_WORDS: Final = ("password", "passwd", "secret", "passphrase")
"""Secret words that end a longer word (libpq's ``PGPASSWORD``); ``secretary``,
``passwordless`` end otherwise."""
CONFIG_WORDS: Final = frozenset({"credential", "credentials", "cookie", "cookies", "authorization"})
"""Words that make a saved config's key secret wherever they stand (``credentials_file``), as
0.4.0 read them; a row's ``__sso_cookie_checker`` is a page's, not a secret."""
_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def key_words(key: str) -> list[str]:
    """A key's words, lower case, in any spelling: ``hfApiToken``, ``HF_API_TOKEN`` and
    ``hf-api-token`` are ``["hf", "api", "token"]``."""
    return [word.lower() for word in _WORD.findall(key)]


def is_secret_key(key: object) -> bool:
    """Whether a key names a secret (``hf_token``, ``apiKey``, ``x-api-key``, ``api_key_2``,
    ``OPENAI_KEY``, ``client-key-data``): the word rule of SPEC §2, for a config's keys, a
    row's, a header's and a ``NAME=value`` in text alike. Matched as whole words
    (:data:`SECRET_WORDS`, :data:`SECRET_LAST_WORDS`, :data:`KEY_QUALIFIERS`,
    :data:`SECRET_NAMES`), never as a substring: ``max_tokens``, ``key_metrics`` and ``key``
    are not secret."""
    return _names_a_secret(str(key))


def names_a_secret(name: str, kind: TextKind) -> bool:
    """Whether ``name`` says a secret follows, where a text of ``kind`` holds it: the word rule
    (:func:`is_secret_key`), with 0.4.0's wider reading in a saved config and the vocabulary's
    names set apart in a row (module docstring)."""
    return _names_in_config(name) if kind == STRUCTURED else _names_in_row(name)


def names_a_parameter(name: str, kind: TextKind) -> bool:
    """Whether a URL's query or fragment parameter ``name`` says a secret follows: as any
    name reads where it sits (:func:`names_a_secret`), and a bare ``key`` (Google's
    ``?key=…``), which a URL uses for nothing else."""
    return names_a_secret(name, kind) or _names_a_bare_key(name)


@functools.lru_cache(maxsize=4096)
def _names_a_bare_key(name: str) -> bool:
    words = key_words(name)
    while len(words) > 1 and words[-1].isdigit():
        words.pop()
    return words == ["key"]


@functools.lru_cache(maxsize=16384)  # a run's rows repeat their keys
def _names_a_secret(text: str) -> bool:
    """The words of a key, told against the rule (remembered)."""
    words = key_words(text)
    while len(words) > 1 and words[-1].isdigit():  # numbered: api_key_2, hf_token2
        words.pop()
    if not words:
        return False
    if words[-1] == "key" and len(words) > 1 and text.isupper():
        return True  # an environment variable's name: OPENAI_KEY, NVIDIA_KEY
    if SECRET_WORDS.intersection(words) or tuple(words) in SECRET_NAMES:
        return True
    if any(word.endswith(_GLUED_WORDS) for word in words):
        return True  # a word glued to another: PGPASSWORD, DBPASSWD, MYSECRET
    if words[-1] in SECRET_LAST_WORDS:
        # "input_cost_per_token" is a price, not a token.
        return not (len(words) > 1 and words[-2] == "per")
    if words[-1] == "key":
        return len(words) > 1 and words[-2] in KEY_QUALIFIERS
    return False


@functools.lru_cache(maxsize=4096)
def _names_in_config(name: str) -> bool:
    if _names_a_secret(name):
        return True
    words = key_words(name)
    while len(words) > 1 and words[-1].isdigit():  # key_2, as 0.4.0 read it
        words.pop()
    return words == ["key"] or not CONFIG_WORDS.isdisjoint(words)


@functools.lru_cache(maxsize=16384)
def _names_in_row(name: str) -> bool:
    return _names_a_secret(name) and not is_vocabulary_name("_".join(key_words(name)))


_CREDENTIAL_TOKENS: Final = frozenset(
    {
        "access",
        "api",
        "auth",
        "bearer",
        "refresh",
        "session",
        "id",
        "oauth",
        "client",
        "personal",
        "private",
        "hf",
        "github",
        "gh",
        "gitlab",
        "slack",
        "service",
        "gateway",
    }
)
"""Words that make "<word>_token" a credential whatever its value looks like."""


def names_a_vocabulary_token(key: object) -> bool:
    """``abstention_token``, ``eos_token``: "token" is also a word of a model's vocabulary, so a
    bracketed marker (:func:`~evalexport.masking.vocabulary.is_vocabulary_marker`) under such a
    key is kept even in a saved config; ``access_token`` and ``hf_token`` are credentials."""
    words = key_words(str(key))
    return (
        bool(words)
        and words[-1] == "token"
        and not SECRET_WORDS.intersection(words)
        and not (len(words) > 1 and words[-2] in _CREDENTIAL_TOKENS)
    )
