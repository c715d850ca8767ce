"""Words that look like secrets and hold none where they sit (SPEC §2, docs/reliability.md): a
model's vocabulary (``eos_token`` is a word of it where ``hf_token`` is a credential,
``<|eot_id|>`` a tokenizer's special token), counts and scores of tokens and passwords, and the
names of secrets, not their values. Data in one place: :data:`NOT_SECRET_NAMES`.
"""

from __future__ import annotations

import functools
import re
from typing import Final

from evalexport.masking.shapes import KNOWN_CREDENTIAL, looks_random

__all__ = ["NOT_SECRET_NAMES", "is_vocabulary_marker", "is_vocabulary_name"]

NOT_SECRET_NAMES: Final = (
    # A model's vocabulary: its special tokens and its tokenizer, never a credential.
    "*_tokens",
    "eos_token",
    "bos_token",
    "pad_token",
    "unk_token",
    "sep_token",
    "cls_token",
    "mask_token",
    "stop_token",
    "eot_token",
    "eom_token",
    "image_token",
    "abstention_token",
    "next_token",
    "*_start_token",
    "*_end_token",
    "tokenizer*",
    # What is measured of a secret is no secret: a password's strength, a score, a count.
    "*_score",
    "*_scores",
    "password_strength*",
    # A secret's name is not its value: Kubernetes' secret_name, a game's secret_santa.
    "secret_name",
    "secret_names",
    "secret_santa",
)
"""The names that are no secret in a row, as words joined by ``_`` (``eosToken`` and
``EOS-TOKEN`` are ``eos_token``), each a pattern (``*``: any words) matched against the whole name or its
last words (``eos_token`` is also ``tokenizer.eos_token``'s). In a row (free text, SPEC §2)
the value under such a name is masked by its shape alone; ``hf_token``, ``access_token`` and
``api_key`` are never among them. A saved config reads them as 0.4.0 did, as secrets (a
vocabulary marker under a ``…_token`` key kept: :func:`is_vocabulary_marker`)."""

_PATTERN: Final = re.compile(
    "|".join(
        f"(?:.*_)?{re.escape(pattern).replace(re.escape('*'), '.*')}"
        for pattern in NOT_SECRET_NAMES
    )
)


@functools.lru_cache(maxsize=4096)
def is_vocabulary_name(words: str) -> bool:
    """Whether a name, as its words joined by ``_`` (lower case), is in the vocabulary
    (:data:`NOT_SECRET_NAMES`); never one whose last word is a credential's
    (``tokenizer_api_key``, ``tokenizer_secret``: ``tokenizer*`` does not take them)."""
    if words.rpartition("_")[2] in _CREDENTIAL_WORDS:
        return False
    if len(words) > _LONGEST_NAME:  # no vocabulary name is that long; the pattern's ``.*``
        return False  # runs would cost the cube of its length (``token_`` * 1,333: 50 s)
    return _PATTERN.fullmatch(words) is not None


_LONGEST_NAME: Final = 256
"""The longest name looked up in the vocabulary; a longer one is read as any other name."""


_CREDENTIAL_WORDS: Final = frozenset(
    {"key", "keys", "secret", "secrets", "password", "passwords", "passwd", "credentials"}
)
"""The last words of a name that hold a credential whatever comes before them."""


# A vocabulary marker such as "[IDK]", "</s>" or "<|eot_id|>": a tokenizer's special token, in
# brackets, with no space. A credential never looks like one.
_MARKER = re.compile(r"\[[^\s\[\]]{1,62}\]|<[^\s<>]{1,62}>")


def is_vocabulary_marker(value: str) -> bool:
    """``[IDK]``, ``</s>``, ``<|eot_id|>``: short, bracketed, and nothing a generator would
    write inside (no digit, no long unbroken run, no credential's prefix)."""
    if not _MARKER.fullmatch(value):
        return False
    inside = value[1:-1].strip("|/")
    return not looks_random(inside) and not KNOWN_CREDENTIAL.search(inside)
