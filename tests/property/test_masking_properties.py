"""Hypothesis properties of masking (SPEC §2): whatever the config, no planted secret survives."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st

from evalexport.masking import STRUCTURED, mask_config, mask_text, save_run_config
from evalexport.masking.names import names_a_secret
from tests.test_masking import REAL_NON_SECRET_KEYS, REAL_SECRET_KEYS


def is_secret_key(key: str) -> bool:
    """A saved config's names as masking reads them: 0.4.0's (a bare ``key``, a
    ``credentials_file``) included, as every value 0.4.0 masked in a config stays masked."""
    return names_a_secret(key, STRUCTURED)


SECRET_KEYS = st.sampled_from(REAL_SECRET_KEYS)
NON_SECRET_KEYS = st.sampled_from(
    [
        key
        for key in [*REAL_NON_SECRET_KEYS, "model", "env", "args", "url", "headers", "judge"]
        if not is_secret_key(key)
    ]
) | st.from_regex(r"[a-z]{1,8}(_[a-z]{1,8}){0,2}", fullmatch=True).filter(
    lambda key: not is_secret_key(key)
)
SAFE_TEXT = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789 /.:", max_size=30).filter(
    lambda text: mask_text(text) == text
)
SAFE_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | SAFE_TEXT
SECRETS = st.from_regex(r"CANARY[0-9a-f]{16}", fullmatch=True)
AWS_KEY_IDS = st.from_regex(r"AKIA[0-9A-Z]{16}", fullmatch=True)

PLANTED_FORMS = (
    lambda s: f"https://evals:{s}@mlflow.example.com/api",
    lambda s: f"https://judge.example.com/v1?region=us&token={s}",
    lambda s: f"HF_TOKEN={s}",
    lambda s: f'api_key=b"{s}"',
    lambda s: f"HF_TOKEN=r'{s}'",
    lambda s: f'password=u"{s}"',
    lambda s: f"note\\napi_key: {s}\\nmore",
    lambda s: f"python run.py --policy-api-key={s} --max_tokens=5",
    lambda s: f"Bearer {s}",
    lambda s: f"rotated sk-{s} today",
    lambda s: f"hf_{s}",
    lambda s: f"ghp_{s}",
    lambda s: f"github_pat_{s}",
    lambda s: f"glpat-{s}",
    lambda s: f"xoxb-{s}",
)


@st.composite
def planted_configs(draw: st.DrawFn) -> tuple[dict[str, Any], list[str]]:
    """A nested config and the secrets planted in it, under secret keys or inside values."""
    planted: list[str] = []

    def secret_string() -> str:
        secret = draw(SECRETS)
        planted.append(secret)
        return secret

    def under_secret_key(depth: int) -> Any:
        kind = draw(
            st.sampled_from(
                ["string", "list", "mapping", "scalar"] if depth < 2 else ["string", "scalar"]
            )
        )
        if kind == "string":
            return secret_string()
        if kind == "list":
            return [under_secret_key(depth + 1) for _ in range(draw(st.integers(0, 3)))]
        if kind == "mapping":
            keys = draw(st.sets(NON_SECRET_KEYS | SECRET_KEYS, max_size=3))
            return {key: under_secret_key(depth + 1) for key in keys}
        return draw(st.none() | st.booleans() | st.integers())

    def leaf() -> Any:
        kind = draw(st.sampled_from(["safe", "planted", "aws"]))
        if kind == "safe":
            return draw(SAFE_SCALARS)
        if kind == "aws":
            key_id = draw(AWS_KEY_IDS)
            planted.append(key_id)
            return f"aws {key_id}"
        return draw(st.sampled_from(PLANTED_FORMS))(secret_string())

    def node(depth: int) -> Any:
        kind = draw(st.sampled_from(["mapping", "list", "leaf"] if depth < 3 else ["leaf"]))
        if kind == "leaf":
            return leaf()
        if kind == "list":
            return [node(depth + 1) for _ in range(draw(st.integers(0, 3)))]
        return mapping(depth)

    def mapping(depth: int) -> dict[str, Any]:
        keys = draw(st.sets(NON_SECRET_KEYS | SECRET_KEYS, max_size=5))
        return {
            key: under_secret_key(depth + 1) if is_secret_key(key) else node(depth + 1)
            for key in keys
        }

    return mapping(0), planted


def _shape(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_shape(item) for item in value]
    return None


def _safe_leaves(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    """Leaves with no secret key above them and nothing planted in them."""
    if isinstance(value, dict):
        return [
            leaf
            for key, item in value.items()
            if not is_secret_key(key)
            for leaf in _safe_leaves(item, (*path, key))
        ]
    if isinstance(value, list):
        return [
            leaf for index, item in enumerate(value) for leaf in _safe_leaves(item, (*path, index))
        ]
    if isinstance(value, str) and mask_text(value) != value:
        return []
    return [(path, value)]


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        value = value[part]
    return value


@given(planted_configs())
def test_no_planted_secret_survives_in_the_saved_yaml(
    case: tuple[dict[str, Any], list[str]],
) -> None:
    config, planted = case
    with tempfile.TemporaryDirectory() as directory:
        saved = save_run_config(config, Path(directory) / "run_rollouts.jsonl")
        text = saved.read_text()
    reloaded = json.dumps(yaml.safe_load(text))
    for secret in planted:
        assert secret not in text
        assert secret not in reloaded


@given(planted_configs())
def test_every_non_secret_leaf_is_unchanged(case: tuple[dict[str, Any], list[str]]) -> None:
    config, _ = case
    masked = mask_config(config)
    for path, value in _safe_leaves(config):
        assert _get(masked, path) == value


@given(planted_configs())
def test_keys_and_list_lengths_are_unchanged(case: tuple[dict[str, Any], list[str]]) -> None:
    config, _ = case
    assert _shape(mask_config(config)) == _shape(config)


ANY_CONFIG = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            NON_SECRET_KEYS | SECRET_KEYS | st.text(max_size=12), children, max_size=4
        )
    ),
    max_leaves=30,
)


@given(ANY_CONFIG)
def test_masking_is_idempotent_on_any_config(config: Any) -> None:
    once = mask_config(config)
    assert mask_config(once) == once


@given(planted_configs())
def test_masking_is_idempotent_on_planted_configs(case: tuple[dict[str, Any], list[str]]) -> None:
    once = mask_config(case[0])
    assert mask_config(once) == once


@given(planted_configs())
def test_saved_config_round_trips_through_safe_load(case: tuple[dict[str, Any], list[str]]) -> None:
    config, _ = case
    with tempfile.TemporaryDirectory() as directory:
        saved = save_run_config(config, Path(directory) / "run_rollouts.jsonl")
        assert yaml.safe_load(saved.read_text()) == (mask_config(config) or {})


_PASSWORD_CHARS = st.text(
    alphabet=st.characters(codec="ascii", categories=("L", "N"), include_characters="@:!$%^*-_.~"),
    min_size=1,
    max_size=24,
)


@given(user=st.from_regex(r"[a-z]{1,8}", fullmatch=True), password=_PASSWORD_CHARS)
def test_a_url_password_is_masked_whole_even_when_it_holds_an_at_sign_and_a_colon(
    user: str, password: str
) -> None:
    url = f"https://{user}:{password}@mlflow.example.com/api"
    assert mask_text(url) == f"https://{user}:****@mlflow.example.com/api"


@given(key=SECRET_KEYS.filter(lambda key: re.fullmatch(r"[A-Za-z][\w.-]*", key)), value=SECRETS)
def test_a_secret_line_of_json_encoded_text_is_masked(key: str, value: str) -> None:
    encoded = json.dumps(f"a note\n{key}: {value}\nthe rest")
    assert value not in mask_text(encoded)
    assert "the rest" in mask_text(encoded)


@given(
    token=st.text(
        alphabet=st.characters(codec="ascii", categories=("L", "N"), include_characters=",.-_~+/="),
        min_size=8,
        max_size=40,
        # A "." only at the end is the sentence's full stop ("the Bearer of news."), not a look.
    ).filter(lambda value: any(ch.isdigit() or ch in ".-_~+/=" for ch in value.rstrip(".")))
)
def test_a_bearer_credential_is_masked_whole_even_when_it_holds_a_comma(token: str) -> None:
    assert mask_text(f"Authorization: Bearer {token}") == "Authorization: Bearer ****"
    assert mask_text(f"curl -H 'Bearer {token}' x") == "curl -H 'Bearer ****' x"


_PROSE_WORDS = st.sampled_from(
    [
        "use",
        "basic",
        "arithmetic",
        "the",
        "bearer",
        "of",
        "good",
        "news",
        "Basic",
        "Bearer",
        "token",
        "key",
        "password",
        "secret",
        "tokens",
        "keys",
        "answer",
        "solve",
        "problem",
        "step",
        "first",
        "then",
        "a",
        "an",
        "is",
        "was",
        "with",
        "for",
    ]
)


@given(
    words=st.lists(_PROSE_WORDS, min_size=1, max_size=12), end=st.sampled_from(["", ".", "!", "?"])
)
def test_ordinary_prose_is_left_as_it_is(words: list[str], end: str) -> None:
    sentence = " ".join(words) + end
    assert mask_text(sentence) == sentence


@given(
    key=SECRET_KEYS.filter(lambda key: re.fullmatch(r"[A-Za-z][\w.-]*", key)),
    value=SECRETS,
    prefix=st.sampled_from(["b", "r", "u", "B", "R", "U", "rb", "br"]),
    quote=st.sampled_from(['"', "'"]),
)
def test_a_secret_assigned_a_python_string_with_a_prefix_is_masked(
    key: str, value: str, prefix: str, quote: str
) -> None:
    """``api_key=b"..."``, ``HF_TOKEN=r'...'``: the value is masked, prefix or not (#46)."""
    line = f"config: {key}={prefix}{quote}{value}{quote} and the rest"
    masked = mask_text(line)
    assert value not in masked
    assert masked.endswith(" and the rest")
