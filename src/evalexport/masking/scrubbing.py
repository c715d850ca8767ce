"""Secrets scrubbed from anything about to leave the process: results, messages, logs
(SPEC §2). The masking rules (:mod:`.rules`) apply, and the values of secret-named environment
variables and of the secrets an export in progress knows (:func:`known_secrets`) are removed,
for tokens that never were in a config.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Final

from evalexport.masking.configs import mask_config
from evalexport.masking.rules import MASK, is_secret_key, mask_text

__all__ = [
    "SCRUBBER",
    "SecretScrubber",
    "is_secret_variable",
    "known_secrets",
    "scrub_json_bytes",
    "scrub_logs",
    "scrub_text",
    "scrub_value",
    "secrets_known",
    "shown_override",
]

_MIN_ENV_SECRET_LENGTH = 8

_NOT_SECRET_VARIABLES = frozenset({"PWD", "OLDPWD"})
"""Shell variables whose names read as secrets ("pwd") but hold directories."""


@functools.lru_cache(maxsize=4096)
def is_secret_variable(name: str) -> bool:
    """Whether an environment variable's name says it holds a secret (``HF_TOKEN``)."""
    return name not in _NOT_SECRET_VARIABLES and is_secret_key(name)


_environment_seen: tuple[tuple[tuple[str, str], ...], list[str]] | None = None
"""The environment last scrubbed for, and its secrets: found again only when it changed (a
scrub of each of a 4,000-record marker's targets read every variable's name 4,000 times)."""


def _environment_secrets() -> list[str]:
    global _environment_seen
    environment = tuple(os.environ.items())
    seen = _environment_seen
    if seen is not None and seen[0] == environment:
        return seen[1]
    values = {
        value
        for name, value in environment
        if is_secret_variable(name) and len(value) >= _MIN_ENV_SECRET_LENGTH and value != MASK
    }
    secrets = sorted(values, key=len, reverse=True)
    _environment_seen = (environment, secrets)
    return secrets


def shown_override(token: str) -> str:
    """A ``+key=value`` token as a message may echo it: a secret-named key's value is never
    shown, and any other value is masked by its shape."""
    key, separator, value = token.lstrip("+~").partition("=")
    if separator and value and is_secret_key(key.rsplit(".", 1)[-1]):
        return token[: len(token) - len(value)] + MASK
    return mask_text(token)


_known_secrets: dict[str, int] = {}
_known_lock = threading.Lock()


@contextlib.contextmanager
def known_secrets(secrets: Iterable[str]) -> Iterator[None]:
    """While the block runs, ``secrets`` (an export's token options, what a credential helper
    gave) are scrubbed from everything :func:`scrub_text` and :func:`scrub_value` see, and so
    from every log record of the ``evalexport`` loggers (:class:`SecretScrubber`)."""
    kept = [secret for secret in secrets if len(secret) >= _MIN_ENV_SECRET_LENGTH]
    with _known_lock:
        for secret in kept:
            _known_secrets[secret] = _known_secrets.get(secret, 0) + 1
    try:
        yield
    finally:
        with _known_lock:
            for secret in kept:
                left = _known_secrets.pop(secret) - 1
                if left:
                    _known_secrets[secret] = left


def _secrets_known(also: Sequence[str]) -> list[str]:
    with _known_lock:
        known = list(_known_secrets)
    everything = {*_environment_secrets(), *known, *(s for s in also if s)}
    return sorted(everything, key=len, reverse=True)  # a longer secret before its prefix


def secrets_known() -> list[str]:
    """The secrets :func:`scrub_text` removes besides the shapes it masks, longest first: the
    values of secret-named environment variables and those of :func:`known_secrets`."""
    return _secrets_known(())


def scrub_text(text: str, also: Sequence[str] = ()) -> str:
    """:func:`mask_text`, and the values of secret-named environment variables, the secrets
    an export in progress knows (:func:`known_secrets`) and ``also`` removed."""
    text = mask_text(text)
    for secret in _secrets_known(also):
        text = text.replace(secret, MASK)
    return text


class SecretScrubber(logging.Filter):
    """Scrubs a log record (its message with its arguments, and its traceback) as
    :func:`scrub_text` scrubs text, at every level."""

    def filter(self, record: logging.LogRecord) -> bool:
        """The record, scrubbed in place; never dropped."""
        message = record.getMessage()
        scrubbed = scrub_text(message)
        if scrubbed != message or record.args:
            record.msg, record.args = scrubbed, ()
        if record.exc_info:
            record.exc_text = scrub_text(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        if record.stack_info:
            record.stack_info = scrub_text(record.stack_info)
        return True


SCRUBBER: Final = SecretScrubber()
"""The one scrubber the ``evalexport`` loggers and the CLI's log handler carry."""


_factory_installed = False


def scrub_logs() -> None:
    """Scrub every record made on the ``evalexport`` logger or any logger below it (a
    plugin's ``evalexport.<name>`` among them, made now or later): a record factory that
    passes :data:`SCRUBBER` over those records as they are made, whatever handler they reach
    (the CLI's, a Python caller's, pytest's). Other loggers' records are left as they are."""
    global _factory_installed
    with _known_lock:
        if _factory_installed:
            return
        _factory_installed = True
        make = logging.getLogRecordFactory()

    def scrubbed_record(*arguments: object, **keywords: object) -> logging.LogRecord:
        record = make(*arguments, **keywords)
        if record.name == "evalexport" or record.name.startswith("evalexport."):
            SCRUBBER.filter(record)
        return record

    logging.setLogRecordFactory(scrubbed_record)


def scrub_value(value: object, also: Sequence[str] = ()) -> Any:
    """:func:`mask_config` for data about to leave the process, plus :func:`scrub_text`."""
    secrets = _secrets_known(also)

    def scrub(item: object) -> Any:
        if isinstance(item, dict):
            return {key: scrub(inner) for key, inner in item.items()}
        if isinstance(item, list):
            return [scrub(inner) for inner in item]
        if isinstance(item, str):
            for secret in secrets:
                item = item.replace(secret, MASK)
        return item

    return scrub(mask_config(value))


def scrub_json_bytes(data: bytes, *, lines: bool) -> bytes:
    """A JSON document (``lines=False``) or a JSON-lines file's bytes with
    :func:`scrub_value` applied to each value, for a file that leaves as a copy (NeMo Gym's
    health reports, whose failure messages may quote a token). A line that is not JSON is
    scrubbed as text."""
    import json

    if not lines:
        try:
            document = json.loads(data)
        except ValueError:
            return scrub_text(data.decode("utf-8", "replace")).encode()
        return (json.dumps(scrub_value(document), indent=2, ensure_ascii=False) + "\n").encode()
    out: list[str] = []
    for line in data.decode("utf-8", "replace").splitlines():
        if not line.strip():
            continue
        try:
            out.append(json.dumps(scrub_value(json.loads(line)), ensure_ascii=False))
        except ValueError:
            out.append(scrub_text(line))
    return ("\n".join(out) + "\n").encode() if out else b""
