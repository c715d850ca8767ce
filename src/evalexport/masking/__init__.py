"""Secret masking (SPEC §2): the rules (:mod:`.rules`), a run's config masked and saved
(:mod:`.configs`), and what leaves the process scrubbed (:mod:`.scrubbing`). Every name is
imported from ``evalexport.masking``."""

from __future__ import annotations

from evalexport.masking.configs import (
    SAVED_CONFIG_SUFFIX,
    find_unmasked_secrets,
    mask_config,
    mask_config_reporting,
    save_run_config,
    saved_config_path,
)
from evalexport.masking.rules import MASK, is_secret_key, mask_text
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

__all__ = [
    "MASK",
    "SAVED_CONFIG_SUFFIX",
    "SCRUBBER",
    "SecretScrubber",
    "find_unmasked_secrets",
    "is_secret_key",
    "is_secret_variable",
    "known_secrets",
    "mask_config",
    "mask_config_reporting",
    "mask_text",
    "save_run_config",
    "saved_config_path",
    "scrub_json_bytes",
    "scrub_logs",
    "scrub_text",
    "scrub_value",
    "shown_override",
]
