"""One export's door out: :class:`Egress` (see :mod:`evalexport.egress`)."""

from __future__ import annotations

import contextlib
import contextvars
import json
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Final, final

from evalexport.callers import named_option
from evalexport.masking.names import FREE, STRUCTURED, TextKind, is_secret_key
from evalexport.masking.scrubbing import secrets_known
from evalexport.masking.values import ValueMasking, may_hold_secret, secret_forms

__all__ = ["Egress", "RowsMasked", "SecretScan", "current", "sending"]

MASK_ROWS_OPTION: Final = "mask_rows"
"""The option that turns the rules off for rows (``+mask_rows=false``)."""


@final
@dataclass(frozen=True)
class RowsMasked:
    """What the gate did to an export's rows (the tables' cells, the traces' lines): the
    result says it, the dry run's and the export's alike."""

    rows: int
    """Rollouts in which something was masked (of any table or trace made of them)."""
    rules: bool
    """Whether the masking rules applied to the rows (``+mask_rows``), or only the secrets
    the export knows (its tokens, the environment's token variables)."""

    def note(self) -> str | None:
        """What the result says of it, or ``None`` when there is nothing to say."""
        if not self.rules:
            removed = (
                f"; the secrets the export knows were still removed from {self.rows} of them"
                if self.rows
                else ""
            )
            return (
                f"the rows were sent as they are ({named_option('mask_rows', 'false')}): secrets "
                f"in the rollouts are not masked{removed}"
            )
        if not self.rows:
            return None
        return (
            f"secrets were masked in {self.rows} row{'s' if self.rows != 1 else ''} "
            "(secret-named keys at any depth, URLs' credentials, generated-looking secrets in "
            "text, JSON held in texts: docs/reliability.md, 'What is masked where'); "
            f"{named_option('mask_rows', 'false')} sends rows "
            "as they are"
        )


