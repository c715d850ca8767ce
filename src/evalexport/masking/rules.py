"""The masking rules (SPEC §2): which keys name a secret, and which text carries one by its
shape, whatever key it sits under. Deliberately word-based: ``hf_token`` and ``accessToken``
are secrets, ``max_tokens`` and ``key_metrics`` are not.

Pure functions of their arguments; :mod:`.configs` applies them to a run's config, and
:mod:`.scrubbing` to anything about to leave the process.
"""

from __future__ import annotations

import functools
import re
from typing import Final

__all__ = [
    "KNOWN_CREDENTIAL",
    "MASK",
    "SECRET_WORDS",
    "is_interpolation",
    "is_secret_key",
    "key_words",
    "looks_like_credential",
    "looks_random",
    "mask_text",
]

MASK = "****"

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
_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_INTERPOLATION = re.compile(r"\$\{[^{}]+\}")

# Every pattern below is linear in the text it scans, whatever the text holds (a saved config
# may hold a 1 MB few-shot prompt): a URL scheme starts only where no scheme character precedes
# it and is at most 32 characters long, and no lazy or nested repetition backtracks over a line.
_SCHEME = r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,31}://"
# A URL's user part and ":": its password follows, up to the first "@" that a host follows, so
# a password may itself hold "@", and "/", "?" or "#" (base64 passwords often hold "/"; RFC
# 3986 wants them escaped, people do not). Found by scanning (:func:`_mask_url_passwords`), in
# time linear in the text: a pattern with a lazy run and a lookahead backtracks quadratically.
# A user part holds no character RFC 3986 leaves out of one ('"', "<", "{", ...): JSON text
# such as '"https://schema.org","@type"' holds no user.
_USER_CHARACTER = r"[^:/?#@\s\"'<>\\{}|^`]"
_URL_USERINFO = re.compile(rf"(?P<head>{_SCHEME}(?P<user>{_USER_CHARACTER}*):)")
_MAX_PASSWORD = 512
"""The longest URL password looked for (a generated one is 20 to 64 characters)."""
_HOST_ENDS = frozenset("/?#:")
# A user part alone (https://TOKEN@host) is a credential whatever its length: a host is never
# reached as a bare user name by an evaluation config, but tokens are, short ones too.
_URL_USER = re.compile(rf"(?P<head>{_SCHEME})(?P<user>{_USER_CHARACTER}+)(?=@)")
# A parameter's value ends before a quote: "'https://h/?api_key=V'" keeps its closing quote.
_QUERY_PARAM = re.compile(r"(?P<head>[?&;](?P<name>[^=&#\s;?]{1,64})=)(?P<value>[^&#\s\"']*)")
# A value may be a Python string literal with a prefix (api_key=b"...", HF_TOKEN=r'...').
_ASSIGNMENT = re.compile(
    # A name starts a word, or follows a sentence's end glued to it ("... $1000$.api_key=").
    r"(?:(?<![\w.-])|(?<=[0-9$)\]}]\.))(?P<head>(?P<name>-{0,2}[A-Za-z_][\w.-]*)=)"
    r"(?P<value>(?:[rRbBuUfF]{1,2}(?=[\"']))?(?:\"[^\"]*\"|'[^']*')|[^\s\"'&#]+)"
)
# HTTP's own spelling; the credential may hold "," and must look like one: a digit or one of
# "-_~+/=" or an inner ".", or 20 characters, so "the Bearer of news." and "Bearer
# authentication" stay prose. Basic's credential is base64 (RFC 7617): "Basic (1 ms)" and
# "Basic floating-point" are not one.
_CREDENTIAL_LOOK = r"(?=[^\s\"'\\]*(?:[0-9\-_~+/=]|\.[^\s\"'.\\]))"
_BEARER = re.compile(
    r"\b(?P<head>(?:Bearer|BEARER)\s+)"
    rf"(?P<value>(?:{_CREDENTIAL_LOOK}|(?=[^\s\"',.\\]{{20}}))(?![{{$<])[^\s\"'\\]+)"
    r"|\b(?P<basic>(?:Basic|BASIC)\s+)"
    r"(?P<basic_value>(?=[A-Za-z0-9+/]*[0-9+/=])[A-Za-z0-9+/]{8,}={0,2})(?![^\s\"',;)])"
)
_AUTHORIZATION_VALUE = re.compile(
    r"(?P<head>\bauthorization\s*:\s*(?:bearer\s+|basic\s+|token\s+)?)(?P<value>[^\s\"'\\]+)",
    re.IGNORECASE,
)
# "--hf-token VALUE": a secret-named flag followed by its value as the next word, or quoted.
_FLAG_VALUE = re.compile(
    r"(?<![\w-])(?P<head>--?(?P<name>[A-Za-z][\w-]*)\s+)"
    r"(?P<value>\"[^\"\s]*\"|'[^'\s]*'|[^\s\"'-][^\s\"']*)"
)
# "X-Api-Key: value" header lines and "name: value" lines of YAML text inside a string.
_HEADER_LINE = re.compile(
    r"(?m)^(?P<head>[ \t]*(?P<name>[A-Za-z][\w.-]*)[ \t]*:[ \t]*)(?P<value>\S(?:[^\n]*\S)?)[ \t\r]*$"
)
# The same lines after an escaped line break: JSON-encoded text ("a\\napi_key: VALUE").
_ESCAPED_HEADER_LINE = re.compile(
    r"(?<=\\n)(?P<head>[ \t]*(?P<name>[A-Za-z][\w.-]*)[ \t]*:[ \t]*)"
    r"(?P<value>[^\s\"\\](?:[^\n\"\\]*[^\s\"\\])?)"
)
# "\"api_key\": \"value\"" pairs of JSON text inside a string.
_JSON_PAIR = re.compile(
    r"(?P<head>[\"'](?P<name>[A-Za-z_][\w.-]{0,63})[\"']\s*:\s*(?P<quote>[\"']))"
    r"(?P<value>(?:[^\"'\\]|\\.)*)(?P=quote)"
)
# The same pairs in JSON text that is itself inside a JSON string (escaped quotes):
# '{\\"api_key\\": \\"VALUE\\"}' in a tool call's arguments logged as text.
_ESCAPED_JSON_PAIR = re.compile(
    r'(?P<head>\\"(?P<name>[A-Za-z_][\w.-]{0,63})\\"\s*:\s*\\")'
    r'(?P<value>(?:[^"\\]|\\[^"])*)(?=\\")'
)
# A credential by its issuer's prefix (OpenAI, Hugging Face, GitHub, GitLab, Slack, NVIDIA, AWS).
KNOWN_CREDENTIAL = re.compile(
    r"(?<![A-Za-z0-9_-])(?P<head>"
    r"sk-(?=[A-Za-z0-9_-]{16})|hf_(?=[A-Za-z0-9]{16})|ghp_(?=[A-Za-z0-9]{16})"
    r"|github_pat_(?=[A-Za-z0-9_]{16})|glpat-(?=[A-Za-z0-9_-]{16})|xoxb-(?=[A-Za-z0-9-]{16})"
    r"|nvapi-(?=[A-Za-z0-9_-]{16})"
    r"|AKIA(?=[0-9A-Z]{16}(?![0-9A-Za-z]))"
    r")(?P<value>[A-Za-z0-9_-]+)"
)


