"""chunks and hash_range: the exact seed-003 contract (SPEC §1)."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lanemon.work import chunks, hash_range


def reference_hash(start, stop, seed=0):
    h = seed
    for i in range(start, stop):
        h = (h * 31 + i) % 2**32
    return h


@pytest.mark.parametrize("size", [0, -1, -100])
def test_chunks_refuses_non_positive_size(size):
    with pytest.raises(ValueError, match="size must be positive"):
        chunks(10, size)


@pytest.mark.parametrize("size", [1.5, 2.0, "3", None, True])
def test_chunks_refuses_non_integer_size(size):
    with pytest.raises(TypeError):
        chunks(10, size)


def test_chunks_refuses_negative_total():
    with pytest.raises(ValueError, match="negative"):
        chunks(-1, 3)


def test_chunks_of_nothing_is_empty():
    assert chunks(0, 5) == []


def test_chunks_example_last_piece_shorter():
    assert chunks(10, 4) == [(0, 4), (4, 8), (8, 10)]


@given(total=st.integers(0, 5_000), size=st.integers(1, 700))
def test_chunks_cover_without_gap_or_overlap(total, size):
    pieces = chunks(total, size)
    assert len(pieces) == math.ceil(total / size)
    position = 0
    for start, stop in pieces:
        assert start == position  # no gap, no overlap
        assert 0 < stop - start <= size
        position = stop
    assert position == total
    assert all(stop - start == size for start, stop in pieces[:-1])


def test_hash_range_matches_the_formula():
    assert hash_range(0, 0) == 0
    assert hash_range(0, 1) == 0
    assert hash_range(0, 3) == ((0 * 31 + 1) * 31 + 2)
    assert hash_range(0, 100_000) == reference_hash(0, 100_000)
    assert hash_range(5, 50, seed=123) == reference_hash(5, 50, 123)


def test_hash_range_wraps_to_32_bits():
    h = hash_range(0, 10_000, seed=2**32 - 1)
    assert 0 <= h < 2**32
    assert h == reference_hash(0, 10_000, 2**32 - 1)


@given(total=st.integers(0, 3_000), size=st.integers(1, 400), seed=st.integers(0, 2**32 - 1))
def test_slicing_with_seed_chaining_never_changes_the_answer(total, size, seed):
    h = seed
    for start, stop in chunks(total, size):
        h = hash_range(start, stop, h)
    assert h == hash_range(0, total, seed)


def test_order_matters_so_seeds_must_chain():
    # Without chaining, slices give a different answer: the reason for the seed.
    parts = [hash_range(a, b) for a, b in chunks(1000, 100)]
    assert parts[-1] != hash_range(0, 1000)