@final
class Egress:
    """The masking everything an export sends passes, made once per export by the pipeline
    (:func:`sending`): the rules of SPEC §2 and the secrets the export knows (``secrets``: by
    default those known now, :func:`~evalexport.masking.scrubbing.secrets_known`). What it
    is handed as a value (a config, a payload, a document) is structured text; the rows
    (the tables' cells, the traces' lines) are free text (:data:`~evalexport.masking.names.
    TextKind`). ``mask_rows=False`` leaves the rows' content as it is but for the known
    secrets."""

    def __init__(self, *, mask_rows: bool = True, secrets: Sequence[str] | None = None) -> None:
        self.mask_rows = mask_rows
        self.secrets: tuple[str, ...] = tuple(secrets_known() if secrets is None else secrets)
        """The secrets removed from everything the gate passes, as given."""
        forms = secret_forms(self.secrets)
        self._masking = ValueMasking(forms, STRUCTURED)
        self._row_masking = ValueMasking(forms, FREE)
        self._lock = threading.Lock()
        self._rows: set[int] = set()
        """The line numbers of the rollouts in which anything was masked."""
        self._notes: list[str] = []

    @staticmethod
    def current() -> Egress:
        """The gate of the export in progress (:func:`current`): where an exporter's hooks
        note what the result should say (:meth:`note`)."""
        return current()

    @staticmethod
    def names_a_secret(key: str) -> bool:
        """Whether a key names a secret, as a saved config's keys are read (``api_key``,
        ``HF_TOKEN``; not ``max_tokens``): for a setting whose keys must not be secrets."""
        return is_secret_key(key)

    def value(self, value: Any) -> Any:
        """A value that leaves (a config, a payload's params, a health report): masked by the
        rules and the known secrets, the same object where nothing changed."""
        return self._masking.value(value)

    def text(self, text: str) -> str:
        """A text that leaves, masked as :meth:`value` masks a text."""
        return self._masking.text(text)

    def row(self, text: str, line: int) -> str:
        """The JSON text of a row that leaves (a table's cell, a trace's line), made of the
        rollout on ``line`` of the rollouts file: masked as the value it holds, as free text,
        when the rules apply to rows, else only rid of the known secrets; the rollout counted
        when anything changed. A text costs a few scans for the rules' anchors, and each
        string holding one is masked where it stands (:mod:`evalexport.masking.rows`)."""
        rows = self._row_masking
        masked = rows.json_text(text) if self.mask_rows else rows.known(text)
        if masked != text:
            self.count([line])
        return masked

    def row_record(self, value: Any, line: int, encode: Callable[[Any], str]) -> str:
        """The JSON text of a row given as the value it holds, as ``encode`` writes a value
        (one with no text of its own yet: a table's row, written from the rollout read):
        :meth:`row` of ``encode(value)``, but with the value masked before it is written,
        each string read once where it stands (no text looked through for the strings that
        need it, none of them written twice) and the text written once. The result is
        :meth:`row`'s parsed path (:meth:`~evalexport.masking.values.ValueMasking.
        parsed_json_text`), which its fast path equals (``tests/property/
        test_row_masking.py``), written by ``encode``."""
        if not self.mask_rows:
            return self.row(encode(value), line)
        rows = self._row_masking
        try:
            masked = rows.value(value)
        except RecursionError:  # deeper than the walk goes: the text's own path
            return self.row(encode(value), line)
        text = encode(masked)
        known = rows.known(text)
        if known is not text or (masked is not value and masked != value):
            self.count([line])
        return known

    def row_value(self, value: Any, line: int) -> Any:
        """A row as a value (one too long to hold as one text): masked as :meth:`row` masks
        its text."""
        masked = self._row_masking.value(value) if self.mask_rows else self._known_value(value)
        if masked is not value:
            self.count([line])
        return masked

    def known(self, text: str) -> str:
        """``text`` rid of the known secrets only (a piece of a row already masked whole)."""
        return self._masking.known(text)

    def _known_value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self._masking.known(value)
        if isinstance(value, Mapping):
            items = {key: self._known_value(item) for key, item in value.items()}
            unchanged = all(items[key] is item for key, item in value.items())
            return value if unchanged else items
        if isinstance(value, list):
            masked = [self._known_value(item) for item in value]
            unchanged = all(new is old for new, old in zip(masked, value, strict=True))
            return value if unchanged else masked
        return value

    def document(self, data: bytes, *, lines: bool) -> bytes:
        """A JSON document's bytes (``lines``: a JSON-lines file's) as they leave: each
        document or line that needs nothing kept byte for byte, each other one masked as
        :meth:`value` masks what it holds (a line that is not JSON, as text)."""
        if not lines:
            return self._document_part(data, indent=2)
        parts = [self._document_part(line, indent=None) for line in data.splitlines(True)]
        return b"".join(parts)

    def _document_part(self, data: bytes, indent: int | None) -> bytes:
        text = data.decode("utf-8", "replace")
        if not (may_hold_secret(text) or any(secret in text for secret in self._forms)):
            return data
        ending = text[len(text.rstrip("\r\n")) :]
        body = text.rstrip("\r\n")
        try:
            held = json.loads(body)
        except (ValueError, RecursionError):
            masked_text = self.text(body)
        else:
            masked = self.value(held)
            if masked is held:
                masked_text = self._masking.known(body)
            else:
                masked_text = json.dumps(masked, ensure_ascii=False, indent=indent)
                if indent is not None and not ending:
                    ending = "\n"
        return (masked_text + ending).encode()

    @property
    def _forms(self) -> tuple[str, ...]:
        return self._masking.secrets

    def payload(self, payload: Mapping[str, Any], addresses: Collection[str]) -> dict[str, Any]:
        """A worker's payload as it leaves: each value masked (:meth:`value`) but those of
        ``addresses``, the keys the worker needs as they are (a tracking URI with its
        password, the paths of the files it uploads)."""
        return {
            key: item if key in addresses else self.value(item) for key, item in payload.items()
        }

    def count(self, lines: Iterable[int]) -> None:
        """Count the rollouts on ``lines`` as masked (rows masked here, or by another process
        that read part of the run)."""
        with self._lock:
            self._rows.update(lines)

    def masked_lines(self) -> list[int]:
        """The line numbers of the rollouts in which anything was masked, in order."""
        with self._lock:
            return sorted(self._rows)

    def rows_masked(self) -> RowsMasked:
        """What the gate did to the rows so far."""
        with self._lock:
            return RowsMasked(len(self._rows), self.mask_rows)

    def note(self, text: str) -> None:
        """Say ``text`` in the export's result (the dry run's and the export's): what leaves
        as it is that a user should know of (:class:`SecretScan`'s findings)."""
        with self._lock:
            self._notes.append(self.text(text))

    def notes(self) -> list[str]:
        """What the gate says of the export: what it masked in the rows, then its notes."""
        masked = self.rows_masked().note()
        with self._lock:
            return [*([masked] if masked else []), *self._notes]


