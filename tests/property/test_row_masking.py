"""A row's JSON text masked where its strings need it (``evalexport.masking.rows``) is the row
masked whole (SPEC §2, "What leaves"): the fast path equals the parsed path, value for value,
on any JSON text made of the pieces the rules read, in either kind of text, and keeps a text
the parsed path leaves as it is byte for byte."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from evalexport.masking import FREE, STRUCTURED, TextKind
from evalexport.masking.values import ValueMasking, secret_forms
from tests.property.test_egress_prefilter import TEXTS, VALUES
from tests.support.budgets import examples

KINDS = st.sampled_from([FREE, STRUCTURED])
ENCODINGS = st.sampled_from(
    [
        {"ensure_ascii": False, "separators": (",", ":")},  # the tables' cells, the traces
        {"ensure_ascii": False},  # json.dumps' spaces
        {"indent": 1},  # line breaks, and every non-ASCII character escaped
    ]
)
# A row as Gym writes one: texts under the keys its rows hold, beside the pieces.
ROWS = st.fixed_dictionaries(
    {
        "responses_create_params": st.fixed_dictionaries(
            {"input": st.lists(st.fixed_dictionaries({"role": TEXTS, "content": TEXTS}))}
        ),
        "response": st.fixed_dictionaries(
            {
                "output": st.lists(
                    st.fixed_dictionaries(
                        {"type": st.just("function_call"), "arguments": VALUES.map(json.dumps)}
                    )
                )
            }
        ),
        "extra": VALUES,
    }
)


def _both(value: Any, kind: TextKind, encoding: dict[str, Any]) -> tuple[str, str, str]:
    text = json.dumps(value, **encoding)
    masking = ValueMasking(secret_forms(["CANARYknown0001"]), kind)
    return text, masking.json_text(text), masking.parsed_json_text(text)


def _same(text: str, fast: str, parsed: str) -> None:
    assert json.loads(fast) == json.loads(parsed)
    if parsed == text:
        assert fast == text


@settings(max_examples=examples(1500))
@given(VALUES | ROWS, KINDS, ENCODINGS)
def test_the_fast_path_masks_a_json_text_as_the_parsed_path(
    value: Any, kind: TextKind, encoding: dict[str, Any]
) -> None:
    _same(*_both(value, kind, encoding))


@settings(max_examples=examples(300))
@given(ROWS, KINDS)
def test_a_rows_json_held_in_a_string_is_masked_alike(row: dict[str, Any], kind: TextKind) -> None:
    """A row whose strings hold JSON that holds JSON (a tool call's arguments logged by a
    tool): escaped JSON in JSON strings, at any depth."""
    nested = {"outer": json.dumps({"inner": json.dumps(row), "api_key": "CANARYplanted01"})}
    text, fast, parsed = _both(nested, kind, {"ensure_ascii": False, "separators": (",", ":")})
    _same(text, fast, parsed)
    assert "CANARYplanted01" not in fast


def test_a_text_beyond_the_fast_path_goes_the_parsed_way() -> None:
    """An escape that spells an anchor, a key the rules rename, a text that is not JSON."""
    masking = ValueMasking((), FREE)
    for text in [
        '{"api_\\u006bey": "x"}',
        '{"u": "https:\\/\\/u:pw@host/"}',
        '{"sk-abcdefghijklmnop1234": 1, "sk-abcdefghijklmnop5678": 2}',
        "api_key=sk-abcdefghijklmnop1234 (not JSON)",
    ]:
        assert masking.json_text(text) == masking.parsed_json_text(text), text


_CANARY = "CANARYknown0001"


def _gate_pair(mask_rows: bool) -> tuple[Any, Any]:
    from evalexport.egress import Egress

    return Egress(mask_rows=mask_rows, secrets=[_CANARY]), Egress(
        mask_rows=mask_rows, secrets=[_CANARY]
    )


@settings(max_examples=examples(1500))
@given(VALUES | ROWS, st.booleans())
def test_a_row_masked_as_its_value_is_its_text_masked(value: Any, mask_rows: bool) -> None:
    """``Egress.row_record`` (the tables' rows: the value masked, then written once) gives
    ``Egress.row`` of the row's text byte for byte, and counts the row alike."""
    encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    by_text, by_value = _gate_pair(mask_rows)
    assert by_value.row_record(value, 7, encode) == by_text.row(encode(value), 7)
    assert by_value.masked_lines() == by_text.masked_lines()


@settings(max_examples=examples(500))
@given(ROWS)
def test_a_row_masked_as_its_value_is_written_by_its_own_encoder(row: dict[str, Any]) -> None:
    """msgspec writes a strict row's cell (``tables.rollouts``): the value masked then written
    by msgspec holds what the text masked holds."""
    import msgspec

    encode = msgspec.json.Encoder()

    def written(value: Any) -> str:
        return encode.encode(value).decode()

    by_text, by_value = _gate_pair(True)
    masked = by_value.row_record(row, 3, written)
    assert json.loads(masked) == json.loads(by_text.row(written(row), 3))
    assert by_value.masked_lines() == by_text.masked_lines()


def test_a_row_deeper_than_the_walk_is_masked_as_its_text() -> None:
    """A row nested deeper than Python's recursion lets a walk go is masked by the text's own
    path, as before."""
    deep: Any = {"api_key": "sk-abcdefghijklmnop1234"}
    for _ in range(600):  # JSON's encoder writes it; a walk three frames a level does not
        deep = [deep]
    encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    by_text, by_value = _gate_pair(True)
    assert by_value.row_record(deep, 1, encode) == by_text.row(encode(deep), 1)
    assert "sk-abcdefghijklmnop1234" not in by_value.row_record(deep, 1, encode)


@settings(max_examples=examples(300))
@given(st.lists(VALUES, min_size=2, max_size=8), KINDS)
def test_what_a_masking_remembers_never_changes_what_it_gives(
    values: list[Any], kind: TextKind
) -> None:
    """One :class:`ValueMasking` masks many values (an export's gate remembers its short texts,
    its keys and its last long texts): each comes out as a fresh one masks it, however often it
    has been seen, and after it forgot them all."""
    from evalexport.masking import values as module

    shared = ValueMasking(secret_forms([_CANARY]), kind)
    for value in [*values, *values]:
        fresh = ValueMasking(secret_forms([_CANARY]), kind).value(value)
        assert shared.value(value) == fresh
    module._REMEMBERED_TEXTS, remembered = 1, module._REMEMBERED_TEXTS
    try:
        for value in values:
            assert shared.value(value) == ValueMasking(secret_forms([_CANARY]), kind).value(value)
    finally:
        module._REMEMBERED_TEXTS = remembered
    # Every text of more than four characters among the long ones, two of them remembered.
    short, long_texts = module._REMEMBERED, module._REMEMBERED_LONG_TEXTS
    module._REMEMBERED, module._REMEMBERED_LONG_TEXTS = 4, 2
    try:
        shared = ValueMasking(secret_forms([_CANARY]), kind)
        for value in [*values, *values]:
            assert shared.value(value) == ValueMasking(secret_forms([_CANARY]), kind).value(value)
    finally:
        module._REMEMBERED, module._REMEMBERED_LONG_TEXTS = short, long_texts
