"""Flink's type information as PyFlink declares it (``pyflink.common.typeinfo``): what a program
passes as ``output_type``, ``type_info`` or ``key_type``.

A declared type decides what a record becomes when PyFlink hands it to Java (``convert``) and
how Java prints it (``java_string``). The classes, their reprs and their equality are PyFlink
2.3's: a row type's field names are not part of its equality, so cache by ``type_text``, not
by the type. ``type_text`` and ``parse_type`` give every type one text form for the spec:
``TUPLE<STRING, INT>``, ``ROW<id INT, info STRING>``, ``MAP<STRING, LIST<LONG>>``.
"""

from __future__ import annotations

import calendar
import datetime
import re
import time
from collections.abc import Callable, Sequence
from enum import Enum
from typing import Any, NoReturn

from dataflow_engine.types.instant import Instant
from dataflow_engine.types.row import Row, RowKind


class TypeInformation:
    """The base of all types; a type without conversion hands values to Java as they are."""

    def need_conversion(self) -> bool:
        """Whether ``to_internal_type`` changes values (PyFlink converts only those fields)."""
        return False

    def to_internal_type(self, obj: Any) -> Any:
        """The value as ``from_collection`` hands it to Java."""
        return obj

    def from_internal_type(self, obj: Any) -> Any:
        return obj

    def _key(self) -> tuple[Any, ...]:
        return (type(self).__name__,)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TypeInformation) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


class BasicType(Enum):
    """The basic types, valued by their Java class names (which PyFlink's reprs show)."""

    STRING = "String"
    BYTE = "Byte"
    BOOLEAN = "Boolean"
    SHORT = "Short"
    INT = "Integer"
    LONG = "Long"
    FLOAT = "Float"
    DOUBLE = "Double"
    CHAR = "Char"
    BIG_INT = "BigInteger"
    BIG_DEC = "BigDecimal"
    INSTANT = "Instant"


class BasicTypeInfo(TypeInformation):
    def __init__(self, basic_type: BasicType) -> None:
        self.basic_type = basic_type

    def _key(self) -> tuple[Any, ...]:
        return ("basic", self.basic_type)

    def __repr__(self) -> str:
        return self.basic_type.value


