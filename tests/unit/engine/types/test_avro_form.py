"""Rows as Avro binary datums of a record schema, as Flink's Avro row schemas write them."""

from __future__ import annotations

import json

import pytest

from dataflow_engine.types import Types as T
from dataflow_engine.types.avro_form import AvroSchemaError, avro_codec
from dataflow_engine.types.row import Row

pytestmark = pytest.mark.unit


def _record(*fields: tuple[str, object]) -> str:
    return json.dumps({"type": "record", "name": "R",
                       "fields": [{"name": name, "type": kind} for name, kind in fields]})


def test_a_record_of_primitives_is_its_fields_in_avros_binary_encoding() -> None:
    codec = avro_codec(_record(("id", "int"), ("name", "string"), ("big", "long"),
                               ("ok", "boolean"), ("ratio", "double"), ("raw", "bytes")))
    assert codec.row_type == T.ROW_NAMED(
        ["id", "name", "big", "ok", "ratio", "raw"],
        [T.INT(), T.STRING(), T.LONG(), T.BOOLEAN(), T.DOUBLE(), T.PRIMITIVE_ARRAY(T.BYTE())])
    datum = codec.write(Row(-3, "hé", 1 << 40, True, 0.5, b"\x00\xff"))
    # zig-zag varints; lengths before bytes; a double in 8 little-endian bytes
    assert datum == (b"\x05" + b"\x06h\xc3\xa9" + b"\x80\x80\x80\x80\x80\x40" + b"\x01"
                     + b"\x00\x00\x00\x00\x00\x00\xe0\x3f" + b"\x04\x00\xff")
    row = codec.read(datum)
    assert list(row) == [-3, "hé", 1 << 40, True, 0.5, b"\x00\xff"]
    assert row.as_dict()["name"] == "hé"


def test_unions_with_null_arrays_maps_enums_and_nested_records_round_trip() -> None:
    inner = {"type": "record", "name": "Inner", "fields": [{"name": "x", "type": "float"}]}
    codec = avro_codec(_record(
        ("tags", {"type": "array", "items": "string"}), ("counts", {"type": "map",
                                                                    "values": "long"}),
        ("maybe", ["null", "int"]), ("kind", {"type": "enum", "name": "K",
                                              "symbols": ["A", "B"]}),
        ("inner", inner), ("id", {"type": "fixed", "name": "F", "size": 2})))
    assert list(codec.row_type.field_types[:4]) == [T.OBJECT_ARRAY(T.STRING()),
                                              T.MAP(T.STRING(), T.LONG()), T.INT(), T.STRING()]
    for values in ([["a", "b"], {"k": -1}, 7, "B", Row(1.5), b"ab"],
                   [[], {}, None, "A", Row(0.25), b"cd"]):
        row = codec.read(codec.write(values))
        assert [list(v) if isinstance(v, Row) else v for v in row] == [
            list(v) if isinstance(v, Row) else v for v in values]
    assert codec.write([[], {}, None, "A", Row(0.25), b"cd"])[:4] == b"\x00\x00\x00\x00"


def test_what_the_format_cannot_use_is_refused_naming_the_field() -> None:
    with pytest.raises(AvroSchemaError, match="is a record"):
        avro_codec('"string"')
    with pytest.raises(AvroSchemaError, match="not JSON"):
        avro_codec("{record")
    with pytest.raises(AvroSchemaError, match=r"when: the Avro logical type 'date'"):
        avro_codec(_record(("when", {"type": "int", "logicalType": "date"})))
    with pytest.raises(AvroSchemaError, match="only a union of null and one type"):
        avro_codec(_record(("either", ["int", "string"])))
    codec = avro_codec(_record(("id", "int")))
    with pytest.raises(ValueError, match="has 1 fields, the row"):
        codec.write((1, 2))
    with pytest.raises(ValueError, match="ends too soon"):
        codec.read(b"\x80")
    with pytest.raises(ValueError, match="bytes follow the Avro datum"):
        codec.read(b"\x02\x02")


def test_a_datum_outside_the_schema_fails_and_named_types_are_found_by_full_name() -> None:
    color = {"type": "enum", "name": "Color", "namespace": "ex", "symbols": ["RED"]}
    codec = avro_codec(_record(("a", color), ("b", "ex.Color"), ("c", ["null", "int"])))
    assert list(codec.read(b"\x00\x00\x02\x06")) == ["RED", "RED", 3]
    with pytest.raises(ValueError, match="has no symbol 1"):
        codec.read(b"\x02\x00\x00")
    with pytest.raises(ValueError, match="has no branch 2"):
        codec.read(b"\x00\x00\x04")