def key_words(key: str) -> list[str]:
    """A key's words, lower case, in any spelling: ``hfApiToken``, ``HF_API_TOKEN`` and
    ``hf-api-token`` are ``["hf", "api", "token"]``."""
    return [word.lower() for word in _WORD.findall(key)]


def is_secret_key(key: object) -> bool:
    """Whether a key names a secret (``hf_token``, ``apiKey``, ``x-api-key``, ``api_key_2``,
    ``OPENAI_KEY``, ``client-key-data``): the one rule of SPEC §2, for a config's keys, a
    row's, a header's and a ``NAME=value`` in text alike. Matched as whole words
    (:data:`SECRET_WORDS`, :data:`SECRET_LAST_WORDS`, :data:`KEY_QUALIFIERS`,
    :data:`SECRET_NAMES`), never as a substring: ``max_tokens``, ``key_metrics`` and ``key``
    are not secret."""
    return _names_a_secret(str(key))


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
    if words[-1] in SECRET_LAST_WORDS:
        # "input_cost_per_token" is a price, not a token.
        return not (len(words) > 1 and words[-2] == "per")
    if words[-1] == "key":
        return len(words) > 1 and words[-2] in KEY_QUALIFIERS
    return False


def is_interpolation(value: str) -> bool:
    """Whether ``value`` is an interpolation (``${oc.env:HF_TOKEN}``): where a secret comes
    from, never the secret, so it is kept as written."""
    return _INTERPOLATION.fullmatch(value.strip()) is not None


