"""Flink's KafkaSink: the writer half, in the sink's subtasks.

With ``none`` and ``at-least-once`` a subtask produces its records as they come. At the end
of its epoch (or input) it flushes them: ``at-least-once`` fails the attempt unless every
record was acknowledged, so an epoch, and with it a checkpoint, completes only after its
records are in Kafka (Flink flushes on the checkpoint barrier); ``none`` ignores what was
lost. With ``exactly-once`` the subtask produces nothing: it encodes its epoch's records and
hands them to the driver as a committable, published in a transaction once a checkpoint
covering the epoch completed (see :mod:`~dataflow_engine.runtime.checkpoint.kafka_commit`).

Records carry their timestamp (Flink's KafkaRecordSerializationSchema sets the element's), and
Kafka's own partitioner places them: by key hash, else sticky.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from dataflow_engine.runtime import secrets
from dataflow_engine.runtime.checkpoint.committer import Committable
from dataflow_engine.runtime.checkpoint.kafka_commit import (
    REQUEST_TIMEOUT,
    KafkaRecord,
    committable_of,
    produce_one,
)
from dataflow_engine.runtime.streamoperators.stream_operators import StreamOperator
from dataflow_engine.spec.catalog import KafkaFormat, KafkaSinkArgs
from dataflow_engine.types.convert import converter, needs_conversion
from dataflow_engine.types.csv_form import row_writer
from dataflow_engine.types.json_form import to_json
from dataflow_engine.types.typeinfo import RowTypeInfo, TypeInformation

#: JSON as Flink's Jackson writes it: no spaces between tokens, non-ASCII as itself.
_COMPACT_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def _encoder(kind: KafkaFormat, record_type: TypeInformation | None = None,
             args: KafkaSinkArgs | None = None) -> Callable[[Any], bytes | None]:
    def raw(value: Any) -> bytes | None:
        if value is None or isinstance(value, bytes):
            return value
        if isinstance(value, bytearray | memoryview):
            return bytes(value)
        if isinstance(value, str):
            return value.encode("utf-8")
        raise TypeError(f"format raw writes bytes or str, not {type(value).__name__}")

    if kind == "text":
        return lambda value: None if value is None else str(value).encode("utf-8")
    if kind == "json":
        encode, form = _COMPACT_JSON.encode, _json_form(record_type)
        return lambda value: None if value is None else encode(form(value)).encode("utf-8")
    if kind == "csv":  # the graph checked that the records are rows
        assert isinstance(record_type, RowTypeInfo) and args is not None
        convert, write = converter(record_type), row_writer(record_type, args.csv_options())
        return lambda value: None if value is None else write(convert(value)).encode("utf-8")
    if kind == "avro":  # rows (the graph checked), by position as the schema's fields
        assert args is not None
        convert, write_datum = converter(record_type), args.avro().write
        return lambda value: None if value is None else write_datum(convert(value))
    return raw


def _json_form(record_type: TypeInformation | None) -> Callable[[Any], Any]:
    """What a record of the declared type is in JSON: a row an object by its type's field
    names (PyFlink's JsonRowSerializationSchema), any other typed value its JSON form; an
    untyped record itself."""
    if not needs_conversion(record_type):
        return lambda value: value
    assert record_type is not None
    convert = converter(record_type)
    if not isinstance(record_type, RowTypeInfo):
        return lambda value: to_json(convert(value), record_type)
    fields = list(zip(record_type.get_field_names(), record_type.field_types, strict=True))
    return lambda value: {name: to_json(item, field) for (name, field), item
                          in zip(fields, convert(value), strict=True)}


def _value_type(args: KafkaSinkArgs, input_type: TypeInformation | None
                ) -> TypeInformation | None:
    """The declared type of what the sink writes as a message's value, if any."""
    if args.value_field is not None:
        fields = input_type.field_types if isinstance(input_type, RowTypeInfo) else ()
        return fields[args.value_field] if args.value_field < len(fields) else None
    if args.key_format is not None and args.key_field is None:
        return None  # the value of a (key, value) pair
    return input_type


def _splitter(args: KafkaSinkArgs) -> Callable[[Any], tuple[Any, Any]]:
    """A record's key and value: fields of a row (Flink's RowFieldExtractorSchema), a
    (key, value) pair's halves, or no key and the record."""
    if args.row_fields:
        key_field, value_field = args.key_field, args.value_field

        def fields(record: Any) -> tuple[Any, Any]:
            try:
                return (None if key_field is None else record[key_field],
                        record if value_field is None else record[value_field])
            except (IndexError, KeyError, TypeError):
                raise TypeError(f"keyField {key_field} / valueField {value_field}: the record "
                                f"{record!r} is not a row with those fields") from None

        return fields
    if args.key_format is None:
        return lambda record: (None, record)

    def pair(record: Any) -> tuple[Any, Any]:
        if not isinstance(record, tuple | list) or len(record) != 2:
            raise TypeError("with keyFormat, records are (key, value) pairs, not "
                            f"{type(record).__name__}")
        return record[0], record[1]

    return pair


class KafkaSinkOperator(StreamOperator):
    def open(self) -> None:
        args = self.args = KafkaSinkArgs.model_validate(self.config.args)
        if args.delivery_guarantee == "exactly-once" and self.task.epoch is None:
            raise self.failure(RuntimeError(  # validation refuses it: a safety net
                "deliveryGuarantee exactly-once publishes on checkpoints, and this run "
                "takes none"))
        encode_key = _encoder(args.key_format) if args.key_format else None
        encode_value = _encoder(args.value_format, _value_type(args, self.config.input_type),
                                args)
        split = _splitter(args)
        cell, counter, failure = self.time.timestamp, self.records_in, self.failure
        self.staged: list[KafkaRecord] = []
        self._pending: tuple[Committable, ...] = ()
        #: The checkpoint whose transaction the staged records are.
        self.epoch = self.task.epoch
        self.producer: Any = None
        self.failed: list[str] = []
        if args.delivery_guarantee != "exactly-once":
            from confluent_kafka import Producer

            acknowledged = {"acks": "all"} if args.delivery_guarantee == "at-least-once" else {}
            self.producer = Producer({**secrets.resolve(args.properties), **acknowledged,
                                      "bootstrap.servers": args.bootstrap_servers})
        stage, producer, topic = self.staged.append, self.producer, args.topic
        failed = self.failed

        def report(error: Any, _message: Any) -> None:
            if error is not None:
                failed.append(str(error))

        def process_element(value: Any) -> None:
            counter.count += 1
            try:
                key_part, value_part = split(value)
                key = None if encode_key is None else encode_key(key_part)
                encoded = encode_value(value_part)
            except Exception as error:
                raise failure(error) from error
            if producer is None:
                stage((key, encoded, cell.value))
            else:
                produce_one(producer, topic, key, encoded, cell.value, report)

        self.process_element = process_element

    def finish(self) -> None:
        self._end_epoch()

    def prepare_snapshot_pre_barrier(self) -> None:
        self._end_epoch()

    def _end_epoch(self) -> None:
        args = self.args
        if self.producer is None:
            if self.staged:
                assert self.epoch is not None
                self._pending = (committable_of(self.name, args, self.epoch,
                                                self.task.subtask_index, tuple(self.staged)),)
            return
        unsent = self.producer.flush(REQUEST_TIMEOUT)
        if args.delivery_guarantee == "at-least-once" and (unsent or self.failed):
            problem = self.failed[0] if self.failed else f"{unsent} records unacknowledged"
            raise self.failure(RuntimeError(
                f"records for topic {args.topic!r} were not acknowledged (bootstrapServers "
                f"{args.bootstrap_servers}): {problem}"))

    def committables(self) -> tuple[Committable, ...]:
        return self._pending

    def roll_over(self, checkpoint_id: int) -> None:
        self.epoch = checkpoint_id
        self.staged.clear()  # its records went with the committable
        self._pending = ()
