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


@settings(max_examples=1500)
@given(VALUES | ROWS, KINDS, ENCODINGS)
def test_the_fast_path_masks_a_json_text_as_the_parsed_path(
    value: Any, kind: TextKind, encoding: dict[str, Any]
) -> None:
    _same(*_both(value, kind, encoding))


@settings(max_examples=300)
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
