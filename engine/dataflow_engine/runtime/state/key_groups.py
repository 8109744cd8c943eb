"""KeyGroupRangeAssignment: key -> key group -> operator index, stable across processes and runs.

Python's ``hash`` is salted per process, so it cannot route keys between Spark workers. Keys are
hashed the way Java hashes them (``String.hashCode``, ``Integer.hashCode``, ``Tuple.hashCode``),
then through Flink's ``MathUtils.murmurHash``: for str and int keys the key group is the one
Flink computes. Numbers that compare equal in Python (``1``, ``1.0``, ``True``) are one key in a
Python dict, so they hash alike here too and always reach the same subtask.
"""

from __future__ import annotations

import pickle
import struct
import sys
from array import array
from collections.abc import Callable
from typing import Any

from dataflow_engine.types.typeinfo import (
    BasicType,
    BasicTypeInfo,
    PickledBytesTypeInfo,
    TypeInformation,
)

_MASK = 0xFFFFFFFF
_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _int32(value: int) -> int:
    value &= _MASK
    return value - (1 << 32) if value & 0x80000000 else value


def _string_hash(value: str) -> int:
    """Java's ``String.hashCode`` over UTF-16 code units."""
    h = 0
    if value.isascii():
        for unit in value.encode("ascii"):
            h = (31 * h + unit) & _MASK
        return _int32(h)
    units = array("H", value.encode("utf-16-le", "surrogatepass"))
    if sys.byteorder == "big":
        units.byteswap()
    for unit in units:
        h = (31 * h + unit) & _MASK
    return _int32(h)


def _long_hash(value: int) -> int:
    """``Integer.hashCode`` in int range, ``Long.hashCode`` in long range, else of the text."""
    if _INT32_MIN <= value <= _INT32_MAX:
        return value
    if _INT64_MIN <= value <= _INT64_MAX:
        bits = value & 0xFFFFFFFFFFFFFFFF
        return _int32(bits ^ (bits >> 32))
    return _string_hash(str(value))


def _float_hash(value: float) -> int:
    """Of a whole number, its int's (so 1.0 is the key 1, as in a Python dict); else Java's
    ``Double.hashCode``."""
    if value.is_integer():
        return _long_hash(int(value))
    return _double_hash(value)


def _double_hash(value: float) -> int:
    """Java's ``Double.hashCode``: the folded ``doubleToLongBits`` (one canonical NaN)."""
    bits = 0x7FF8000000000000 if value != value else struct.unpack(
        ">Q", struct.pack(">d", value))[0]
    return _int32(bits ^ (bits >> 32))


def _bytes_hash(value: bytes) -> int:
    """``Arrays.hashCode(byte[])`` (signed bytes, seed 1)."""
    h = 1
    for b in value:
        h = (31 * h + (b - 256 if b > 127 else b)) & _MASK
    return _int32(h)


def _sequence_hash(value: tuple[Any, ...] | list[Any]) -> int:
    """Flink's ``TupleN.hashCode``: ``31 * h + field.hashCode()`` from 0."""
    h = 0
    for item in value:
        h = (31 * h + java_hash_code(item)) & _MASK
    return _int32(h)


_HASHERS: dict[type, Callable[[Any], int]] = {
    str: _string_hash,
    int: _long_hash,
    bool: lambda v: int(v),
    float: _float_hash,
    type(None): lambda v: 0,
    bytes: _bytes_hash,
    tuple: _sequence_hash,
    list: _sequence_hash,
}


def java_hash_code(key: Any) -> int:
    """A 32-bit hash of ``key`` that every process computes alike (Java's hashCode, see module)."""
    hasher = _HASHERS.get(type(key))
    if hasher is None:
        for kind, candidate in _HASHERS.items():
            if isinstance(key, kind):
                return candidate(key)
        raise TypeError(
            f"key {key!r} of type {type(key).__name__} has no stable hash; key by str, int, "
            "float, bool, None, bytes or tuples of them")
    return hasher(key)