class InstantTypeInfo(BasicTypeInfo):
    """``Types.INSTANT()``: internally microseconds since the epoch, as PyFlink has it."""

    def need_conversion(self) -> bool:
        return True

    def to_internal_type(self, obj: Any) -> Any:
        return obj.to_epoch_milli() * 1000

    def from_internal_type(self, obj: Any) -> Any:
        return Instant.of_epoch_milli(obj // 1000)


class SqlTimeTypeInfo(TypeInformation):
    """The factories of the three java.sql types (which are not its subclasses, as in PyFlink)."""

    @staticmethod
    def DATE() -> DateTypeInfo:
        return DateTypeInfo()

    @staticmethod
    def TIME() -> TimeTypeInfo:
        return TimeTypeInfo()

    @staticmethod
    def TIMESTAMP() -> TimestampTypeInfo:
        return TimestampTypeInfo()


_EPOCH_ORDINAL = datetime.date(1970, 1, 1).toordinal()
#: The local zone's offset at the epoch in microseconds: PyFlink shifts naive times by it.
_LOCAL_OFFSET_MICROS = calendar.timegm(time.localtime(0)) * 10**6


class DateTypeInfo(TypeInformation):
    """``java.sql.Date``; internally days since the epoch."""

    def need_conversion(self) -> bool:
        return True

    def to_internal_type(self, obj: Any) -> Any:
        return None if obj is None else obj.toordinal() - _EPOCH_ORDINAL

    def from_internal_type(self, obj: Any) -> Any:
        return None if obj is None else datetime.date.fromordinal(obj + _EPOCH_ORDINAL)

    def __repr__(self) -> str:
        return "DateTypeInfo"


class TimeTypeInfo(TypeInformation):
    """``java.sql.Time``; internally microseconds of the day, naive times taken as local."""

    def need_conversion(self) -> bool:
        return True

    def to_internal_type(self, obj: Any) -> Any:
        if obj is None:
            return None
        if obj.tzinfo is None:
            shift = _LOCAL_OFFSET_MICROS
        else:
            shift = (obj.utcoffset() or datetime.timedelta()) // datetime.timedelta(microseconds=1)
        seconds = (obj.hour * 60 + obj.minute) * 60 + obj.second
        return seconds * 10**6 + obj.microsecond - shift

    def from_internal_type(self, obj: Any) -> Any:
        if obj is None:
            return None
        seconds, micros = divmod(obj + _LOCAL_OFFSET_MICROS, 10**6)
        minutes, seconds = divmod(seconds, 60)
        hours, minutes = divmod(minutes, 60)
        return datetime.time(hours, minutes, seconds, micros)

    def __repr__(self) -> str:
        return "TimeTypeInfo"


class TimestampTypeInfo(TypeInformation):
    """``java.sql.Timestamp``; internally microseconds since the epoch, naive ones local."""

    def need_conversion(self) -> bool:
        return True

    def to_internal_type(self, obj: Any) -> Any:
        if obj is None:
            return None
        seconds = (calendar.timegm(obj.utctimetuple()) if obj.tzinfo is not None
                   else time.mktime(obj.timetuple()))
        return int(seconds) * 10**6 + obj.microsecond

    def from_internal_type(self, obj: Any) -> Any:
        if obj is None:
            return None
        moment = datetime.datetime.fromtimestamp(obj // 10**6)
        return moment.replace(microsecond=obj % 10**6)

    def __repr__(self) -> str:
        return "TimestampTypeInfo"


_PRIMITIVES = frozenset({BasicType.BOOLEAN, BasicType.BYTE, BasicType.SHORT, BasicType.INT,
                         BasicType.LONG, BasicType.FLOAT, BasicType.DOUBLE, BasicType.CHAR})


def immutable_values(type_info: TypeInformation | None) -> bool:
    """Whether the values of a declared type cannot change (numbers, strings, decimals, times
    and instants), so that Flink's ``serializer.copy`` of one is the value itself and chained
    operators may share it without object reuse. A tuple type does not qualify: a function
    may return a list for one, which the operators chained after it get as it is."""
    return isinstance(type_info, BasicTypeInfo | DateTypeInfo | TimeTypeInfo | TimestampTypeInfo)


def _type(value: object, role: str) -> TypeInformation:
    if not isinstance(value, TypeInformation):
        raise TypeError(f"{role} must be a TypeInformation (Types.INT(), ...), not {value!r}")
    return value


def _element(value: object, allowed: frozenset[BasicType], array: str) -> TypeInformation:
    """Java has these arrays for these elements only (PyFlink fails on others when it builds
    the Java type, which is as soon as a stream is declared with it)."""
    element = _type(value, f"the element type of {array}")
    if type(element) is not BasicTypeInfo or element.basic_type not in allowed:
        names = ", ".join(sorted(kind.name for kind in allowed))
        raise TypeError(f"{array} holds {names}, not {type_text(element)}")
    return element


class _ElementsTypeInfo(TypeInformation):
    """A type of elements of one type (the arrays and lists): equal when of the same kind and
    element type, shown as PyFlink shows them, ``ListTypeInfo<INT>``."""

    element_type: TypeInformation

    def _key(self) -> tuple[Any, ...]:
        return (type(self).__name__, self.element_type)

    def __repr__(self) -> str:
        return f"{type(self).__name__}<{self.element_type!r}>"


class PrimitiveArrayTypeInfo(_ElementsTypeInfo):
    """A Java array of primitives (``int[]``, ``byte[]``...); elements are never null."""

    def __init__(self, element_type: TypeInformation) -> None:
        self.element_type = _element(element_type, _PRIMITIVES, "a primitive array")


class BasicArrayTypeInfo(_ElementsTypeInfo):
    """A Java array of boxed basics (``Integer[]``, ``String[]``...); elements may be null."""

    def __init__(self, element_type: TypeInformation) -> None:
        self.element_type = _element(element_type, _PRIMITIVES | {BasicType.STRING},
                                     "a basic array")


class ObjectArrayTypeInfo(_ElementsTypeInfo):
    """A Java array of any type's objects; elements may be null."""

    def __init__(self, element_type: TypeInformation) -> None:
        self.element_type = _type(element_type, "the element type of an object array")


class PickledBytesTypeInfo(TypeInformation):
    """Any Python object, pickled: what a stream is when no type is declared."""

    def __repr__(self) -> str:
        return "PickledByteArrayTypeInfo"


def _types(values: Sequence[TypeInformation], role: str) -> tuple[TypeInformation, ...]:
    return tuple(_type(value, role) for value in values)


def _fields_to_internal(types: Sequence[TypeInformation], values: Sequence[Any]) -> list[Any]:
    """Only the fields whose type converts are converted; when none does, the values pass
    whole (even beyond the declared fields), as PyFlink passes them."""
    if not any(field_type.need_conversion() for field_type in types):
        return list(values)
    return [field_type.to_internal_type(value) if field_type.need_conversion() else value
            for field_type, value in zip(types, values, strict=False)]


class RowTypeInfo(TypeInformation):
    """Flink's ``Row`` type: field types, and names (Java's ``f0``, ``f1``... when not given)."""

    def __init__(self, field_types: Sequence[TypeInformation],
                 field_names: Sequence[str] | None = None) -> None:
        self.field_types = _types(field_types, "a row's field type")
        self.field_names: tuple[str, ...] | None = None
        if field_names:
            names = tuple(field_names)
            if not all(isinstance(name, str) and name for name in names):
                raise TypeError(f"a row's field names are non-empty str, not {names!r}")
            if len(names) != len(self.field_types):
                raise ValueError(f"a row has as many names as types: {len(names)} names "
                                 f"{list(names)} for {len(self.field_types)} types")
            if len(set(names)) != len(names):
                raise ValueError(f"a row's field names are unique, not {list(names)}")
            self.field_names = names

    def get_field_names(self) -> list[str]:
        if self.field_names is None:
            return [f"f{index}" for index in range(len(self.field_types))]
        return list(self.field_names)

    def get_field_index(self, field_name: str) -> int:
        """The index of a given name; -1 for a row declared without names (as PyFlink)."""
        return -1 if self.field_names is None else self.field_names.index(field_name)

    def get_field_types(self) -> list[TypeInformation]:
        return list(self.field_types)

    def need_conversion(self) -> bool:
        return True

    def to_internal_type(self, obj: Any) -> Any:
        """``(kind, *fields)``: from a Row, a dict or an object by field name, or a sequence."""
        if obj is None:
            return None
        kind = RowKind.INSERT
        if isinstance(obj, Row):
            kind = obj.get_row_kind()
            named = obj.get_field_names() is not None
            values = [obj[name] for name in self.get_field_names()] if named else list(obj)
        elif isinstance(obj, dict):
            values = [obj.get(name) for name in self.get_field_names()]
        elif isinstance(obj, (tuple, list)):
            values = list(obj)
        elif hasattr(obj, "__dict__"):
            values = [vars(obj).get(name) for name in self.get_field_names()]
        else:
            raise ValueError(f"Unexpected tuple {obj!r} with RowTypeInfo")
        return (kind.value, *_fields_to_internal(self.field_types, values))

    def from_internal_type(self, obj: Any) -> Any:
        if obj is None or isinstance(obj, (tuple, list)):
            return obj
        return tuple(_fields_from_internal(self.field_types, obj))

    def _key(self) -> tuple[Any, ...]:
        return ("row", self.field_types)

    def __repr__(self) -> str:
        if self.field_names is None:
            return f"RowTypeInfo({', '.join(map(repr, self.field_types))})"
        return "RowTypeInfo(" + ", ".join(
            f"{name}: {field_type!r}"
            for name, field_type in zip(self.field_names, self.field_types, strict=True)) + ")"


def _fields_from_internal(types: Sequence[TypeInformation], values: Any) -> list[Any]:
    if not any(field_type.need_conversion() for field_type in types):
        return list(values)
    return [field_type.from_internal_type(value) if field_type.need_conversion() else value
            for field_type, value in zip(types, values, strict=False)]


class TupleTypeInfo(TypeInformation):
    """Flink's ``TupleN`` (Python tuples); its fields are never null."""

    def __init__(self, field_types: Sequence[TypeInformation]) -> None:
        self.field_types = _types(field_types, "a tuple's field type")

    def get_field_types(self) -> list[TypeInformation]:
        return list(self.field_types)

    def need_conversion(self) -> bool:
        return True

    def to_internal_type(self, obj: Any) -> Any:
        if obj is None:
            return None
        if not isinstance(obj, (tuple, list, Row)):
            raise ValueError(f"Unexpected tuple {obj!r} with TupleTypeInfo")
        return tuple(_fields_to_internal(self.field_types, list(obj)))

    def from_internal_type(self, obj: Any) -> Any:
        if obj is None or isinstance(obj, (tuple, list)):
            return obj
        return tuple(_fields_from_internal(self.field_types, obj))

    def _key(self) -> tuple[Any, ...]:
        return ("tuple", self.field_types)

    def __repr__(self) -> str:
        return f"TupleTypeInfo({', '.join(map(repr, self.field_types))})"


class ListTypeInfo(_ElementsTypeInfo):
    """A ``java.util.List`` (Python lists); elements may be null."""

    def __init__(self, element_type: TypeInformation) -> None:
        self.element_type = _type(element_type, "the element type of a list")


class MapTypeInfo(TypeInformation):
    """A ``java.util.Map`` (Python dicts); keys are never null, values may be."""

    def __init__(self, key_type: TypeInformation, value_type: TypeInformation) -> None:
        self.key_type = _type(key_type, "a map's key type")
        self.value_type = _type(value_type, "a map's value type")

    def _key(self) -> tuple[Any, ...]:
        return ("map", self.key_type, self.value_type)

    def __repr__(self) -> str:
        return f"MapTypeInfo<{self.key_type!r}, {self.value_type!r}>"


class ExternalTypeInfo(TypeInformation):
    """A Table API type seen from a DataStream (``to_data_stream``): records as the wrapped
    type's, printed as rows are."""

    def __init__(self, type_info: TypeInformation) -> None:
        self.type_info = _type(type_info, "the type an ExternalTypeInfo wraps")

    def _key(self) -> tuple[Any, ...]:
        return ("external", self.type_info)

    def __repr__(self) -> str:
        return f"ExternalTypeInfo<{self.type_info!r}>"


class Types:
    """The factories programs declare types with (``Types.TUPLE([Types.STRING(), ...])``)."""

    @staticmethod
    def STRING() -> TypeInformation:
        return BasicTypeInfo(BasicType.STRING)

    @staticmethod
    def BYTE() -> TypeInformation:
        return BasicTypeInfo(BasicType.BYTE)

    @staticmethod
    def BOOLEAN() -> TypeInformation:
        return BasicTypeInfo(BasicType.BOOLEAN)

    @staticmethod
    def SHORT() -> TypeInformation:
        return BasicTypeInfo(BasicType.SHORT)

    @staticmethod
    def INT() -> TypeInformation:
        return BasicTypeInfo(BasicType.INT)

    @staticmethod
    def LONG() -> TypeInformation:
        return BasicTypeInfo(BasicType.LONG)

    @staticmethod
    def FLOAT() -> TypeInformation:
        return BasicTypeInfo(BasicType.FLOAT)

    @staticmethod
    def DOUBLE() -> TypeInformation:
        return BasicTypeInfo(BasicType.DOUBLE)

    @staticmethod
    def CHAR() -> TypeInformation:
        return BasicTypeInfo(BasicType.CHAR)

    @staticmethod
    def BIG_INT() -> TypeInformation:
        return BasicTypeInfo(BasicType.BIG_INT)

    @staticmethod
    def BIG_DEC() -> TypeInformation:
        return BasicTypeInfo(BasicType.BIG_DEC)

    @staticmethod
    def INSTANT() -> TypeInformation:
        return InstantTypeInfo(BasicType.INSTANT)

    @staticmethod
    def SQL_DATE() -> TypeInformation:
        return DateTypeInfo()

    @staticmethod
    def SQL_TIME() -> TypeInformation:
        return TimeTypeInfo()

    @staticmethod
    def SQL_TIMESTAMP() -> TypeInformation:
        return TimestampTypeInfo()

    @staticmethod
    def PICKLED_BYTE_ARRAY() -> TypeInformation:
        return PickledBytesTypeInfo()

    @staticmethod
    def ROW(field_types: Sequence[TypeInformation]) -> TypeInformation:
        return RowTypeInfo(field_types)

    @staticmethod
    def ROW_NAMED(field_names: Sequence[str],
                  field_types: Sequence[TypeInformation]) -> TypeInformation:
        return RowTypeInfo(field_types, field_names)

    @staticmethod
    def TUPLE(field_types: Sequence[TypeInformation]) -> TypeInformation:
        return TupleTypeInfo(field_types)

    @staticmethod
    def PRIMITIVE_ARRAY(element_type: TypeInformation) -> TypeInformation:
        return PrimitiveArrayTypeInfo(element_type)

    @staticmethod
    def BASIC_ARRAY(element_type: TypeInformation) -> TypeInformation:
        return BasicArrayTypeInfo(element_type)

    @staticmethod
    def OBJECT_ARRAY(element_type: TypeInformation) -> TypeInformation:
        return ObjectArrayTypeInfo(element_type)

    @staticmethod
    def MAP(key_type_info: TypeInformation,
            value_type_info: TypeInformation) -> TypeInformation:
        return MapTypeInfo(key_type_info, value_type_info)

    @staticmethod
    def LIST(element_type_info: TypeInformation) -> TypeInformation:
        return ListTypeInfo(element_type_info)


# The text form ------------------------------------------------------------------------------

_LEAVES: dict[str, Callable[[], TypeInformation]] = {
    **{kind.name: getattr(Types, kind.name) for kind in BasicType},
    "SQL_DATE": Types.SQL_DATE, "SQL_TIME": Types.SQL_TIME,
    "SQL_TIMESTAMP": Types.SQL_TIMESTAMP, "PICKLED_BYTE_ARRAY": Types.PICKLED_BYTE_ARRAY,
}
_LEAF_NAMES = {DateTypeInfo: "SQL_DATE", TimeTypeInfo: "SQL_TIME",
               TimestampTypeInfo: "SQL_TIMESTAMP", PickledBytesTypeInfo: "PICKLED_BYTE_ARRAY"}
_ARRAYS: dict[str, Callable[[TypeInformation], TypeInformation]] = {
    "PRIMITIVE_ARRAY": PrimitiveArrayTypeInfo, "BASIC_ARRAY": BasicArrayTypeInfo,
    "OBJECT_ARRAY": ObjectArrayTypeInfo, "LIST": ListTypeInfo}
_ARRAY_NAMES = {PrimitiveArrayTypeInfo: "PRIMITIVE_ARRAY", BasicArrayTypeInfo: "BASIC_ARRAY",
                ObjectArrayTypeInfo: "OBJECT_ARRAY", ListTypeInfo: "LIST"}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def type_text(type_info: TypeInformation) -> str:
    """The spec's text form of a type; ``parse_type`` reads it back to an equal type."""
    if isinstance(type_info, BasicTypeInfo):
        return type_info.basic_type.name
    if type(type_info) in _LEAF_NAMES:
        return _LEAF_NAMES[type(type_info)]
    match type_info:
        case PrimitiveArrayTypeInfo() | BasicArrayTypeInfo() | ObjectArrayTypeInfo() \
                | ListTypeInfo():
            return f"{_ARRAY_NAMES[type(type_info)]}<{type_text(type_info.element_type)}>"
        case ExternalTypeInfo():
            return f"EXTERNAL<{type_text(type_info.type_info)}>"
        case MapTypeInfo():
            return f"MAP<{type_text(type_info.key_type)}, {type_text(type_info.value_type)}>"
        case TupleTypeInfo():
            return f"TUPLE<{', '.join(map(type_text, type_info.field_types))}>"
        case RowTypeInfo() if type_info.field_names is None:
            return f"ROW<{', '.join(map(type_text, type_info.field_types))}>"
        case RowTypeInfo():
            return "ROW<" + ", ".join(
                f"{_quoted(name)} {type_text(field_type)}"
                for name, field_type in zip(type_info.get_field_names(), type_info.field_types,
                                            strict=True)) + ">"
    raise TypeError(f"{type_info!r} has no text form: it is not one of PyFlink's types")


def _quoted(name: str) -> str:
    return name if _NAME.fullmatch(name) else "`" + name.replace("`", "``") + "`"


def parse_type(text: str) -> TypeInformation:
    """The type a ``type_text`` form names; a ValueError says which part is wrong and where."""
    return _Parser(text).whole()


_TOKEN = re.compile(r"\s*(?:(?P<word>[A-Za-z_][A-Za-z0-9_]*)|(?P<quoted>`(?:[^`]|``)*`)"
                    r"|(?P<mark>[<>,]))")
_Field = tuple[str | None, TypeInformation]


class _Parser:
    """Recursive descent over the tokens of one text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[tuple[str, str, int]] = []  # (kind, token, offset)
        position = 0
        while text[position:].strip():
            match = _TOKEN.match(text, position)
            if match is None or match.lastgroup is None:
                offset = len(text) - len(text[position:].lstrip())
                self.fail(f"unexpected {text[offset]!r}", offset)
            group = match.lastgroup
            self.tokens.append((group, match.group(group), match.start(group)))
            position = match.end()
        self.index = 0

    def fail(self, problem: str, offset: int) -> NoReturn:
        raise ValueError(f"type text {self.text!r}: {problem} at offset {offset}")

    def peek(self, ahead: int = 0) -> tuple[str, str, int]:
        at = self.index + ahead
        return self.tokens[at] if at < len(self.tokens) else ("end", "", len(self.text))

    def at_mark(self, mark: str) -> bool:
        kind, token, _ = self.peek()
        return kind == "mark" and token == mark

    def take(self, mark: str) -> None:
        if not self.at_mark(mark):
            _, token, offset = self.peek()
            self.fail(f"expected {mark!r} but found {_shown(token)}", offset)
        self.index += 1

    def whole(self) -> TypeInformation:
        parsed = self.type()
        kind, token, offset = self.peek()
        if kind != "end":
            self.fail(f"unexpected {token!r} after the type", offset)
        return parsed

    def type(self) -> TypeInformation:
        kind, word, offset = self.peek()
        if kind != "word":
            self.fail(f"expected a type but found {_shown(word)}", offset)
        self.index += 1
        if word in _LEAVES:
            return _LEAVES[word]()
        if word not in (*_ARRAYS, "EXTERNAL", "MAP", "TUPLE", "ROW"):
            self.fail(f"unknown type {word!r}", offset)
        self.take("<")
        fields = self.fields(named=word == "ROW")
        self.take(">")
        try:
            return _built(word, fields)
        except (TypeError, ValueError) as error:
            self.fail(f"{word}: {error}", offset)

    def fields(self, named: bool) -> list[_Field]:
        fields: list[_Field] = []
        while not self.at_mark(">"):
            if fields:
                self.take(",")
            name = self.name() if named else None
            fields.append((name, self.type()))
        return fields

    def name(self) -> str | None:
        """A field's name: quoted, or a word followed by its type's word."""
        kind, token, _ = self.peek()
        if kind == "quoted":
            self.index += 1
            return token[1:-1].replace("``", "`")
        if kind == "word" and self.peek(1)[0] == "word":
            self.index += 1
            return token
        return None


def _shown(token: str) -> str:
    return repr(token) if token else "the end"


def _built(word: str, fields: list[_Field]) -> TypeInformation:
    types = [field_type for _, field_type in fields]
    arity = {"MAP": 2, "EXTERNAL": 1, **dict.fromkeys(_ARRAYS, 1)}.get(word)
    if arity is not None and len(types) != arity:
        raise ValueError(f"takes {arity} type{'s' if arity > 1 else ''}, not {len(types)}")
    if word in _ARRAYS:
        return _ARRAYS[word](types[0])
    if word == "EXTERNAL":
        return ExternalTypeInfo(types[0])
    if word == "MAP":
        return MapTypeInfo(types[0], types[1])
    if word == "TUPLE":
        return TupleTypeInfo(types)
    names = [name for name, _ in fields]
    if None in names and any(name is not None for name in names):
        raise ValueError("a ROW names all its fields or none")
    return RowTypeInfo(types, None if None in names else [str(name) for name in names])