_current: contextvars.ContextVar[Egress | None] = contextvars.ContextVar(
    "evalexport_egress", default=None
)


def current() -> Egress:
    """The gate of the export in progress (:func:`sending`); outside one (a payload built on
    its own, a benchmark), a gate with the rules on and the secrets known now."""
    gate = _current.get()
    return gate if gate is not None else Egress()


@contextlib.contextmanager
def sending(gate: Egress) -> Iterator[Egress]:
    """Make ``gate`` the export's door out while the block runs: what the read writes for the
    service passes it (:func:`current`)."""
    token = _current.set(gate)
    try:
        yield gate
    finally:
        _current.reset(token)


@final
class SecretScan:
    """Which files of a directory that leaves as it is (an upload of the run directory) hold
    text that masking would change, line by line, each file read once through the handle its
    reader opened (:meth:`read`). Nothing is changed: the upload is the directory as it is;
    the result says which files hold what (:meth:`note`)."""

    def __init__(self) -> None:
        self.found: dict[Path, int] = {}
        """Each file holding secret-shaped text, and how many of its lines do."""

    def read(self, path: Path, handle: BinaryIO, kind: TextKind = STRUCTURED) -> None:
        """Read the rest of ``handle`` (the file ``path``), a megabyte at a time, and count
        its lines that hold secret-shaped text, as text of ``kind`` reads (a rollouts file's
        lines are rows: free text; any other file is structured)."""
        masking = ValueMasking((), kind)
        pending = b""
        lines = 0
        while chunk := handle.read(_SCAN_CHUNK):
            *complete, pending = (pending + chunk).split(b"\n")
            lines += _shaped_lines(complete, masking)
        lines += _shaped_lines([pending], masking)
        if lines:
            self.found[path] = self.found.get(path, 0) + lines

    def note(self, root: Path) -> str | None:
        """What the result says of the files found, or ``None``."""
        if not self.found:
            return None
        listed = ", ".join(
            f"{path.relative_to(root) if path.is_relative_to(root) else path} "
            f"({count} line{'s' if count != 1 else ''})"
            for path, count in sorted(self.found.items())
        )
        return (
            f"these files hold secret-shaped text and are uploaded as they are (the directory "
            f"is sent unmasked): {listed}; mask or remove what they hold first"
        )


_SCAN_CHUNK: Final = 1 << 20


def _shaped_lines(lines: list[bytes], masking: ValueMasking) -> int:
    """How many of ``lines`` masking would change (each read as the JSON it holds, else as
    text). A line is taken for JSON only once it parses as JSON: a log line may open with a
    ``[`` or a ``"`` and hold a secret outside any JSON string (``[INFO] "db"
    password="…"``), which the JSON text's reading would not look at."""
    import msgspec

    count = 0
    for raw in lines:
        if not raw.strip():
            continue
        text = raw.decode("utf-8", "replace")
        if not may_hold_secret(text):
            continue
        try:
            msgspec.json.decode(raw)
        except (msgspec.DecodeError, RecursionError):
            changed = masking.text(text) != text
        else:
            changed = masking.json_text(text) != text
        count += changed
    return count
