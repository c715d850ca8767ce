"""A model's vocabulary, which looks like secrets and holds none: ``eos_token`` is a word of
it where ``hf_token`` is a credential, ``<|eot_id|>`` a tokenizer's special token."""

from __future__ import annotations

import re
from typing import Final

from evalexport.masking.rules import KNOWN_CREDENTIAL, SECRET_WORDS, key_words, looks_random

__all__ = ["is_vocabulary_marker", "names_a_vocabulary_token"]


# A vocabulary marker such as "[IDK]", "</s>" or "<|eot_id|>": a tokenizer's special token, in
# brackets, with no space. A credential never looks like one.
_MARKER = re.compile(r"\[[^\s\[\]]{1,62}\]|<[^\s<>]{1,62}>")


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
    """``abstention_token``, ``eos_token``: "token" is also a word of a model's vocabulary;
    ``access_token`` and ``hf_token`` are credentials."""
    words = key_words(str(key))
    return (
        bool(words)
        and words[-1] == "token"
        and not SECRET_WORDS.intersection(words)
        and not (len(words) > 1 and words[-2] in _CREDENTIAL_TOKENS)
    )


def is_vocabulary_marker(value: str) -> bool:
    """``[IDK]``, ``</s>``, ``<|eot_id|>``: short, bracketed, and nothing a generator would
    write inside (no digit, no long unbroken run, no credential's prefix)."""
    if not _MARKER.fullmatch(value):
        return False
    inside = value[1:-1].strip("|/")
    return not looks_random(inside) and not KNOWN_CREDENTIAL.search(inside)
