"""Flink's KafkaSource on epochs: the driver's enumerator decides which offsets of which
partitions each subtask reads in an epoch; the subtask's reader reads exactly those.

Partitions are owned as Flink's KafkaSourceEnumerator assigns them (``getSplitOwner``: by the
topic's Java hash code and the partition number), so a partition always goes to the same
subtask. Each epoch a partition's range runs from where the last epoch stopped to its end
offset at the epoch's start (the last stable offset: uncommitted transactions are never
read, ``isolation.level=read_committed``), so every record is read once, in offset order; the
positions are the source's state in checkpoints. Records keep their Kafka timestamps, for a
``timestamps`` operator without an assigner, and a subtask emits its partitions' records of an
epoch merged by timestamp.
"""

from __future__ import annotations

import collections
import json
import re
import time
import uuid
from collections.abc import Iterator
from typing import Any

from dataflow_engine.runtime import secrets
from dataflow_engine.runtime.state.key_groups import java_hash_code
from dataflow_engine.runtime.streamoperators.stream_operators import SourceOperator
from dataflow_engine.spec.catalog import ROW_FORMATS, KafkaSourceArgs
from dataflow_engine.types.convert import element_converter, needs_conversion
from dataflow_engine.types.csv_form import row_reader
from dataflow_engine.types.typeinfo import RowTypeInfo, TypeInformation

#: ``(topic, partition, first offset, end offset)``: what a subtask reads of one partition.
PartitionRange = tuple[str, int, int, int]
#: Seconds a request to the brokers may take before the source fails, naming them, unless
#: the job's ``socket.timeout.ms`` property (librdkafka's request timeout) says otherwise.
_REQUEST_TIMEOUT = 15.0
#: Records asked of the consumer at once, at most.
_BATCH = 1024


class KafkaSourceError(RuntimeError):
    pass


def split_owner(topic: str, partition: int, parallelism: int) -> int:
    """The subtask that reads a partition (Flink's KafkaSourceEnumerator.getSplitOwner)."""
    start = ((java_hash_code(topic) * 31) & 0x7FFFFFFF) % parallelism
    return (start + partition) % parallelism


def _client_config(args: KafkaSourceArgs, group: str) -> dict[str, Any]:
    return {**secrets.resolve(args.properties), "bootstrap.servers": args.bootstrap_servers,
            "group.id": group, "enable.auto.commit": False, "isolation.level": "read_committed",
            "enable.partition.eof": False}


def request_timeout(args: KafkaSourceArgs) -> float:
    """Seconds each request to the brokers may take: the client's own request timeout when the
    job sets one, so one setting bounds both the client's waits and the source's (a value the
    client does not take is its to refuse, naming the property)."""
    configured = args.properties.get("socket.timeout.ms")
    if isinstance(configured, str) and configured.isdigit():
        return int(configured) / 1000
    return _REQUEST_TIMEOUT


def _decoder(kind: str | None) -> Any:
    if kind == "text":
        return lambda data: None if data is None else data.decode("utf-8", "replace")
    if kind == "json":
        return lambda data: None if data is None else json.loads(data)
    return lambda data: data


def _row_decoder(args: KafkaSourceArgs, record_type: TypeInformation | None) -> Any:
    """A message of a row format read as a row: a csv line of the declared type (the graph
    checked it is a row), or an Avro datum of the schema's."""
    if args.value_format == "avro":
        read_datum = args.avro().read
        return lambda data: None if data is None else read_datum(data)
    assert isinstance(record_type, RowTypeInfo)
    read = row_reader(record_type, args.csv_options())
    return lambda data: None if data is None else read(data.decode("utf-8"))


def _typed(decode: Any, record_type: TypeInformation | None) -> Any:
    """Decoded values made records of the declared type: a JSON object becomes a Row by the
    type's field names, as PyFlink's JsonRowDeserializationSchema reads it."""
    if not needs_conversion(record_type):
        return decode
    shape = element_converter(record_type)

    def typed(data: Any) -> Any:
        value = decode(data)
        return None if value is None else shape(value)

    return typed


