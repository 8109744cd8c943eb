"""PyFlink's ``pyflink.datastream.formats.json``: rows as JSON objects (the Kafka connectors'
``json`` format), a field per name of the row type (``f0``, ``f1``... for an unnamed one)."""

from __future__ import annotations

from dataflow_engine.api._unsupported import NotSupportedError
from dataflow_engine.api.transformations import declared_type
from dataflow_engine.types.typeinfo import TypeInformation


class JsonRowDeserializationSchema:
    """A JSON object per message, read as a record of the row type (missing fields null)."""

    kafka_format = "json"

    def __init__(self, type_info: TypeInformation) -> None:
        self.record_type = type_info

    @staticmethod
    def builder() -> JsonRowDeserializationSchema.Builder:
        return JsonRowDeserializationSchema.Builder()

    class Builder:
        def __init__(self) -> None:
            self._type_info: TypeInformation | None = None

        def type_info(self, type_info: TypeInformation) -> JsonRowDeserializationSchema.Builder:
            self._type_info = declared_type(type_info, "type_info")
            return self

        def json_schema(self, json_schema: str) -> JsonRowDeserializationSchema.Builder:
            raise NotSupportedError("JsonRowDeserializationSchema: give the row's type with "
                                    "type_info(Types.ROW_NAMED(...)) instead of a JSON schema")

        def fail_on_missing_field(self) -> JsonRowDeserializationSchema.Builder:
            raise NotSupportedError("JsonRowDeserializationSchema: a missing field is null; "
                                    "check for it in a filter() or map()")

        def ignore_parse_errors(self) -> JsonRowDeserializationSchema.Builder:
            raise NotSupportedError("JsonRowDeserializationSchema: a message that is not "
                                    "JSON fails the job")

        def build(self) -> JsonRowDeserializationSchema:
            if self._type_info is None:
                raise ValueError("JsonRowDeserializationSchema needs type_info(...)")
            return JsonRowDeserializationSchema(self._type_info)


class JsonRowSerializationSchema:
    """Each record of the row type as a JSON object."""

    kafka_format = "json"

    def __init__(self, type_info: TypeInformation) -> None:
        self.record_type = type_info

    @staticmethod
    def builder() -> JsonRowSerializationSchema.Builder:
        return JsonRowSerializationSchema.Builder()

    class Builder:
        def __init__(self) -> None:
            self._type_info: TypeInformation | None = None

        def with_type_info(self, type_info: TypeInformation
                           ) -> JsonRowSerializationSchema.Builder:
            self._type_info = declared_type(type_info, "type_info")
            return self

        def build(self) -> JsonRowSerializationSchema:
            if self._type_info is None:
                raise ValueError("JsonRowSerializationSchema needs with_type_info(...)")
            return JsonRowSerializationSchema(self._type_info)


__all__ = ["JsonRowDeserializationSchema", "JsonRowSerializationSchema"]
