"""Batches of plain typed records are marshalled, everything else pickled, and a reader tells
them apart."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from dataflow_engine.runtime.state.key_groups import key_hash
from dataflow_engine.runtime.tasks.descriptors import OutputConfig, PayloadKind
from dataflow_engine.runtime.tasks.frames import (
    MARSHALLED,
    batch_encoder,
    decode_batch,
    is_plain,
    marshalled,
    pickled,
)
from dataflow_engine.types import Types as T
from dataflow_engine.types.convert import converter
from dataflow_engine.types.typeinfo import TypeInformation

pytestmark = pytest.mark.unit

#: Plain types, each with a value a program may give for it (before conversion).
PLAIN: list[tuple[TypeInformation, Any]] = [
    (T.STRING(), "hé"), (T.CHAR(), "c"), (T.BOOLEAN(), True), (T.BYTE(), -3),
    (T.SHORT(), 300), (T.INT(), 7), (T.LONG(), 1 << 40), (T.FLOAT(), 0.1), (T.DOUBLE(), 0.1),
    (T.BIG_INT(), -(1 << 62)), (T.PRIMITIVE_ARRAY(T.BYTE()), bytearray(b"ab")),
    (T.PRIMITIVE_ARRAY(T.INT()), [1, 2]), (T.BASIC_ARRAY(T.STRING()), ["a", None]),
    (T.LIST(T.LONG()), [3, 4]), (T.MAP(T.STRING(), T.DOUBLE()), {"a": 1.5}),
    (T.TUPLE([T.STRING(), T.TUPLE([T.INT(), T.BOOLEAN()])]), ("w", (1, False))),
]
NOT_PLAIN = [None, T.PICKLED_BYTE_ARRAY(), T.ROW([T.INT()]), T.BIG_DEC(), T.SQL_DATE(),
             T.INSTANT(), T.OBJECT_ARRAY(T.STRING()), T.TUPLE([T.STRING(), T.BIG_DEC()])]


def _shape(value: Any) -> Any:
    """The value with the exact type of every part, to compare as marshal must keep them."""
    if isinstance(value, list | tuple):
        return (type(value), [_shape(item) for item in value])
    if isinstance(value, dict):
        return (dict, sorted((_shape(k), _shape(v)) for k, v in value.items()))
    return (type(value), value)


@pytest.mark.parametrize(("type_info", "value"), PLAIN, ids=lambda p: repr(p)[:30])
def test_converted_records_of_a_plain_type_come_back_from_marshal_as_they_were(
        type_info: TypeInformation, value: Any) -> None:
    assert is_plain(type_info)
    record = converter(type_info)(value)
    again = decode_batch(marshalled([record, None]))
    assert [_shape(item) for item in again] == [_shape(record), _shape(None)]


@pytest.mark.parametrize("type_info", NOT_PLAIN, ids=repr)
def test_other_types_are_not_plain(type_info: TypeInformation | None) -> None:
    assert not is_plain(type_info)


def test_only_batches_of_plain_records_alone_are_marshalled() -> None:
    plain = OutputConfig(producer=0, partitioner="REBALANCE",  # type: ignore[arg-type]
                         key_selector=None, consumer_name="c", consumer_parallelism=2,
                         consumer_max_parallelism=128, consumer_ranges=((0, 2),),
                         payload=PayloadKind.RECORD, tag_offset=0, record_type=T.STRING())
    encoded = batch_encoder(plain)(["a"])
    assert encoded.startswith(MARSHALLED) and decode_batch(encoded) == ["a"]
    for change in ({"payload": PayloadKind.KEYED}, {"event_time": True}, {"input_number": 1},
                   {"record_type": T.ROW([T.STRING()])}, {"record_type": None},
                   {"record_type": T.LONG()}):  # a lone number pickles as fast
        assert batch_encoder(dataclasses.replace(plain, **change)) is pickled, change
    assert decode_batch(pickled([("a", 1)])) == [("a", 1)]


def test_a_value_marshal_refuses_is_pickled_and_a_float_subclass_is_converted_to_a_float(
        ) -> None:
    record = converter(T.TUPLE([T.STRING(), T.DOUBLE()]))((Text("a"), _Double(0.5)))
    assert type(record[1]) is float  # marshal would write a float subclass's buffer as bytes
    encoded = marshalled([record])
    assert not encoded.startswith(MARSHALLED)  # the str subclass: pickled, as it is
    assert decode_batch(encoded) == [("a", 0.5)]


def test_a_key_sharing_an_object_hashes_alike_after_the_exchange_as_pickled_keys_must() -> None:
    """PyFlink's keys hash as their pickle, which writes an object a key holds twice once:
    a batch must keep what a key shares (pickle's memo), or the consumer would file the
    key's state under another key group than the producer routed it by."""
    text = "".join(["sha", "red"])  # one object, not an interned constant
    key = (text, text)
    hash_of = key_hash(T.PICKLED_BYTE_ARRAY())
    ((again, _),) = decode_batch(pickled([(key, "record")]))
    assert again[0] is again[1]
    assert hash_of(again) == hash_of(key) != hash_of(("shared", "".join(["sha", "red"])))


class _Double(float):
    """A float subclass, as numpy's float64 is."""


class Text(str):
    """A str subclass whose str() is itself."""

    def __str__(self) -> str:
        return self
