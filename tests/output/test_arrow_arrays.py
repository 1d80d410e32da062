"""Arrow arrays from their buffers (shiftsim.output.arrow_arrays) against pyarrow's own conversions.

The oracle is pyarrow: ``pa.array`` of the same values (numpy arrays, Python lists with None, masks) must equal what
``arrow_array`` builds, and ``Array.to_numpy(zero_copy_only=False)`` must give what ``numpy_array`` reads back,
for sliced and chunked columns with and without nulls.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from shiftsim.output.arrow_arrays import arrow_array, arrow_scalar, numpy_array

RNG = np.random.default_rng(7)
NUMBERS = {pa.int32(): RNG.integers(-2**31, 2**31 - 1, 37, dtype=np.int32),
           pa.int64(): RNG.integers(-2**62, 2**62, 37),
           pa.float64(): np.r_[RNG.normal(size=33), np.nan, np.inf, -0.0, 1e300],
           pa.bool_(): RNG.random(37) < 0.5}
NULLS = RNG.random(37) < 0.3


def same(built: pa.Array, expected: pa.Array) -> bool:
    """Equal type, nulls and values, NaN equal to NaN (compared as their shortest round-trip texts)."""
    return built.type == expected.type and pc.cast(built, pa.string()).equals(pc.cast(expected, pa.string()))


@pytest.mark.parametrize("kind", list(NUMBERS), ids=str)
def test_numbers_from_numpy_equal_pyarrows_with_and_without_nulls(kind):
    values = NUMBERS[kind]
    assert same(arrow_array(values, kind), pa.array(values, kind))
    built = arrow_array(values, kind, NULLS)
    assert same(built, pa.array(values, kind, mask=NULLS)) and built.null_count == NULLS.sum() > 0
    built.validate(full=True)
    assert same(arrow_array(values[5:], kind), pa.array(values[5:], kind))  # a view not starting at its buffer
    assert same(arrow_array(values[::2], kind), pa.array(values[::2], kind))  # strided: copied
    assert not same(arrow_array(values, kind), pa.array(values[::-1], kind))  # the comparison can fail


@pytest.mark.parametrize("kind", list(NUMBERS), ids=str)
def test_python_values_with_none_equal_pyarrows(kind):
    values = [None if null else value for value, null in zip(NUMBERS[kind].tolist(), NULLS)]
    built = arrow_array(values, kind)
    assert same(built, pa.array(values, kind)) and built.null_count == NULLS.sum()
    assert arrow_array([], kind).equals(pa.array([], kind))


def test_texts_equal_pyarrows_utf8_nulls_and_numpy_str():
    texts = ["converged", "", None, "ex1:arm:boom_cyl", "Grad °", "δ|ε", None, "x" * 300]
    built = arrow_array(texts, pa.string())
    built.validate(full=True)
    assert built.equals(pa.array(texts, pa.string())) and built.null_count == 2
    words = np.array(["stable", "unstable", "stable", "unknown"])
    assert arrow_array(words, pa.string()).equals(pa.array(words.tolist(), pa.string()))
    for texts in (np.array(["", "a\x00b", "", "converged"]), np.array(["Grad °", "x"]), np.array(["", ""]),
                  np.array([], str)):  # ASCII (taken as code points), not ASCII (encoded), empty texts, none
        built = arrow_array(texts, pa.string())
        built.validate(full=True)
        assert built.equals(pa.array(texts.tolist(), pa.string()))
    mask = np.array([False, True, False, False])
    assert arrow_array(words, pa.string(), mask).to_pylist() == ["stable", None, "stable", "unknown"]
    assert arrow_array((), pa.string()).equals(pa.array([], pa.string()))


def test_scalars_equal_pyarrows_and_serve_compute_functions():
    assert arrow_scalar("-0.0", pa.string()).equals(pa.scalar("-0.0", pa.string()))
    assert arrow_scalar(None, pa.string()).equals(pa.scalar(None, pa.string()))
    words = arrow_array(["a", "b", None], pa.string())
    joined = pc.binary_join_element_wise(words, arrow_scalar(".0", pa.string()), arrow_scalar("", pa.string()))
    assert joined.to_pylist() == ["a.0", "b.0", None]


@pytest.mark.parametrize("kind", list(NUMBERS), ids=str)
def test_numpy_array_reads_back_what_to_numpy_gives(kind):
    values = NUMBERS[kind]
    plain = pa.array(values, kind)
    assert numpy_array(plain).dtype == values.dtype
    np.testing.assert_array_equal(numpy_array(plain), plain.to_numpy(zero_copy_only=False))
    sliced = plain.slice(3, 20)  # an offset into the buffers (bools: not on a byte boundary)
    np.testing.assert_array_equal(numpy_array(sliced), values[3:23])
    with_nulls = pa.array(values, kind, mask=NULLS)
    expected = values.astype(float)
    expected[NULLS] = np.nan
    np.testing.assert_array_equal(numpy_array(with_nulls), expected)  # NaN where null (equal NaNs)
    np.testing.assert_array_equal(numpy_array(with_nulls.slice(7, 25)), expected[7:32])
    chunked = pa.chunked_array([with_nulls.slice(0, 10), plain.slice(10), pa.array([], kind)])
    np.testing.assert_array_equal(numpy_array(chunked), np.r_[expected[:10], values[10:].astype(float)])
    np.testing.assert_array_equal(numpy_array(with_nulls, null=-1.0)[NULLS], -1.0)
    assert numpy_array(pa.chunked_array([], kind)).shape == (0,)


def test_unhandled_types_and_mismatched_masks_are_refused():
    with pytest.raises(TypeError, match="type float is not one of int32, int64, double, bool"):
        arrow_array(np.zeros(3, np.float32), pa.float32())
    with pytest.raises(TypeError, match="type string is not one of"):
        numpy_array(pa.array(["a"]))
    with pytest.raises(ValueError, match="null mask of 2 for 3"):
        arrow_array(np.zeros(3), pa.float64(), np.zeros(2, bool))
