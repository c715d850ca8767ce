"""A trajectory file's bytes are pydantic-core's JSON with a 2-space indent, as NeMo Gym writes
them, whichever encoder evalexport takes for a document (msgspec where its bytes are the same)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic_core import to_json

from evalexport.trajectory import encoding
from evalexport.trajectory.encoding import encode_json

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([1e16, 1e22, -1e300, 1.5e-7, 5e-324, 0.0, -0.0, 1787713200.0])
    | st.text()
    | st.sampled_from(["1e5", "x\u2028y", "\x00\x1f\x7f", "é😀", "</script>", '"\\'])
)
DOCUMENTS = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=30,
)


@given(document=DOCUMENTS)
@example(document={"n": 1e16, "m": [1e22, {"e": "2e5"}]})
@example(document={"empty": {}, "none": [], "nested": [{}, []]})
def test_the_bytes_are_pydantics(document: Any) -> None:
    assert encode_json(document) == to_json(document, indent=2) + b"\n"


def test_a_document_msgspec_cannot_write_is_written_by_pydantic(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(encoding, "_fast_encoder", lambda: lambda document: None)
    assert encode_json({"a": [1, 1e16]}) == b'{\n  "a": [\n    1,\n    1e+16\n  ]\n}\n'


def test_what_msgspec_cannot_write_pydantic_refuses_in_its_words() -> None:
    with pytest.raises(ValueError, match="Error serializing to JSON"):
        encode_json({"a": "\ud800"})
