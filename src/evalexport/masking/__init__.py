"""Secret masking (SPEC §2): which names say a secret follows (:mod:`.names`), what a value
looks like (:mod:`.shapes`), the words that are no secret in a row (:mod:`.vocabulary`), the
text rules (:mod:`.rules`), the one masking function over values (:mod:`.values`) and JSON
texts (:mod:`.rows`), a run's config masked and saved (:mod:`.configs`), and what leaves the
process scrubbed (:mod:`.scrubbing`). Every public name is imported from
``evalexport.masking``.

A text is read as one of two kinds (:data:`TextKind`): a saved config's strings, a payload's
and a message's are **structured** (a secret's name says what follows is one), a row's are
**free** text (a value's shape says it is one).
"""

from __future__ import annotations

from evalexport.masking.configs import (
    SAVED_CONFIG_SUFFIX,
    find_unmasked_secrets,
    mask_config,
    mask_config_reporting,
    save_run_config,
    saved_config_path,
)
from evalexport.masking.names import FREE, STRUCTURED, TextKind, is_secret_key
from evalexport.masking.rules import MASK, mask_text
from evalexport.masking.scrubbing import (
    SCRUBBER,
    SecretScrubber,
    is_secret_variable,
    known_secrets,
    scrub_json_bytes,
    scrub_logs,
    scrub_text,
    scrub_value,
    shown_override,
)
from evalexport.masking.values import mask_value

__all__ = [
    "FREE",
    "MASK",
    "SAVED_CONFIG_SUFFIX",
    "SCRUBBER",
    "STRUCTURED",
    "SecretScrubber",
    "TextKind",
    "find_unmasked_secrets",
    "is_secret_key",
    "is_secret_variable",
    "known_secrets",
    "mask_config",
    "mask_config_reporting",
    "mask_text",
    "mask_value",
    "save_run_config",
    "saved_config_path",
    "scrub_json_bytes",
    "scrub_logs",
    "scrub_text",
    "scrub_value",
    "shown_override",
]
