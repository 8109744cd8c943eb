"""Rows as Avro binary datums: Flink's AvroRowSerializationSchema and
AvroRowDeserializationSchema, the Kafka connectors' ``avro`` format.

A message is one datum of the job's Avro schema (a record), in Avro's binary encoding and
without a container or a schema registry's header, as Flink writes it. A record is a Row by
position, whose type is the schema's (Flink's AvroSchemaConverter): int INT, long LONG,
float FLOAT, double DOUBLE, boolean BOOLEAN, string and enum STRING, bytes and fixed
PRIMITIVE_ARRAY<BYTE>, array OBJECT_ARRAY, map MAP<STRING, ...>, record ROW_NAMED, and a
union of null and one type that type, nullable. Other unions and logical types (dates,
decimals) are refused when the schema is read, naming the field.
"""

from __future__ import annotations

import functools
import json
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dataflow_engine.types.row import Row
from dataflow_engine.types.typeinfo import RowTypeInfo, TypeInformation, Types

Writer = Callable[[bytearray, Any], None]
Reader = Callable[["_Input"], Any]

_FLOAT, _DOUBLE = struct.Struct("<f"), struct.Struct("<d")


class AvroSchemaError(ValueError):
    """A schema this format cannot use; the message names the field."""


@dataclass(frozen=True)
class AvroCodec:
    """One record schema: its row type, and how a row becomes a datum and back."""

    row_type: RowTypeInfo
    write: Callable[[Any], bytes]
    read: Callable[[bytes], Row]


@functools.lru_cache(maxsize=64)
def avro_codec(schema_text: str) -> AvroCodec:
    """The codec of a record schema given as JSON text; AvroSchemaError when unusable. One
    schema is read once: the spec's validation, the compiler and each subtask ask for it, and
    a codec (closures over its parsed schema) keeps no state of its own."""
    try:
        schema = json.loads(schema_text)
    except json.JSONDecodeError as error:
        raise AvroSchemaError(f"the Avro schema is not JSON: {error}") from None
    if not isinstance(schema, dict) or schema.get("type") != "record":
        raise AvroSchemaError("the Avro schema of a message is a record "
                              "({\"type\": \"record\", \"name\": ..., \"fields\": [...]})")
    node = _Schema({}).parse(schema, "")
    assert isinstance(node.type_info, RowTypeInfo)
    write_datum, read_datum = node.write, node.read

    def write(row: Any) -> bytes:
        out = bytearray()
        write_datum(out, row)
        return bytes(out)

    def read(data: bytes) -> Row:
        source = _Input(data)
        value = read_datum(source)
        if source.position != len(data):
            raise ValueError(f"{len(data) - source.position} bytes follow the Avro datum")
        return value  # type: ignore[no-any-return]

    return AvroCodec(node.type_info, write, read)


@dataclass(frozen=True)
class _Node:
    type_info: TypeInformation
    write: Writer
    read: Reader


class _Input:
    def __init__(self, data: bytes) -> None:
        self.data, self.position = data, 0

    def take(self, size: int) -> bytes:
        end = self.position + size
        if size < 0 or end > len(self.data):
            raise ValueError("the Avro datum ends too soon")
        chunk, self.position = self.data[self.position:end], end
        return chunk

    def long(self) -> int:
        shift = result = 0
        while True:
            byte = self.take(1)[0]
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return (result >> 1) ^ -(result & 1)
            shift += 7
            if shift > 63:
                raise ValueError("an Avro long longer than 10 bytes")


def _write_long(out: bytearray, value: int) -> None:
    encoded = (value << 1) ^ (value >> 63)
    while encoded & ~0x7F:
        out.append((encoded & 0x7F) | 0x80)
        encoded >>= 7
    out.append(encoded)


def _write_bytes(out: bytearray, value: bytes) -> None:
    _write_long(out, len(value))
    out += value


def _read_bytes(source: _Input) -> bytes:
    return source.take(source.long())


def _write_boolean(out: bytearray, value: Any) -> None:
    out.append(1 if value else 0)


