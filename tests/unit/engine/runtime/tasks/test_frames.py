"""Batches of plain typed records are marshalled, everything else pickled (each record on its
own, without pickle's memo), and a reader tells them apart."""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any

import pytest

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


def test_pickled_records_arrive_as_independent_objects_as_from_flinks_network_stack() -> None:
    shared = {"tags": ["a"]}
    encoded = pickled([("k", shared), ("k", shared)])
    # Without the memo, the shared dict is written once per record (no back-reference).
    assert encoded.count(b"tags") == 2
    first, second = decode_batch(encoded)
    assert first == second == ("k", shared)
    first[1]["tags"].append("b")  # a consumer changing one record leaves the other alone
    assert second[1] == {"tags": ["a"]}


def test_a_cyclic_record_which_fast_mode_refuses_is_pickled_with_the_memo() -> None:
    cyclic: list[Any] = ["x"]
    cyclic.append(cyclic)
    (again,) = decode_batch(pickled([cyclic]))
    assert again[0] == "x" and again[1] is again
    assert pickled([cyclic]) == pickle.dumps([cyclic], pickle.HIGHEST_PROTOCOL)


@pytest.mark.parametrize("error", [TypeError, ValueError])
def test_a_value_that_cannot_be_pickled_fails_with_its_own_error(error: type[Exception]
                                                                  ) -> None:
    with pytest.raises(error, match="refused"):
        pickled([("k", _Unpicklable(error))])


class _Unpicklable:
    def __init__(self, error: type[Exception]) -> None:
        self.error = error

    def __reduce__(self) -> Any:
        raise self.error("refused")


class _Double(float):
    """A float subclass, as numpy's float64 is."""


class Text(str):
    """A str subclass whose str() is itself."""

    def __str__(self) -> str:
        return self
