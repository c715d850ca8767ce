"""The rollouts' hash runs on a thread of its own while they are parsed
(``reading.prepare._BackgroundDigest``): the same bytes, in the same order, as hashing them
where they are read; no thread outlives the read, whether it ends well or not."""

from __future__ import annotations

import hashlib
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalexport.reading import RunFileError, run_fingerprint
from evalexport.reading.prepare import _BackgroundDigest, prepare


def _hash_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "evalexport-rollouts-hash"]


@given(pieces=st.lists(st.binary(max_size=3000), max_size=60), batch=st.sampled_from([1, 7, 4096]))
def test_the_background_hash_is_the_hash_of_the_bytes_in_order(pieces, batch) -> None:
    digest = hashlib.sha256()
    background = _BackgroundDigest(digest)
    background._BATCH = batch  # small batches: many hand-overs, in order
    for piece in pieces:
        background.update(piece)
    background.finish()
    background.finish()  # finishing twice is harmless
    assert digest.hexdigest() == hashlib.sha256(b"".join(pieces)).hexdigest()


def test_the_fingerprint_of_a_read_is_the_fingerprint_read_again(make_sample_run) -> None:
    sample = make_sample_run()
    assert sample.rollouts.stat().st_size > 2**18
    with sample.rollouts.open("a") as handle:  # more than one batch of a megabyte
        handle.write(("\n" * 1000 + "\n".join([sample.rollouts.read_text()] * 5)) + "\n")
    prepared = prepare(sample.run)
    assert prepared.fingerprint == run_fingerprint(sample.run)
    assert _hash_threads() == []


def test_a_read_that_fails_leaves_no_hashing_thread(make_sample_run) -> None:
    sample = make_sample_run(malformed_lines=[3])
    with pytest.raises(RunFileError, match="line 3"):
        prepare(sample.run)
    assert _hash_threads() == []