class KafkaEnumerator:
    """The driver's side: discovers partitions and assigns each epoch's offset ranges."""

    def __init__(self, parallelism: int, args: KafkaSourceArgs, source: str) -> None:
        from confluent_kafka import Consumer

        self.parallelism = parallelism
        self.args = args
        self.source = source
        self.timeout = request_timeout(args)
        self.consumer = Consumer(_client_config(
            args, args.group_id or f"dataflow-enumerator-{uuid.uuid4().hex[:12]}"))
        #: (topic, partition) -> the next offset to assign.
        self.positions: dict[tuple[str, int], int] = {}
        #: Bounded: where each partition stops (fixed when it is first seen).
        self.stopping: dict[tuple[str, int], int] = {}
        #: (topic, partition) -> records that waited for the latest epoch when it started
        #: (its end offset then, less what earlier epochs had read): Flink's pendingRecords.
        self.lag: dict[tuple[str, int], int] = {}
        self._pattern = re.compile(args.topic_pattern) if args.topic_pattern else None

    def _fail(self, what: str, error: object) -> KafkaSourceError:
        return KafkaSourceError(f"kafka source {self.source!r}: {what} "
                                f"(bootstrapServers {self.args.bootstrap_servers}): {error}")

    def _partitions(self) -> list[tuple[str, int]]:
        try:
            metadata = self.consumer.list_topics(timeout=self.timeout)
        except Exception as error:
            raise self._fail("the brokers cannot be reached", error) from error
        if self.args.topics is not None:
            missing = [t for t in self.args.topics if t not in metadata.topics
                       or metadata.topics[t].error is not None]
            if missing:
                raise self._fail(f"topic {missing[0]!r} does not exist", "unknown topic")
            names = list(self.args.topics)
        else:
            assert self._pattern is not None
            names = sorted(t for t in metadata.topics if self._pattern.fullmatch(t)
                           and not t.startswith("__"))
        return [(topic, partition) for topic in names
                for partition in sorted(metadata.topics[topic].partitions)]

    def _end(self, topic: str, partition: int) -> tuple[int, int]:
        from confluent_kafka import TopicPartition

        try:
            low, high = self.consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=self.timeout, cached=False)
        except Exception as error:
            raise self._fail(f"offsets of {topic}-{partition} cannot be read", error) from error
        return int(low), int(high)

    def _starting_offset(self, topic: str, partition: int, low: int, high: int) -> int:
        from confluent_kafka import TopicPartition

        mode = self.args.starting_offsets
        if mode == "latest":
            return high
        if mode == "timestamp":
            assert self.args.starting_timestamp is not None
            found = self.consumer.offsets_for_times(
                [TopicPartition(topic, partition, self.args.starting_timestamp)],
                timeout=self.timeout)
            offset = found[0].offset
            return high if offset < 0 else int(offset)
        if mode == "committed":
            committed = self.consumer.committed([TopicPartition(topic, partition)],
                                                timeout=self.timeout)
            offset = committed[0].offset
            return int(offset) if offset >= 0 else low
        return low

    def next_splits(self, now: float) -> tuple[Any, ...]:
        splits: list[list[PartitionRange]] = [[] for _ in range(self.parallelism)]
        for topic, partition in self._partitions():
            key = (topic, partition)
            low, high = self._end(topic, partition)
            if key not in self.positions:
                self.positions[key] = self._starting_offset(topic, partition, low, high)
            if self.args.stopping_offsets is not None:
                high = min(high, self.stopping.setdefault(key, high))
            start = max(self.positions[key], low)  # records deleted by retention are gone
            self.lag[key] = max(high - start, 0)
            # A partition without new records stays in its subtask's split (empty): its
            # watermark holds the subtask's back until it is idle, as in Flink. A bounded
            # partition read to its end leaves.
            if high > start or self.args.stopping_offsets is None:
                owner = split_owner(topic, partition, self.parallelism)
                splits[owner].append((topic, partition, start, max(high, start)))
                self.positions[key] = max(high, start)
        return tuple(tuple(ranges) for ranges in splits)

    @property
    def finished(self) -> bool:
        return (self.args.stopping_offsets is not None and bool(self.stopping)
                and all(self.positions.get(k, 0) >= end for k, end in self.stopping.items()))

    def position(self) -> Any:
        return {"positions": [[t, p, o] for (t, p), o in sorted(self.positions.items())],
                "stopping": [[t, p, o] for (t, p), o in sorted(self.stopping.items())]}

    def restore(self, position: Any) -> None:
        self.positions = {(t, p): o for t, p, o in position["positions"]}
        self.stopping = {(t, p): o for t, p, o in position["stopping"]}

    def close(self) -> None:
        self.consumer.close()