def _bit_mix(code: int) -> int:
    code ^= code >> 16
    code = (code * 0x85EBCA6B) & _MASK
    code ^= code >> 13
    code = (code * 0xC2B2AE35) & _MASK
    code ^= code >> 16
    return code


def _rotl(value: int, distance: int) -> int:
    return ((value << distance) | (value >> (32 - distance))) & _MASK


def murmur_hash(code: int) -> int:
    """Flink's ``MathUtils.murmurHash(int)``: a non-negative int."""
    code &= _MASK
    code = (code * 0xCC9E2D51) & _MASK
    code = _rotl(code, 15)
    code = (code * 0x1B873593) & _MASK
    code = _rotl(code, 13)
    code = (code * 5 + 0xE6546B64) & _MASK
    code ^= 4
    signed = _int32(_bit_mix(code))
    if signed >= 0:
        return signed
    return -signed if signed != _INT32_MIN else 0


KeyHash = Callable[[Any], int]

#: What Flink's ``Row.hashCode`` of a one-field row of kind INSERT adds to its field's hash.
_ROW_OF_ONE = 62


def key_hash(key_type: TypeInformation | None) -> KeyHash:
    """How a keyBy edge hashes its keys before Flink's murmur hash.

    Without a key type, the key's own Java hash code (a Java job's keyBy). PyFlink's
    ``key_by`` keys by a one-field Row instead: of the pickled key (no ``key_type``: the
    field is PyFlink's cloudpickle of the key, which for keys of plain values is Python's
    protocol 5 pickle) or of the key as a ``key_type`` value.
    """
    if key_type is None:
        return java_hash_code
    if isinstance(key_type, PickledBytesTypeInfo):
        return lambda key: _int32(_ROW_OF_ONE + _bytes_hash(pickle.dumps(key, protocol=5)))
    field_hash = _typed_hash(key_type)
    return lambda key: _int32(_ROW_OF_ONE + field_hash(key))


def batch_key_order(key_type: TypeInformation | None) -> Callable[[Any], Any] | None:
    """The order in which Flink's BATCH execution sorts a keyed input, as a sort key; None
    where it is not reproduced (keys then come in the order they first arrived). PyFlink's
    keys without a ``key_type`` sort by their serialized row: the pickle's length, then its
    bytes."""
    if not isinstance(key_type, PickledBytesTypeInfo):
        return None

    def order(key: Any) -> tuple[int, bytes]:
        pickled = pickle.dumps(key, protocol=5)
        return len(pickled), pickled

    return order


def _typed_hash(key_type: TypeInformation) -> KeyHash:
    """Java's hashCode of a key converted to its declared type."""
    if isinstance(key_type, BasicTypeInfo):
        basic = key_type.basic_type
        if basic is BasicType.BOOLEAN:
            return lambda key: 1231 if key else 1237
        if basic is BasicType.FLOAT:
            return lambda key: struct.unpack(">i", struct.pack(">f", key))[0]
        if basic is BasicType.DOUBLE:
            return _double_hash
    return java_hash_code


def assign_to_key_group(key: Any, max_parallelism: int, hash_key: KeyHash = java_hash_code
                        ) -> int:
    return murmur_hash(hash_key(key)) % max_parallelism


def compute_operator_index_for_key_group(max_parallelism: int, parallelism: int,
                                         key_group: int) -> int:
    return key_group * parallelism // max_parallelism


def key_group_range(max_parallelism: int, parallelism: int, index: int) -> range:
    """The key groups subtask ``index`` owns (Flink's computeKeyGroupRangeForOperatorIndex):
    exactly those :func:`compute_operator_index_for_key_group` sends to it."""
    start = (index * max_parallelism + parallelism - 1) // parallelism
    end = ((index + 1) * max_parallelism - 1) // parallelism
    return range(start, end + 1)


def assign_key_to_parallel_operator(key: Any, max_parallelism: int, parallelism: int,
                                    hash_key: KeyHash = java_hash_code) -> int:
    return compute_operator_index_for_key_group(
        max_parallelism, parallelism, assign_to_key_group(key, max_parallelism, hash_key))
