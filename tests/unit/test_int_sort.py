"""int_sort.lexsort is np.lexsort, permutation for permutation."""
import numpy as np
import pytest

from tb_plugin.int_sort import lexsort


def _cases():
    rng = np.random.default_rng(5)
    for _ in range(400):
        n = int(rng.integers(0, 60))
        nkeys = int(rng.integers(1, 4))
        keys = []
        for _ in range(nkeys):
            kind = rng.integers(0, 6)
            if kind == 0:    # few distinct values: many ties
                k = rng.integers(0, 3, n).astype(np.int32)
            elif kind == 1:  # timestamps: big, nearly sorted
                k = (1_717_200_000_000_000_000 + np.cumsum(rng.integers(-5, 1000, n))
                     ).astype(np.int64)
            elif kind == 2:  # negative durations as sort keys (-dur)
                k = -rng.integers(0, 10**10, n).astype(np.int64)
            elif kind == 3:  # the whole int64 range: cannot be packed
                k = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, n,
                                 dtype=np.int64)
            elif kind == 4:
                k = rng.integers(0, 2**16, n).astype(np.uint64) + np.uint64(2**63)
            else:
                k = rng.integers(-40, 40, n).astype(np.int16)
            keys.append(k)
        yield keys


@pytest.mark.parametrize("i_keys", list(enumerate(_cases())), ids=lambda c: str(c[0]))
def test_lexsort_is_numpys(i_keys):
    _, keys = i_keys
    assert np.array_equal(lexsort(keys), np.lexsort(keys))


def test_lexsort_of_float_and_empty_keys():
    f = np.array([0.5, -1.0, 0.5, 2.0])
    t = np.array([1, 0, 1, 0])
    assert np.array_equal(lexsort([f, t]), np.lexsort([f, t]))
    assert np.array_equal(lexsort([t, f]), np.lexsort([t, f]))
    assert len(lexsort([np.zeros(0, np.int64)])) == 0
    assert np.array_equal(lexsort([np.array([3])]), [0])


def test_lexsort_refines_ties_of_the_packed_keys_by_the_rest():
    # (track, start) packs; -dur does not fit beside them: ties on (track, start) must be
    # ordered by -dur, and full ties keep their input order
    track = np.array([1, 0, 1, 1, 0, 1], np.int32)
    start = np.array([5, 7, 5, 2, 7, 5], np.int64) + 1_700_000_000_000_000_000
    neg_dur = -np.array([1, 9, 3, 4, 9, 2**62], np.int64)
    keys = [neg_dur, start, track]
    assert np.array_equal(lexsort(keys), np.lexsort(keys))
    assert lexsort(keys).tolist() == [1, 4, 3, 5, 2, 0]
