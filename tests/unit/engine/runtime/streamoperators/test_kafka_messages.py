"""What a KafkaSink writes for a record, and what a KafkaSource reads from a message, by
their formats (no broker: the encoding alone)."""

from __future__ import annotations

import pytest

from dataflow_engine.runtime.streamoperators.kafka import _row_decoder, _typed
from dataflow_engine.runtime.streamoperators.kafka_sink import _encoder, _splitter, _value_type
from dataflow_engine.spec.catalog import KafkaSinkArgs, KafkaSourceArgs
from dataflow_engine.types import Types as T
from dataflow_engine.types.row import Row

pytestmark = pytest.mark.unit

ROW = T.ROW([T.INT(), T.STRING()])
BYTES = T.PRIMITIVE_ARRAY(T.BYTE())


def _sink(**args: object) -> KafkaSinkArgs:
    return KafkaSinkArgs.model_validate({"bootstrapServers": "k:9092", "topic": "t", **args})


def test_a_csv_sink_writes_each_row_as_a_line_and_a_csv_source_reads_it_back() -> None:
    args = _sink(valueFormat="csv")
    encode = _encoder("csv", ROW, args)
    assert encode(Row(1, "hi")) == b"1,hi\n"
    assert encode(None) is None
    source = KafkaSourceArgs.model_validate({"bootstrapServers": "k:9092", "topics": ["t"],
                                             "valueFormat": "csv"})
    read = _typed(_row_decoder(source, ROW), ROW)(b"1,hi\n")
    assert isinstance(read, Row) and list(read) == [1, "hi"]
    with pytest.raises(OverflowError, match="out of INT's range"):  # as a converted field
        _typed(_row_decoder(source, ROW), ROW)(b"4294967296,x")


def test_row_fields_are_the_key_and_the_value() -> None:
    args = _sink(keyFormat="raw", keyField=0, valueFormat="raw", valueField=1)
    assert _splitter(args)(Row(b"user-1", b'{"a": 1}')) == (b"user-1", b'{"a": 1}')
    assert _value_type(args, T.ROW([BYTES, BYTES])) == BYTES
    with pytest.raises(TypeError, match="not a row with those fields"):
        _splitter(args)((b"only-one",))
    keyed = _sink(keyFormat="text", keyField=1, valueFormat="csv")
    assert _splitter(keyed)(Row(1, "k")) == ("k", Row(1, "k"))  # the whole row is the value
    assert _value_type(keyed, ROW) == ROW


def test_without_fields_a_keyed_sink_takes_pairs_and_an_unkeyed_one_records() -> None:
    pairs = _sink(keyFormat="text", valueFormat="json")
    assert _splitter(pairs)(("k", {"v": 1})) == ("k", {"v": 1})
    assert _value_type(pairs, T.TUPLE([T.STRING(), ROW])) is None
    with pytest.raises(TypeError, match="are \\(key, value\\) pairs"):
        _splitter(pairs)("alone")
    assert _splitter(_sink())("alone") == (None, "alone")


def test_a_json_sink_writes_rows_as_compact_objects_by_field_name() -> None:
    # as Flink's JsonRowSerializationSchema (Jackson) writes them
    encode = _encoder("json", T.ROW_NAMED(["id", "name"], [T.INT(), T.STRING()]))
    assert encode(Row(1, "hé")) == '{"id":1,"name":"hé"}'.encode()