class KafkaSource(SourceOperator):
    """Reads the offset ranges of its split; each record carries its Kafka timestamp."""

    def open(self) -> None:
        super().open()
        self.args = KafkaSourceArgs.model_validate(self.config.args)
        self.timeout = request_timeout(self.args)
        self._key = _decoder(self.args.key_format) if self.args.key_format else None
        record_type = self.config.output_type
        self._value = _typed(_row_decoder(self.args, record_type)
                             if self.args.value_format in ROW_FORMATS
                             else _decoder(self.args.value_format), record_type)

    def emits_fresh_records(self) -> bool:
        """Each key and value is decoded anew from the fetched bytes."""
        return True

    def records(self) -> Iterator[Any]:
        ranges: tuple[PartitionRange, ...] = self.split() or ()
        splits = self.time.source_splits
        if splits is not None:  # every partition the subtask owns, with records or not
            splits.assigned = frozenset((t, p) for t, p, _, _ in ranges)
        ranges = tuple(r for r in ranges if r[2] < r[3])
        if not ranges:
            return
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer(_client_config(self.args, f"dataflow-reader-{uuid.uuid4().hex[:12]}"))
        try:
            consumer.assign([TopicPartition(t, p, start) for t, p, start, _ in ranges])
            yield from self._read(consumer, {(t, p): end for t, p, _, end in ranges})
        finally:
            consumer.close()

    def _read(self, consumer: Any, ends: dict[tuple[str, int], int]) -> Iterator[Any]:
        """The ranges' records, merged across partitions by timestamp, each naming its
        partition to the watermarks made per partition (SourceSplits)."""
        from confluent_kafka import TopicPartition

        cell, key_of, value_of = self.time.timestamp, self._key, self._value
        splits = self.time.source_splits
        queues: dict[tuple[str, int], collections.deque[Any]] = {
            tp: collections.deque() for tp in ends}
        deadline = time.monotonic() + self.timeout
        # Asks for no more records than the ranges hold: consume() waits its whole timeout for
        # as many as it is asked for (an epoch of a slow topic would wait it out every time).
        wanted = _BATCH
        while queues:
            messages = consumer.consume(num_messages=wanted, timeout=0.1) if ends else []
            for message in messages:
                error = message.error()
                if error is not None:
                    raise KafkaSourceError(f"reading {message.topic()}-{message.partition()}"
                                           f": {error}")
                tp = (message.topic(), message.partition())
                end = ends.get(tp)
                if end is not None and message.offset() < end:
                    queues[tp].append(message)
            if messages:
                deadline = time.monotonic() + self.timeout
            # A range may end in transaction markers, which are never delivered: a partition
            # is read once the consumer's position passed its end.
            if ends:
                left = 0
                for position in consumer.position([TopicPartition(t, p) for t, p in ends]):
                    end = ends[(position.topic, position.partition)]
                    if position.offset >= end:
                        del ends[(position.topic, position.partition)]
                    else:  # a position not known yet (negative) may need the whole batch
                        left += end - position.offset if position.offset >= 0 else _BATCH
                wanted = max(1, min(_BATCH, left))
            for tp in [tp for tp, queue in queues.items() if not queue and tp not in ends]:
                del queues[tp]  # read to its end
            # Emit while every partition still being read has a record waiting (so every
            # queue left is non-empty).
            while queues and all(queue or tp not in ends for tp, queue in queues.items()):
                _, tp = min((queue[0].timestamp()[1], tp) for tp, queue in queues.items())
                queue = queues[tp]
                message = queue.popleft()
                if not queue and tp not in ends:
                    del queues[tp]
                cell.value = message.timestamp()[1]
                if splits is not None:
                    splits.current = tp
                value = value_of(message.value())
                yield (key_of(message.key()), value) if key_of is not None else value
            if ends and time.monotonic() > deadline:
                raise KafkaSourceError(
                    f"no records for {self.timeout:g} s from "
                    f"{', '.join(f'{t}-{p}' for t, p in ends)} "
                    f"(bootstrapServers {self.args.bootstrap_servers})")
