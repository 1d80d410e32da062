"""Arrow arrays built from numpy and Python values, and numpy arrays read back from Arrow columns, over their buffers.

pyarrow's own conversions (``pa.array``, ``pa.scalar``, a Python number or text handed to a compute function,
``Array.to_numpy``) consult its pandas shim on their first use, which imports pandas whenever it is installed (about
0.35 s); the store's writing and a run's reading back need none of it. These helpers build the same arrays from the
values' bytes (``pa.Array.from_buffers``: the numbers' buffer, a validity bitmap where there are nulls, UTF-8 bytes
with int32 offsets for texts) and read fixed-width columns back through their buffers.

Types handled: ``int32``, ``int64``, ``float64``, ``bool`` and ``string``.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pyarrow as pa

_NUMPY_TYPES = {pa.int32(): np.int32, pa.int64(): np.int64, pa.float64(): np.float64, pa.bool_(): np.bool_}
_OFFSET_LIMIT = 2**31 - 1  # a string array's int32 offsets


def arrow_array(values: Sequence[Any] | np.ndarray, kind: pa.DataType, nulls: np.ndarray | None = None) -> pa.Array:
    """The Arrow array of ``kind`` holding ``values`` (n,): a numpy array, or Python values with None for a null.

    ``nulls`` (n,) bool: True where the value is null (for a numpy array; its numbers there are not read). Numbers are
    taken from the array's own buffer where it has ``kind``'s dtype (no copy), else converted; a bool array is
    bit-packed; texts are encoded as UTF-8."""
    if kind == pa.string():
        return _texts(values, nulls)
    dtype = _NUMPY_TYPES.get(kind)
    if dtype is None:
        raise TypeError(f"arrow_array: type {kind} is not one of {', '.join(map(str, _NUMPY_TYPES))}")
    if not isinstance(values, np.ndarray) or values.dtype == object:
        values = list(values)
        missing = np.fromiter((value is None for value in values), bool, len(values))
        if missing.any():
            values = [0 if value is None else value for value in values]
            nulls = missing if nulls is None else nulls | missing
    numbers = np.ascontiguousarray(values, dtype=dtype).reshape(-1)
    data = np.packbits(numbers, bitorder="little") if dtype is np.bool_ else numbers
    validity, null_count = _validity(nulls, len(numbers))
    return pa.Array.from_buffers(kind, len(numbers), [validity, pa.py_buffer(data)], null_count=null_count)


def arrow_scalar(value: Any, kind: pa.DataType) -> pa.Scalar:
    """``value`` (None for null) as an Arrow scalar of ``kind``, for a compute function's argument."""
    return arrow_array([value], kind)[0]


def _texts(values: Sequence[Any] | np.ndarray, nulls: np.ndarray | None) -> pa.Array:
    """A string array of ``values`` (str, or None for null; or a numpy str array)."""
    if isinstance(values, np.ndarray) and values.dtype.kind == "U" and nulls is None:
        ascii_texts = _ascii_texts(values.reshape(-1))
        if ascii_texts is not None:
            return ascii_texts
    values = values.tolist() if isinstance(values, np.ndarray) else list(values)
    missing = np.fromiter((value is None for value in values), bool, len(values))
    if nulls is not None:
        missing |= np.asarray(nulls, bool)
    encoded = [b"" if gone else str(value).encode() for value, gone in zip(values, missing.tolist())]
    offsets = np.zeros(len(encoded) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, encoded), np.int64, len(encoded)), out=offsets[1:])
    if offsets[-1] > _OFFSET_LIMIT:
        raise ValueError(f"texts of {offsets[-1]} bytes: a string array holds at most {_OFFSET_LIMIT}")
    validity, null_count = _validity(missing, len(encoded))
    return pa.Array.from_buffers(pa.string(), len(encoded), [validity, pa.py_buffer(offsets.astype(np.int32)),
                                                             pa.py_buffer(b"".join(encoded))], null_count=null_count)


def _ascii_texts(values: np.ndarray) -> pa.Array | None:
    """A string array of the numpy str array ``values`` (n,) when every character is ASCII (its code points are then
    its UTF-8 bytes: taken without a loop over the texts); None otherwise."""
    width = values.dtype.itemsize // 4  # UTF-32 code points per text, shorter texts padded with zeros
    points = values.view(np.uint32).reshape(len(values), width)
    if points.size and points.max() >= 128:
        return None
    used = points != 0  # (n, width); a text's length: one past its last used code point
    if width:
        lengths = np.where(used.any(axis=1), width - np.argmax(used[:, ::-1], axis=1), 0)
    else:
        lengths = np.zeros(len(values), np.int64)
    offsets = np.zeros(len(values) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] > _OFFSET_LIMIT:
        return None
    data = points[np.arange(width) < lengths[:, None]].astype(np.uint8)
    return pa.Array.from_buffers(pa.string(), len(values), [None, pa.py_buffer(offsets.astype(np.int32)),
                                                            pa.py_buffer(data)])


def _validity(nulls: np.ndarray | None, length: int) -> tuple[pa.Buffer | None, int]:
    """Arrow's validity bitmap (a set bit: a value) of the null mask ``nulls`` (length,) and its null count; None and
    0 without nulls."""
    if nulls is None:
        return None, 0
    nulls = np.asarray(nulls, bool).reshape(-1)
    if len(nulls) != length:
        raise ValueError(f"a null mask of {len(nulls)} for {length} values")
    count = int(nulls.sum())
    return (pa.py_buffer(np.packbits(~nulls, bitorder="little")), count) if count else (None, 0)


def numpy_array(column: pa.Array | pa.ChunkedArray, null: float = np.nan) -> np.ndarray:
    """The values of an int32, int64, float64 or bool ``column`` (n,) as a numpy array of its dtype, read from its
    buffers; a column with nulls comes back as float64 with ``null`` in their places."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    dtype = _NUMPY_TYPES.get(column.type)
    if dtype is None:
        raise TypeError(f"numpy_array: type {column.type} is not one of {', '.join(map(str, _NUMPY_TYPES))}")
    parts = [_chunk_values(chunk, dtype) for chunk in chunks]
    if any(chunk.null_count for chunk in chunks):
        parts = [part.astype(float) for part in parts]
        for part, chunk in zip(parts, chunks):
            if chunk.null_count:
                part[_bits(chunk.buffers()[0], chunk.offset, len(chunk)) == 0] = null
    if not parts:
        return np.empty(0, dtype)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _chunk_values(chunk: pa.Array, dtype: type) -> np.ndarray:
    """The (n,) values of one fixed-width chunk (a view of its buffer for numbers, unpacked for bools)."""
    data = chunk.buffers()[1]
    if data is None or not len(chunk):
        return np.zeros(len(chunk), dtype)
    if dtype is np.bool_:
        return _bits(data, chunk.offset, len(chunk)).astype(bool)
    return np.frombuffer(data, dtype, count=chunk.offset + len(chunk))[chunk.offset:]


def _bits(buffer: pa.Buffer, offset: int, length: int) -> np.ndarray:
    """Bits ``offset`` to ``offset + length - 1`` of an Arrow bitmap (least significant bit first), as 0/1 uint8."""
    return np.unpackbits(np.frombuffer(buffer, np.uint8), bitorder="little", count=offset + length)[offset:]


__all__ = ["arrow_array", "arrow_scalar", "numpy_array"]
