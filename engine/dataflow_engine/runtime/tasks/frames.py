"""How a batch of records travels in a shuffle frame: marshalled when its records are of a
declared type made only of Python's basic values, pickled otherwise.

Records of such a type (strings, numbers, booleans, bytes, and tuples, lists and maps of them)
are exactly those values once the RecordWriterOutput converted them (side outputs, which are
not converted, have no record type here), and ``marshal`` writes
them several times faster than ``pickle``, which memoizes every tuple and string (PyFlink
likewise gives typed records its own coders and pickles only the undeclared). Anything else
(rows, decimals, dates, keys a selector made, timestamps and watermarks of an event-time
exchange, partial aggregates) is pickled. A marshalled batch starts with ``MARSHALLED``,
which no pickle of protocol 2 or later starts with (they start with PROTO), so a reader tells
them apart by their first byte.

A keyed exchange's batch travels as :class:`Columns` (starting with ``COLUMNS``): its records,
their keys and their timestamps in lists of their own rather than as a
``(timestamp, (key, record))`` row each, which spares pickle two tuples per record to write,
memoize and read back (benchmarks/bench_windows.py).
"""

from __future__ import annotations

import marshal
import pickle
from collections.abc import Callable, Iterator
from itertools import islice
from typing import Any

from dataflow_engine.runtime.tasks.descriptors import OutputConfig, PayloadKind
from dataflow_engine.types.typeinfo import (
    BasicArrayTypeInfo,
    BasicType,
    BasicTypeInfo,
    ListTypeInfo,
    MapTypeInfo,
    PrimitiveArrayTypeInfo,
    TupleTypeInfo,
    TypeInformation,
)

MARSHALLED = b"m"
COLUMNS = b"c"
_PROTOCOL = pickle.HIGHEST_PROTOCOL
#: Basic types whose converted values are str, int, float or bool themselves.
_PLAIN_BASICS = frozenset({BasicType.STRING, BasicType.CHAR, BasicType.BOOLEAN, BasicType.BYTE,
                           BasicType.SHORT, BasicType.INT, BasicType.LONG, BasicType.FLOAT,
                           BasicType.DOUBLE, BasicType.BIG_INT})
_TEXT_BASICS = frozenset({BasicType.STRING, BasicType.CHAR})

Encoder = Callable[[list[Any]], bytes]


def is_plain(type_info: TypeInformation | None) -> bool:
    """Whether every value of the type, converted, is made of str, int, float, bool, bytes,
    None, tuple, list and dict alone (what marshal writes and reads back as it was)."""
    if isinstance(type_info, BasicTypeInfo):
        return type(type_info) is BasicTypeInfo and type_info.basic_type in _PLAIN_BASICS
    if isinstance(type_info, PrimitiveArrayTypeInfo | BasicArrayTypeInfo | ListTypeInfo):
        return is_plain(type_info.element_type)
    if isinstance(type_info, TupleTypeInfo):
        return all(is_plain(field) for field in type_info.field_types)
    if isinstance(type_info, MapTypeInfo):
        return is_plain(type_info.key_type) and is_plain(type_info.value_type)
    return False


def pickled(batch: list[Any]) -> bytes:
    return pickle.dumps(batch, _PROTOCOL)


def marshalled(batch: list[Any]) -> bytes:
    """The batch marshalled; pickled when marshal refuses a value (an instance of a subclass
    of str, which a converted record could still hold)."""
    try:
        return MARSHALLED + marshal.dumps(batch)
    except ValueError:
        return pickled(batch)


def batch_encoder(config: OutputConfig) -> Encoder:
    """How a RecordWriter writes its batches: marshalled when a batch holds only the records,
    and they are of a plain declared type with text or structure in it (a lone number or
    boolean pickles as fast: benchmarks/bench_exchange.py)."""
    records_alone = (config.payload is PayloadKind.RECORD and not config.event_time
                     and not config.input_number)
    record_type = config.record_type
    lone_scalar = (isinstance(record_type, BasicTypeInfo)
                   and record_type.basic_type not in _TEXT_BASICS)
    return (marshalled if records_alone and is_plain(record_type) and not lone_scalar
            else pickled)


class Columns:
    """A keyed exchange's batch: the records, their keys (None when the consumer does not
    take them) and their timestamps (None off an event-time exchange), with each watermark
    or status at its position among the records (``(records before it, element)``).

    One pickle holds the whole batch, so what records share stays shared, as in a list.
    Iterating gives the elements a batch of rows would hold; a consumer's event-time input
    reads the columns themselves (``StreamTask._event_time_records``).
    """

    __slots__ = ("keys", "marks", "records", "stamps")

    def __init__(self, stamps: list[int | None] | None, keys: list[Any] | None,
                 records: list[Any], marks: list[tuple[int, Any]]) -> None:
        self.stamps = stamps
        self.keys = keys
        self.records = records
        self.marks = marks

    def rows(self) -> Iterator[Any]:
        """Each record as a batch of rows holds it: its payload (``(key, record)``, or the
        record), with its timestamp first on an event-time exchange."""
        payloads = (iter(self.records) if self.keys is None
                    else zip(self.keys, self.records, strict=True))
        return payloads if self.stamps is None else zip(self.stamps, payloads, strict=True)

    def runs(self) -> Iterator[tuple[Iterator[Any], Any]]:
        """The rows in runs, each with the mark that follows it (None after the last run);
        a run is read to its end before the next is taken."""
        rows, read = self.rows(), 0
        for position, element in self.marks:
            yield islice(rows, position - read), element
            read = position
        yield rows, None

    def __iter__(self) -> Iterator[Any]:
        return self.rows() if not self.marks else self._marked()

    def _marked(self) -> Iterator[Any]:
        for rows, element in self.runs():
            yield from rows
            if element is not None:
                yield element


def columns_encoded(columns: Columns) -> bytes:
    return COLUMNS + pickle.dumps((columns.stamps, columns.keys, columns.records, columns.marks),
                                  _PROTOCOL)


Batch = list[Any] | Columns


def decode_batch(data: bytes) -> Batch:
    first = data[:1]
    if first == MARSHALLED:
        return marshal.loads(memoryview(data)[1:])  # type: ignore[no-any-return]
    if first == COLUMNS:
        return Columns(*pickle.loads(memoryview(data)[1:]))
    return pickle.loads(data)  # type: ignore[no-any-return]
