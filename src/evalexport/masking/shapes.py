"""What a value looks like (SPEC §2): no value at all (``None``, ``${oc.env:X}``, ``<token>``),
a value a person wrote (``letmein``, ``10-year``), or one a machine generated (``S3cr3t!42``,
``sk-proj-…``, a base64 ``user:password``). The text rules (:mod:`.rules`) ask these questions
of what follows a secret's name or an auth scheme; none of them reads a name.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Final

__all__ = [
    "KNOWN_CREDENTIAL",
    "MASK",
    "is_interpolation",
    "is_no_value",
    "looks_generated",
    "looks_like_basic_credential",
    "looks_like_bearer_credential",
    "looks_like_credential",
    "looks_random",
]

MASK: Final = "****"

# A credential by its issuer's prefix (OpenAI, Hugging Face, GitHub, GitLab, Slack, NVIDIA, AWS).
KNOWN_CREDENTIAL: Final = re.compile(
    r"(?<![A-Za-z0-9_-])(?P<head>"
    r"sk-(?=[A-Za-z0-9_-]{16})|hf_(?=[A-Za-z0-9]{16})|ghp_(?=[A-Za-z0-9]{16})"
    r"|github_pat_(?=[A-Za-z0-9_]{16})|glpat-(?=[A-Za-z0-9_-]{16})|xoxb-(?=[A-Za-z0-9-]{16})"
    r"|nvapi-(?=[A-Za-z0-9_-]{16})"
    r"|AKIA(?=[0-9A-Z]{16}(?![0-9A-Za-z]))"
    r")(?P<value>[A-Za-z0-9_-]+)"
)
_INTERPOLATION = re.compile(r"\$\{[^{}]+\}")

_RANDOM_RUN = 16
_SEPARATORS = re.compile(r"[-_.]")


def is_interpolation(value: str) -> bool:
    """Whether ``value`` is an interpolation (``${oc.env:HF_TOKEN}``): where a secret comes
    from, never the secret, so it is kept as written."""
    return _INTERPOLATION.fullmatch(value.strip()) is not None


def looks_random(text: str) -> bool:
    """Whether ``text`` reads as generated: it holds a digit, or a run of 16 characters with no
    separator. Generated keys of 16 or more characters almost surely do; words joined by
    ``-`` or ``_`` do not."""
    if any(character.isdigit() for character in text):
        return True
    return any(len(part) >= _RANDOM_RUN for part in _SEPARATORS.split(text))


_STRING_PREFIX = re.compile(r"^[rRbBuUfF]{1,2}(?=[\"'])")
_PREFIX_LETTERS: Final = frozenset("rRbBuUfF")
_NO_VALUE_WORDS: Final = frozenset({"none", "null", "nil", "undefined", "~"})
_PLACEHOLDERS: Final = frozenset({"value", "VALUE", "...", "…", "VAL", "X", "TOKEN", "KEY"})
"""What usage texts write after ``key=`` (``+key=value``, ``HF_TOKEN=...``): never a secret."""
# Where a value comes from, written whole: an interpolation, a template, a shell or format
# variable, a placeholder in angle brackets ("${oc.env:X}", "{{ token }}", "{token}",
# "$HF_TOKEN", "$1", "%(token)s", "<access_key>"), or a run of x's.
_REFERENCE = re.compile(
    r"\$\{[^{}]+\}|\{\{.*\}\}|\{%.*%\}|\{[A-Za-z_]\w*\}|\$\([^()]*\)|\$[A-Za-z_]\w*|\$\d+"
    r"|%\([^()]*\)[a-z]?|<[^<>]*>|x+|X+",
    re.DOTALL,
)


def _unquoted(value: str) -> tuple[str, bool]:
    """``value`` without a string literal's prefix and quotes, and whether it was quoted."""
    text = value.strip()
    if text[:1] in _PREFIX_LETTERS:  # r"…", b'…', f"…": the prefix goes
        text = _STRING_PREFIX.sub("", text)
    quoted = len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'"
    return (text[1:-1].strip() if quoted else text), quoted


def is_no_value(value: str) -> bool:
    """Whether ``value`` (quoted or not) holds no value where a secret's name says one follows:
    empty, ``None``/``null``, masked already (``****``), a usage text's placeholder
    (``VALUE``, ``...``), or a reference written whole (an interpolation ``${oc.env:X}``, a
    template ``{{ x }}``, ``$VAR``, ``<placeholder>``). The only values a structured position
    keeps (SPEC §2)."""
    core, _ = _unquoted(value)
    return (
        not core
        or not core.strip("*")
        or core.lower() in _NO_VALUE_WORDS
        or core in _PLACEHOLDERS
        or _REFERENCE.fullmatch(core) is not None
    )


_TRAILING = ".,;:!?…)]}>"
_PIECES = re.compile(r"[-_.~+/=:@,]+")
_SWITCH = re.compile(r"(?<=[A-Za-z])(?=[0-9])|(?<=[0-9])(?=[A-Za-z])")
_CODE = re.compile(r"[()\[\]{}\s]|^[A-Za-z_]+\.[A-Za-z_]")
"""Code, not a value: a call, an index, an attribute (``get_token()``, ``os.environ[``,
``self.token``)."""
_WORDS_ONLY = re.compile(r"[A-Z]?[a-z]+(?:[A-Z][a-z]+)*|[A-Z]+")
"""An identifier made of words (``getPasswordFromVault``, ``MAXLEN``): code, not a key."""
_GENERATED_PIECE = 8
_GENERATED_RUN = 20


