"""PyFlink's ``Types``: accepted wherever PyFlink takes an ``output_type`` or ``type_info``.

Records here are Python objects pickled between tasks, so type information changes nothing
at run time; it is kept only so PyFlink programs run unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TypeInformation:
    name: str
    arguments: tuple[Any, ...] = ()

    def __repr__(self) -> str:
        inner = ", ".join(map(repr, self.arguments))
        return f"{self.name}({inner})" if self.arguments else self.name


def _type(name: str) -> Any:
    def factory(*arguments: Any) -> TypeInformation:
        return TypeInformation(name, tuple(
            tuple(a) if isinstance(a, list) else a for a in arguments))

    factory.__name__ = name
    return staticmethod(factory)


class Types:
    STRING = _type("STRING")
    BYTE = _type("BYTE")
    BOOLEAN = _type("BOOLEAN")
    SHORT = _type("SHORT")
    INT = _type("INT")
    LONG = _type("LONG")
    FLOAT = _type("FLOAT")
    DOUBLE = _type("DOUBLE")
    CHAR = _type("CHAR")
    BIG_INT = _type("BIG_INT")
    BIG_DEC = _type("BIG_DEC")
    INSTANT = _type("INSTANT")
    SQL_DATE = _type("SQL_DATE")
    SQL_TIME = _type("SQL_TIME")
    SQL_TIMESTAMP = _type("SQL_TIMESTAMP")
    PICKLED_BYTE_ARRAY = _type("PICKLED_BYTE_ARRAY")
    ROW = _type("ROW")
    ROW_NAMED = _type("ROW_NAMED")
    TUPLE = _type("TUPLE")
    PRIMITIVE_ARRAY = _type("PRIMITIVE_ARRAY")
    BASIC_ARRAY = _type("BASIC_ARRAY")
    OBJECT_ARRAY = _type("OBJECT_ARRAY")
    MAP = _type("MAP")
    LIST = _type("LIST")
