"""The ATIF exporter's fast line reader (msgspec) decides every line exactly as the strict parser
would: the same value for every line it accepts, and for every other line the strict parser's
own exception and message (duplicate keys, inexact numbers, ``NaN``, lone surrogates, bad
UTF-8, malformed text)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from evalexport.trajectory import strict_json
from evalexport.trajectory.strict_json import loads_strict_line
from tests.property.test_rollout_parsing import _same

KEYS = st.sampled_from(["a", "b", "a:b", ":", "é", "\\u003a"]) | st.text(max_size=6)
NUMBER_LITERALS = st.sampled_from(
    [
        "0", "-0", "1", "-1", "0.1", "1.5", "1e5", "1E-3", "-0.0", "2.5e+10",
        "1e400", "-1e400", "1e-400", "0.10000000000000000001", "1.0000000000000002",
        "123456789012345678", "123456789012345678901234567890", "9007199254740993.0",
        "18446744073709551616", "1.7976931348623157e308", "5e-324", "2.2250738585072014e-308",
        "0e5", "0.000000000000000000000000001", "1234567890.12345",
    ]
)  # fmt: skip
SCALAR_TEXTS = (
    st.none().map(lambda _: "null")
    | st.booleans().map(lambda flag: "true" if flag else "false")
    | st.integers().map(str)
    | st.floats(allow_nan=False, allow_infinity=False).map(repr)
    | NUMBER_LITERALS
    | st.sampled_from(["NaN", "Infinity", "-Infinity", '"\\ud800"', '"\\udc00x"', '"\\u003a"'])
    | st.text(max_size=8).map(lambda text: json.dumps(text, ensure_ascii=False))
    | st.text(max_size=8).map(json.dumps)
)


def _object(members: list[tuple[str, str]]) -> str:
    return "{" + ",".join(f"{json.dumps(key)}:{value}" for key, value in members) + "}"


TEXTS = st.recursive(
    SCALAR_TEXTS,
    lambda inner: (
        st.lists(inner, max_size=4).map(lambda items: "[" + ",".join(items) + "]")
        | st.lists(st.tuples(KEYS, inner), max_size=4).map(_object)
    ),
    max_leaves=16,
)


def _outcome(read: Any, line: bytes | str) -> Any:
    try:
        return ("value", read(line))
    except (ValueError, RecursionError) as error:  # JSONDecodeError, StrictJsonError, Unicode
        return ("refused", type(error), str(error))


def _reference(text: str) -> Any:
    """The strict parser as it was before any fast path: ``json.loads`` with the strict hooks."""
    return json.loads(
        text,
        parse_constant=strict_json._reject_constant,
        parse_float=strict_json._finite_float,
        object_pairs_hook=strict_json._unique_keys,
    )


def _strictly(line: bytes) -> Any:
    return _reference(line.decode("utf-8").rstrip("\r\n"))


@given(text=TEXTS, line_break=st.sampled_from(["\n", "\r\n", ""]), noise=st.sampled_from(["", " "]))
@example(text='{"a": 1, "a": 2}', line_break="\n", noise="")
@example(text='{"a:": 1, "b": {"c": 2, "c": 3}}', line_break="\n", noise="")
@example(text='{"\\u003a": 1, "\\u003a": 2}', line_break="\n", noise="")
@example(text='{"n": 0.10000000000000000001}', line_break="\n", noise="")
@example(text='{"n": 1e400}', line_break="\n", noise="")
@example(text='{"s": "\\ud800"}', line_break="\n", noise="")
@example(text='\ufeff{"a": 1}', line_break="\n", noise="")
def test_a_line_reads_as_the_strict_parser_reads_it(text: str, line_break: str, noise: str) -> None:
    line = (noise + text + noise + line_break).encode("utf-8", "surrogatepass")
    fast, strict = _outcome(loads_strict_line, line), _outcome(_strictly, line)
    assert fast[0] == strict[0], (fast, strict)
    if fast[0] == "value":
        assert _same(fast[1], strict[1])
    else:
        assert fast[1:] == strict[1:]


@given(text=TEXTS)
@example(text='{"a": 1, "a": 2}')
@example(text='"\ud800"')
@example(text='\ufeff{"a": 1}')
def test_a_text_reads_as_the_strict_parser_reads_it(text: str) -> None:
    """``loads_strict`` of a string (a tool call's arguments) takes the same fast path."""
    fast = _outcome(strict_json.loads_strict, text)
    strict = _outcome(_reference, text)
    assert fast[0] == strict[0], (fast, strict)
    if fast[0] == "value":
        assert _same(fast[1], strict[1])
    else:
        assert fast[1:] == strict[1:]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b'{"a": 1, "a": 2}\n', "duplicate object key 'a'"),
        (b'{"x": {"k:": 1, "k:": 2}}\n', "duplicate object key 'k:'"),
        (b'{"n": 1e400}\n', "exceeds the finite float range"),
        (b'{"n": 0.10000000000000000001}\n', "cannot be represented without precision loss"),
        (b'{"n": NaN}\n', "non-JSON numeric constant 'NaN'"),
    ],
)
def test_what_msgspec_would_let_through_is_refused_in_the_strict_parsers_words(
    line: bytes, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        loads_strict_line(line)


def test_a_line_msgspec_leaves_undecided_goes_to_the_strict_parser(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        strict_json, "_fast_strict_decoder", lambda: lambda raw: strict_json._UNDECIDED
    )
    assert loads_strict_line(b'{"a": [1, 2.5, "x"]}\n') == {"a": [1, 2.5, "x"]}
    with pytest.raises(ValueError, match="duplicate object key"):
        loads_strict_line(b'{"a": 1, "a": 2}\n')


def test_the_fast_path_is_taken_for_an_ordinary_line(monkeypatch: pytest.MonkeyPatch) -> None:
    class NoStrictParse:
        def decode(self, text: str) -> Any:
            raise AssertionError(f"the strict parser was asked about {text!r}")

    monkeypatch.setattr(strict_json, "_STRICT_DECODER", NoStrictParse())
    assert loads_strict_line(b'{"a": {"b": "c:d"}, "n": 1.5}\n') == {
        "a": {"b": "c:d"},
        "n": 1.5,
    }


@pytest.mark.parametrize(
    "line",
    [
        b'{"a": "x\x01y"}\n', b'{"a": "x\ty"}\n', b'{"a": "x\x7fy"}\n', b'{"a": 1}\x00\n',
        b'{"a": 01}\n', b'{"a": 1.}\n', b'{"a": .5}\n', b'{"a": +1}\n', b'{"a": 1e}\n',
        b'{"a": "\\x"}\n', b'{"a": tru}\n', b"[1,]\n", b'{"a":1,}\n', b'\x0c{"a":1}\n',
        b'{"a": "\xff"}\n', b'{"a": "\xc3"}\n', b"\n", b"  \r\n", b'{"a": 1}{"b": 2}\n',
        b'{"a": Infinity}\n', b'{"a": -NaN}\n', b'{"a": 1e-400}\n', b'{"a": [' * 3000 + b"\n",
    ],
)  # fmt: skip
def test_a_malformed_line_is_refused_in_the_strict_parsers_words(line: bytes) -> None:
    expected = _outcome(_strictly, line)  # bad UTF-8 included: a UnicodeDecodeError
    found = _outcome(loads_strict_line, line)
    if expected[1:2] == (RecursionError,):  # its wording depends on the stack; the export
        assert found[:2] == expected[:2]  # says "nested too deeply to read" either way
    else:
        assert found == expected