def looks_generated(value: str) -> bool:
    """Whether ``value`` reads as generated, as prose, answers and code never write a word or a
    number: a piece of it (between ``-_.~+/=:@,``) of 8 characters mixing letters and digits,
    or of 6 switching between them three times (``S3cr3t``, ``a1b2c3``), or a run of
    20 characters that is not words. ``5``, ``10-year``, ``gpt-4o-mini``, ``2024-01-01``,
    ``llama3`` and ``letmein`` are written, not generated; so are code (``self.token``,
    ``os.environ[``), references (``$TOKEN``) and no value (:func:`is_no_value`).

    The one test of free text (a row's prose, answers and code): what follows a secret's name
    or ``Bearer`` there is masked only when it looks like this (SPEC §2)."""
    core, quoted = _unquoted(value)
    if not quoted:
        core = core.rstrip(_TRAILING)
    if len(core) < 6 or not _has_a_generated_piece(core):
        return False
    return _CODE.search(core) is None and not is_no_value(core)


def _has_a_generated_piece(core: str) -> bool:
    """Whether a piece of ``core`` (:func:`looks_generated`) reads as generated."""
    for piece in _PIECES.split(core):
        if len(piece) >= _GENERATED_RUN and not _WORDS_ONLY.fullmatch(piece):
            return True
        if len(piece) < 6 or not _has_letter_and_digit(piece):
            continue
        if len(piece) >= _GENERATED_PIECE or len(_SWITCH.findall(piece)) >= 3:
            return True
    return False


def _has_letter_and_digit(text: str) -> bool:
    return any(c.isdigit() for c in text) and any(c.isalpha() for c in text)


_CREDENTIAL_RUN = 20
_BLANK = re.compile(r"\s")
_TEMPLATE = re.compile(r"\{\{|\{%|\$\{|\$\(|%\(|^\$(?:[A-Za-z_]\w*|\d+)$|^<[^<>]*>$")
_NOT_A_VALUE: Final = frozenset(
    {"none", "null", "nil", "true", "false", "undefined", "nan", "n/a", "na", "empty"}
)
_CODE_ENDS = "([{,;)"


def looks_like_credential(value: str, name: str = "") -> bool:
    """Whether a value looks like a live credential: it holds a digit, or a run of 20
    characters that is not words; and it is no "no value" (``None``, ``''``), no template or
    variable, no placeholder, not the name itself (``client_key=client_key``) and no code
    (``self.token``, ``os.environ[``). What a warning calls a live secret (a config's
    ``policy_api_key: dummy`` is masked, and no live secret to warn of), and what a URL's user
    part must look like to be masked (``https://ghp_…@github.com``, not ``ssh://git@``)."""
    unprefixed = _STRING_PREFIX.sub("", value.strip())
    quoted = unprefixed[:1] in ("'", '"')
    core = unprefixed.strip("\"'").strip()
    if not quoted:
        core = core.rstrip(_CODE_ENDS)
    if not core or MASK in core or core in _PLACEHOLDERS or core.lower() in _NOT_A_VALUE:
        return False
    if is_interpolation(core) or _TEMPLATE.search(core):
        return False
    if core.lower() == name.lower().lstrip("-"):
        return False
    if not quoted and _BLANK.search(core):
        return False  # words, code: a credential written bare is one run of characters
    if any(character.isdigit() for character in core):
        return True
    return any(
        len(part) >= _CREDENTIAL_RUN and not _WORDS_ONLY.fullmatch(part)
        for part in _SEPARATORS.split(core)
    )


# A bearer credential's look in a saved config (0.4.0's): a digit, one of "-_~+/=", or an
# inner "."; or 12 characters ("Bearer abcdefghijkl"). Never a template ("Bearer {{ t }}").
_BEARER_LOOK = re.compile(r"[^\s\"'\\]*(?:[0-9\-_~+/=]|\.[^\s\"'.\\])")
_BEARER_RUN = 12


def looks_like_bearer_credential(value: str, *, generated: bool) -> bool:
    """Whether ``value`` after ``Bearer`` is a credential: in free text when it looks
    generated (:func:`looks_generated`: ``Bearer 10-year`` is a bond), in structured text when
    it has a credential's look or is 12 characters long (0.4.0's reading)."""
    if is_no_value(value) or value.startswith(("{{", "${", "$(")):
        return False
    if generated:
        return looks_generated(value)
    return _BEARER_LOOK.match(value) is not None or len(value.rstrip(".,")) >= _BEARER_RUN


_BASE64_LOOK = re.compile(r"[A-Za-z0-9+/]*[0-9+/=]")


def looks_like_basic_credential(value: str, *, generated: bool) -> bool:
    """Whether ``value`` after ``Basic`` (base64, RFC 7617) is a credential: it decodes to
    ``user:password`` (``Basic 12345678`` decodes to bytes no person typed); in structured
    text also any base64 run holding a digit, ``+``, ``/`` or ``=``, or 20 characters long
    (0.4.0's reading, but for words no base64 holds: ``Basic single-step``)."""
    if _decodes_to_user_and_password(value):
        return True
    return not generated and (_BASE64_LOOK.match(value) is not None or len(value) >= _BASIC_RUN)


_BASIC_RUN = 20


def _decodes_to_user_and_password(value: str) -> bool:
    if value.islower() or value.isupper() or value.isdigit():
        return False  # "arithmetic", "ABCDEFGH", "12345678": base64 of text mixes its cases
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
        text = decoded.decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    return ":" in text and text.isprintable()