def _read_boolean(source: _Input) -> bool:
    return source.take(1) != b"\x00"


def _write_string(out: bytearray, value: Any) -> None:
    _write_bytes(out, str(value).encode("utf-8"))


def _read_string(source: _Input) -> str:
    return _read_bytes(source).decode("utf-8")


_PRIMITIVES: dict[str, _Node] = {
    "int": _Node(Types.INT(), _write_long, _Input.long),
    "long": _Node(Types.LONG(), _write_long, _Input.long),
    "float": _Node(Types.FLOAT(), lambda out, v: out.extend(_FLOAT.pack(v)),
                   lambda source: _FLOAT.unpack(source.take(4))[0]),
    "double": _Node(Types.DOUBLE(), lambda out, v: out.extend(_DOUBLE.pack(v)),
                    lambda source: _DOUBLE.unpack(source.take(8))[0]),
    "boolean": _Node(Types.BOOLEAN(), _write_boolean, _read_boolean),
    "string": _Node(Types.STRING(), _write_string, _read_string),
    "bytes": _Node(Types.PRIMITIVE_ARRAY(Types.BYTE()), lambda out, v: _write_bytes(out, bytes(v)),
                   _read_bytes),
}


class _Schema:
    """Parses a schema into nodes; ``named`` holds the named types defined so far."""

    def __init__(self, named: dict[str, _Node]) -> None:
        self.named = named

    def parse(self, schema: Any, path: str) -> _Node:
        where = path or "the schema"
        if isinstance(schema, str):
            if schema in _PRIMITIVES:
                return _PRIMITIVES[schema]
            if schema in self.named:
                return self.named[schema]
            raise AvroSchemaError(f"{where}: Avro type {schema!r} is not supported here "
                                  f"(or not defined before its use)")
        if isinstance(schema, list):
            return self._union(schema, path)
        if not isinstance(schema, dict) or "type" not in schema:
            raise AvroSchemaError(f"{where}: {schema!r} is not an Avro schema")
        if "logicalType" in schema:
            raise AvroSchemaError(f"{where}: the Avro logical type {schema['logicalType']!r} "
                                  "is not supported yet")
        kind = schema["type"]
        if kind == "record":
            return self._record(schema, path)
        if kind == "enum":
            return self._enum(schema, path)
        if kind == "fixed":
            size = schema.get("size")
            if not isinstance(size, int) or size < 0:
                raise AvroSchemaError(f"{where}: a fixed type needs a size")
            node = _Node(Types.PRIMITIVE_ARRAY(Types.BYTE()),
                         lambda out, v: out.extend(_fixed(bytes(v), size)),
                         lambda source: source.take(size))
            self._define(schema, node)
            return node
        if kind == "array":
            return self._array(self.parse(schema.get("items"), f"{path}[]"))
        if kind == "map":
            return self._map(self.parse(schema.get("values"), f"{path}{{}}"))
        return self.parse(kind, path)

    def _record(self, schema: dict[str, Any], path: str) -> _Node:
        fields = schema.get("fields")
        if not isinstance(fields, list) or not fields:
            raise AvroSchemaError(f"{path or 'the schema'}: a record needs fields")
        names, nodes = [], []
        for field in fields:
            if not isinstance(field, dict) or not isinstance(field.get("name"), str):
                raise AvroSchemaError(f"{path or 'the schema'}: each field needs a name")
            names.append(field["name"])
            nodes.append(self.parse(field.get("type"), f"{path}.{field['name']}".lstrip(".")))
        writers, readers = [n.write for n in nodes], [n.read for n in nodes]
        count = len(names)

        def write(out: bytearray, row: Any) -> None:
            if len(row) != count:
                raise ValueError(f"the Avro record {schema.get('name')!r} has {count} fields, "
                                 f"the row {row!r} has {len(row)}")
            for writer, value in zip(writers, row, strict=True):
                writer(out, value)

        def read(source: _Input) -> Row:
            row = Row(*(reader(source) for reader in readers))
            row.set_field_names(names)
            return row

        node = _Node(Types.ROW_NAMED(names, [n.type_info for n in nodes]), write, read)
        self._define(schema, node)
        return node

    def _enum(self, schema: dict[str, Any], path: str) -> _Node:
        symbols = schema.get("symbols")
        if not isinstance(symbols, list) or not symbols:
            raise AvroSchemaError(f"{path or 'the schema'}: an enum needs symbols")
        index = {symbol: i for i, symbol in enumerate(symbols)}

        def write(out: bytearray, value: Any) -> None:
            if value not in index:
                raise ValueError(f"{value!r} is not a symbol of the Avro enum {symbols}")
            _write_long(out, index[value])

        def read(source: _Input) -> str:
            number = source.long()
            if not 0 <= number < len(symbols):
                raise ValueError(f"the Avro enum {symbols} has no symbol {number}")
            return str(symbols[number])

        node = _Node(Types.STRING(), write, read)
        self._define(schema, node)
        return node

    def _define(self, schema: dict[str, Any], node: _Node) -> None:
        """A named type, referred to later by its name or its full name (namespace.name)."""
        name = str(schema.get("name", ""))
        self.named[name] = node
        if schema.get("namespace") and "." not in name:
            self.named[f"{schema['namespace']}.{name}"] = node

    def _union(self, branches: list[Any], path: str) -> _Node:
        others = [b for b in branches if b != "null"]
        if len(branches) != 2 or len(others) != 1:
            raise AvroSchemaError(f"{path or 'the schema'}: only a union of null and one type "
                                  f"is supported, not {branches}")
        node, null_first = self.parse(others[0], path), branches[0] == "null"
        null_index, value_index = (0, 1) if null_first else (1, 0)
        write_value, read_value = node.write, node.read

        def write(out: bytearray, value: Any) -> None:
            if value is None:
                _write_long(out, null_index)
            else:
                _write_long(out, value_index)
                write_value(out, value)

        def read(source: _Input) -> Any:
            branch = source.long()
            if branch not in (0, 1):
                raise ValueError(f"the Avro union {branches} has no branch {branch}")
            return None if branch == null_index else read_value(source)

        return _Node(node.type_info, write, read)

    @staticmethod
    def _array(item: _Node) -> _Node:
        write_item, read_item = item.write, item.read

        def write(out: bytearray, values: Any) -> None:
            if values:
                _write_long(out, len(values))
                for value in values:
                    write_item(out, value)
            _write_long(out, 0)

        def read(source: _Input) -> list[Any]:
            return [read_item(source) for _ in _Counted(source)]

        return _Node(Types.OBJECT_ARRAY(item.type_info), write, read)

    @staticmethod
    def _map(value_node: _Node) -> _Node:
        write_value, read_value = value_node.write, value_node.read

        def write(out: bytearray, mapping: Any) -> None:
            if mapping:
                _write_long(out, len(mapping))
                for key, value in mapping.items():
                    _write_string(out, key)
                    write_value(out, value)
            _write_long(out, 0)

        def read(source: _Input) -> dict[str, Any]:
            return {_read_string(source): read_value(source) for _ in _Counted(source)}

        return _Node(Types.MAP(Types.STRING(), value_node.type_info), write, read)


class _Counted:
    """Avro's blocks of an array's or a map's items: each block's count (a negative one is
    followed by its size in bytes), until a block of none. Iterating yields once per item,
    reading the next block's count when the items before it have been read."""

    def __init__(self, source: _Input) -> None:
        self.source, self.left = source, 0

    def __iter__(self) -> _Counted:
        return self

    def __next__(self) -> None:
        if self.left == 0:
            count = self.source.long()
            if count < 0:
                self.source.long()  # the block's size in bytes
                count = -count
            if count == 0:
                raise StopIteration
            self.left = count
        self.left -= 1


def _fixed(value: bytes, size: int) -> bytes:
    if len(value) != size:
        raise ValueError(f"an Avro fixed of {size} bytes cannot hold {len(value)}")
    return value