def mask_text(text: str) -> str:
    """Mask the secrets a string carries by its shape, whatever key it sits under."""
    if not text:
        return text
    text = _mask_url_passwords(text)
    text = _URL_USER.sub(_mask_url_user, text)
    text = _QUERY_PARAM.sub(_mask_named, text)
    text = _ASSIGNMENT.sub(_mask_assignment, text)
    text = _FLAG_VALUE.sub(_mask_flag, text)
    text = _JSON_PAIR.sub(lambda m: _mask_named(m, tail=m["quote"]), text)
    if '\\"' in text:
        text = _ESCAPED_JSON_PAIR.sub(_mask_named, text)
    if ":" in text:
        text = _AUTHORIZATION_VALUE.sub(_mask_authorization, text)
        text = _HEADER_LINE.sub(_mask_named, text)
        if "\\n" in text:
            text = _ESCAPED_HEADER_LINE.sub(_mask_named, text)
    text = _BEARER.sub(lambda m: (m["head"] or m["basic"]) + MASK, text)
    return KNOWN_CREDENTIAL.sub(_mask_known_credential, text)


def _mask_url_passwords(text: str) -> str:
    """``scheme://user:****@host``: each URL password masked; a user part that is itself a
    token (GitHub's ``https://TOKEN:x-oauth-basic@``) is masked too."""
    if "://" not in text:
        return text
    pieces: list[str] = []
    done = 0
    for match in _URL_USERINFO.finditer(text):
        start = match.end()
        if start < done:
            continue  # inside a password already masked
        at = _host_at(text, start)
        if at is None:
            continue
        password = text[start:at]
        if password.endswith("/") and password.rstrip("/").isdigit():
            continue  # host:port/@scope/pkg: a port, then a path
        if _URL_TEMPLATE.search(password):
            # "https://user:<token>@host", "https://u:${TOKEN}@host": a placeholder. Not a
            # bare "$0" or "$ecret": as a password they are as likely real, and are masked.
            continue
        user = match["user"]
        head = match["head"]
        if len(user) >= _RANDOM_RUN and looks_random(user):
            head = head.removesuffix(user + ":") + MASK + ":"
        pieces += [text[done : match.start()], head, MASK]
        done = at
    return "".join(pieces) + text[done:] if pieces else text


def _mask_url_user(match: re.Match[str]) -> str:
    """``scheme://****@host`` when the user part alone looks like a credential (a token as
    the user: ``https://ghp_…@github.com``); ``ssh://git@host`` names a user, not a secret."""
    user = match["user"]
    if user == MASK or _TEMPLATE.search(user) or not looks_like_credential(user):
        return match[0]
    return match["head"] + MASK


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
        if end > at + 1 and (end == len(text) or text[end] != "@") and _port_or_none(text, end):
            return at if at > start else None  # "user:@host": no password to mask
        at = text.find("@", end, limit)
    return None


def _port_or_none(text: str, end: int) -> bool:
    """Whether what follows a host candidate ending at ``end`` is no port, or a port: a ":"
    then digits up to the host's end. ``p@ss:wordSECRET@host`` is a password holding "@"
    then ":", not the host ``ss`` with a port."""
    if end == len(text) or text[end] != ":":
        return True
    digits = end + 1
    while digits < len(text) and text[digits].isdigit():
        digits += 1
    return digits > end + 1 and (
        digits == len(text) or text[digits] in "/?#" or text[digits].isspace()
    )


