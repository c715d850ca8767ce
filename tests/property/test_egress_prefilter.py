"""The egress gate's prefilter never lets a secret through: a text it passes as holding
nothing to mask is one the masking function leaves as it is (SPEC §2, "What leaves").

The texts are made of the pieces the rules read (the words of secret names and their near
misses, separators, digits, quotes, escapes, URL and header punctuation, credential prefixes,
letters that lower-case to ASCII), so that a rule the prefilter forgot is found by chance."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from evalexport.masking import mask_text
from evalexport.masking.values import mask_value, may_hold_secret
from tests.support.budgets import examples

PIECES = st.sampled_from(
    [
        "token",
        "tokens",
        "Token",
        "TOKEN",
        "key",
        "Key",
        "KEY",
        "keys",
        "auth",
        "Auth",
        "author",
        "apikey",
        "api",
        "access",
        "secret",
        "Secret",
        "password",
        "passwd",
        "pwd",
        "passphrase",
        "cookie",
        "credential",
        "credentials",
        "authorization",
        "client",
        "data",
        "per",
        "bearer",
        "Bearer",
        "basic",
        "Basic",
        "sk-",
        "hf_",
        "ghp_",
        "github_pat_",
        "glpat-",
        "xoxb-",
        "nvapi-",
        "AKIA",
        "https",
        "://",
        "@",
        ":",
        "=",
        "?",
        "&",
        ";",
        "-",
        "--",
        "_",
        ".",
        " ",
        "\n",
        "\t",
        '"',
        "'",
        "\\",
        "\\u006b",
        "\\n",
        "{",
        "}",
        "[",
        "]",
        ",",
        "0",
        "7",
        "x",
        "value",
        "None",
        "\u212a",
        "\u0130",
        "\u03b2",
        "é",
        "<",
        ">",
        "$",
        "${oc.env:X}",
        "{{",
        "ssh",
    ]
)
# A secret's name, as the rules read one: words of secret names and their near misses, joined
# as code and configs join them ("x-api-key", "hfToken", "API_KEY_2").
NAME_WORDS = st.sampled_from(
    [
        "api",
        "key",
        "token",
        "tokens",
        "auth",
        "secret",
        "password",
        "cookie",
        "credential",
        "authorization",
        "access",
        "client",
        "data",
        "per",
        "max",
        "hf",
        "x",
        "2",
        "Key",
        "Token",
        "\u212a",
        "\u0130ey",
    ]
)
NAMES = st.builds(
    lambda words, joint: joint.join(words),
    st.lists(NAME_WORDS, min_size=1, max_size=3),
    st.sampled_from(["_", "-", ".", "", " "]),
)
CREDENTIALS = st.sampled_from(
    ["a1b2c3d4e5f6a7b8c9d0", "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTuvw", "x7",
     "None", "value", "client_key", "{{ t }}", "'q1 w2'", '"z9"', "<token>", "$1", "=====9"]
)  # fmt: skip
SEPARATORS = st.sampled_from(["=", ": ", ":", " ", '": "', "': '", '\\": \\"', "\t:", " = "])
FRAGMENTS = st.one_of(
    PIECES,
    st.builds(lambda n, s, v: n + s + v, NAMES, SEPARATORS, CREDENTIALS),
    st.builds(lambda f, n, v: f"{f}{n} {v}", st.sampled_from(["-", "--"]), NAMES, CREDENTIALS),
    st.builds(
        lambda scheme, value: f"{scheme} {value}",
        st.sampled_from(["Bearer", "BEARER", "Basic", "BASIC", "bearer"]),
        CREDENTIALS,
    ),
    st.builds(
        lambda user, password: f"https://{user}:{password}@host.example/x",
        CREDENTIALS,
        CREDENTIALS,
    ),
    st.builds(lambda user: f"ssh://{user}@host", CREDENTIALS),
    st.builds(lambda name, value: f"https://h/p?{name}={value}&page=2", NAMES, CREDENTIALS),
    st.builds(
        lambda prefix, run: prefix + run,
        st.sampled_from(["sk-", "hf_", "ghp_", "github_pat_", "glpat-", "xoxb-", "nvapi-", "AKIA"]),
        st.sampled_from(["abcdefghijklmnop1234", "ABCDEFGHIJKLMN12", "short"]),
    ),
    # JSON text that spells a secret's name in escapes ("api_\\u006bey"): masked as the
    # value it holds, so the prefilter must not pass it.
    st.builds(
        lambda name, value: '{"' + name.replace("k", "\\u006b") + '": "' + value + '"}',
        NAMES,
        CREDENTIALS,
    ),
)
TEXTS = FRAGMENTS | st.lists(FRAGMENTS, max_size=6).map("".join)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | TEXTS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(TEXTS, children, max_size=4),
    max_leaves=20,
)


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _masked_without_prefilter(value: Any) -> Any:
    """What the masking function makes of ``value`` when every text is looked at by every
    rule: the oracle the prefilter is held to."""
    from evalexport.masking import values

    real = values.may_hold_secret
    values.may_hold_secret = lambda text: True  # type: ignore[assignment]
    try:
        return mask_value(value)
    finally:
        values.may_hold_secret = real


@settings(max_examples=examples(3000))
@given(TEXTS)
def test_a_text_the_prefilter_passes_is_one_no_rule_changes(text: str) -> None:
    if not may_hold_secret(text):
        assert mask_text(text) == text
        assert _masked_without_prefilter(text) == text


@settings(max_examples=examples(1500))
@given(VALUES)
def test_a_value_whose_json_the_prefilter_passes_is_left_as_it_is(value: Any) -> None:
    if not may_hold_secret(_compact(value)):
        assert _masked_without_prefilter(value) == value
        assert mask_value(value) is value


@settings(max_examples=examples(500))
@given(VALUES)
def test_a_value_held_as_json_text_is_masked_as_the_value(value: Any) -> None:
    """JSON in a string (a tool call's ``arguments``) is masked as what it holds: a secret
    under a secret-named key inside it never survives."""
    planted = {"arguments": json.dumps({"api_key": "CANARYplanted", "inner": value})}
    assert "CANARYplanted" not in json.dumps(mask_value(planted))


def test_a_long_text_is_looked_through_across_its_pieces() -> None:
    """An anchor across the border of two of the prefilter's pieces is found."""
    from evalexport.masking import values

    for offset in range(-12, 3):
        text = "a" * (values._PIECE + offset) + "api_key=sk-abcdef0123456789abcd" + "b" * 50
        assert may_hold_secret(text), offset
        assert "0123456789abcd" not in mask_text(text)


def test_every_name_of_the_rule_is_seen_by_the_prefilter() -> None:
    """Each word and name of the secret-key rule, in each spelling the rule reads (cases,
    separators, a number after), makes a text the prefilter looks at: a word added to the
    rule without an anchor fails here."""
    from evalexport.masking import rules

    words = [
        *rules.SECRET_WORDS,
        *rules.SECRET_LAST_WORDS,
        *(f"{qualifier}_key" for qualifier in rules.KEY_QUALIFIERS),
    ]
    spellings = [
        *(
            spelled
            for word in words
            for spelled in (word, word.upper(), word.title(), f"x_{word}_2", f"x{word.title()}")
        ),
        *("-".join(name) for name in rules.SECRET_NAMES),
        *("_".join(name).upper() + "_2" for name in rules.SECRET_NAMES),
    ]
    for spelled in spellings:
        assert rules.is_secret_key(spelled), spelled
        assert may_hold_secret(f"{spelled}=a1b2c3d4"), spelled
        assert may_hold_secret(json.dumps({spelled: 1})), spelled


def _places_one_anchor_at_a_time(text: str) -> dict[str, list[int]]:
    """Every place of every anchor, each looked for alone in the text lower-cased (ASCII
    letters only, each character where it was): the search the one-pass scanner replaced."""
    from evalexport.masking.rules import ANCHORS, lowered

    lower = lowered(text)
    places: dict[str, list[int]] = {}
    for anchor in ANCHORS:
        at = lower.find(anchor)
        while at >= 0:
            places.setdefault(anchor, []).append(at)
            at = lower.find(anchor, at + 1)
    return places


@settings(max_examples=examples(2000))
@given(TEXTS | st.text())
def test_the_one_pass_scan_finds_every_anchor_where_it_stands(text: str) -> None:
    """Every anchor found in one pass (Aho-Corasick over one byte a character) stands where
    a search for it alone finds it, in characters, in any text: non-ASCII letters, the
    Kelvin sign that lower-cases to ``k``, lone surrogates, overlapping anchors."""
    from evalexport.masking.rules import anchor_places

    assert anchor_places(text) == _places_one_anchor_at_a_time(text)


def test_the_one_pass_scan_counts_in_characters_past_wide_ones() -> None:
    """A place after characters beyond Latin-1 (an emoji, a lone surrogate, ``…``) is told in
    characters, not bytes; a letter that lower-cases to ASCII under ``str.lower`` (the
    Kelvin sign, ``İ``) spells no anchor."""
    from evalexport.masking.rules import anchor_places

    text = "\U0001f600…\ud800 api_KEY=x \u212aey \u0130 tokentoken @"
    assert anchor_places(text) == {
        "key": [8],
        "token": [20, 25],
        "@": [31],
    }


@settings(max_examples=examples(500))
@given(TEXTS)
def test_a_long_text_scanned_a_piece_at_a_time_finds_every_anchor_once(text: str) -> None:
    """A text longer than a piece (a megabyte; seven characters here) is looked through a piece
    at a time: an anchor across two pieces is found, and found once."""
    from evalexport.masking import rules

    piece, rules._PIECE = rules._PIECE, 7  # type: ignore[misc]
    try:
        assert rules.anchor_places(text) == _places_one_anchor_at_a_time(text)
    finally:
        rules._PIECE = piece  # type: ignore[misc]