def _mask_known_credential(match: re.Match[str]) -> str:
    """A well-known prefix masks what follows only when that looks generated, not written:
    ``sk-proj-…`` keys hold digits or long random runs; ``sk-learn-VISIBLE`` is words."""
    if match["head"] == "AKIA" or looks_random(match["value"]):
        return match["head"] + MASK
    return match[0]


_RANDOM_RUN = 16
_SEPARATORS = re.compile(r"[-_.]")


def looks_random(text: str) -> bool:
    """Whether ``text`` reads as generated: it holds a digit, or a run of 16 characters with no
    separator. Generated keys of 16 or more characters almost surely do; words joined by
    ``-`` or ``_`` do not."""
    if any(character.isdigit() for character in text):
        return True
    return any(len(part) >= _RANDOM_RUN for part in _SEPARATORS.split(text))


_STRING_PREFIX = re.compile(r"^[rRbBuUfF]{1,2}(?=[\"'])")
_NOT_A_VALUE: Final = frozenset(
    {"none", "null", "nil", "true", "false", "undefined", "nan", "n/a", "na", "empty"}
)
"""What code and configs write for "no value"; never a secret."""
# A template, a shell or format variable, a placeholder in angle brackets: where a value
# comes from, never the value ("{{ my_token }}", "$HF_TOKEN", "%(token)s", "<access_key>").
_TEMPLATE = re.compile(r"\{\{|\{%|\$\{|\$\(|%\(|^\$(?:[A-Za-z_]\w*|\d+)$|^<[^<>]*>$")
_URL_TEMPLATE = re.compile(r"\{\{|\{%|\$\{|\$\(|%\(|^<[^<>]*>$")
_WORDS_ONLY = re.compile(r"[A-Z]?[a-z]+(?:[A-Z][a-z]+)*|[A-Z]+")
"""An identifier made of words (``getPasswordFromVault``, ``MAXLEN``): code, not a key."""
_CODE_ENDS = "([{,;)"


def looks_like_credential(value: str, name: str = "") -> bool:
    """Whether a value written after a secret name in text (``api_key=VALUE``, ``--token
    VALUE``, ``password: VALUE``) looks like a live credential: it holds a digit, or a run of
    20 characters that is not words; and it is no "no value" (``None``, ``''``), no template
    or variable, no placeholder, not the name itself (``client_key=client_key``) and no code
    (``self.token``, ``os.environ[``). Text is code, prose and data as often as it is a
    config: a secret's shape, not its name alone, says it is one (SPEC §2). A value under a
    secret key in structured data is masked whatever it looks like."""
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


_CREDENTIAL_RUN = 20
_BLANK = re.compile(r"\s")


def _mask_named(match: re.Match[str], tail: str = "") -> str:
    """``head + ****`` when the match's ``name`` is secret and its value looks like a live
    credential (:func:`looks_like_credential`)."""
    if not is_secret_key(match["name"]) or not looks_like_credential(match["value"], match["name"]):
        return match[0]
    return match["head"] + MASK + tail


def _mask_authorization(match: re.Match[str]) -> str:
    """``Authorization: [scheme] ****`` when what follows looks like a credential."""
    value = match["value"]
    if not looks_like_credential(value) and len(value.strip("\"'")) < _CREDENTIAL_RUN:
        return match[0]
    return match["head"] + MASK


def _mask_flag(match: re.Match[str]) -> str:
    """``--name ****``, or ``--name '****'`` for a quoted value: its quotes are kept."""
    value = match["value"]
    quote = value[0] if value[:1] in ("'", '"') else ""
    masked = _mask_named(match, tail=quote)
    return masked if masked == match[0] else masked.replace(match["head"], match["head"] + quote, 1)


_PLACEHOLDERS: Final = frozenset({"value", "VALUE", "...", "VAL", "X", "TOKEN", "KEY"})
"""What usage texts write after ``key=`` (``+key=value``, ``HF_TOKEN=...``): never a secret."""


def _mask_assignment(match: re.Match[str]) -> str:
    name = match["name"].lstrip("-")
    if not is_secret_key(name) or not looks_like_credential(match["value"], name):
        return match[0]
    return match["head"] + MASK
