"""The commit half of an exactly-once Kafka sink (Flink's KafkaCommitter), run by the driver.

Flink's KafkaSink writes into a transaction that a later checkpoint's notification commits,
resuming the producer by id from another process if need be; librdkafka cannot resume a
transaction, and an epoch's task ends with its epoch. So a sink subtask hands its epoch's
records over as a committable instead, and once a checkpoint covering them completed the
driver produces all of that checkpoint's records of the sink in one transaction.

The same transaction commits an offset of the consumer group named like the transactional id:
the checkpoint's id, on partition 0 of every topic the sink wrote to in this run (an upgrade
may change the topic; a committable goes to the topic it was written for). A driver resuming
from a checkpoint publishes its committables again, and the group's offsets say whether that
transaction had already committed; the new driver's ``init_transactions`` first fences the
old one and aborts a transaction it left open.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from dataflow_engine.runtime import secrets
from dataflow_engine.spec.catalog import KafkaSinkArgs
from dataflow_engine.spec.secret_refs import SettingValue

#: Seconds a request to the brokers may take before the commit fails, naming them.
REQUEST_TIMEOUT = 15.0
#: Seconds between asks of a group coordinator that is loading or moving.
_RETRY_PAUSE = 0.5
#: Error codes of a group coordinator that is loading or has moved (KafkaError's).
_COORDINATOR_MOVING = frozenset({14, 15, 16})  # LOAD_IN_PROGRESS, NOT_AVAILABLE, NOT_COORDINATOR

#: ``(key, value, timestamp ms or None)``: one encoded record.
KafkaRecord = tuple[bytes | None, bytes | None, int | None]


class KafkaCommitError(RuntimeError):
    pass


@dataclass(frozen=True, slots=True)
class KafkaCommittable:
    """A sink subtask's encoded records of one epoch."""

    sink: str
    transactional_id: str
    bootstrap_servers: str
    #: As the spec gives them: a Secret's value stays a reference in checkpoints.
    properties: tuple[tuple[str, SettingValue], ...]
    topic: str
    epoch: int
    subtask: int
    records: tuple[KafkaRecord, ...]


def committable_of(sink: str, args: KafkaSinkArgs, epoch: int = 0, subtask: int = 0,
                   records: tuple[KafkaRecord, ...] = ()) -> KafkaCommittable:
    """A committable of the exactly-once sink ``sink`` (without records: its settings)."""
    return KafkaCommittable(sink, str(args.transactional_id_prefix), args.bootstrap_servers,
                            tuple(sorted(args.properties.items())), args.topic, epoch, subtask,
                            records)


def produce_one(producer: Any, topic: str, key: bytes | None, value: bytes | None,
                timestamp: int | None,
                on_delivery: Callable[[Any, Any], None] | None = None) -> None:
    """Queues a record, serving delivery reports while librdkafka's queue is full."""
    while True:
        try:
            producer.produce(topic, value, key, timestamp=max(timestamp or 0, 0),
                             on_delivery=on_delivery)
            return
        except BufferError:
            producer.poll(0.1)


def produce(producer: Any, topic: str, records: Iterable[KafkaRecord]) -> None:
    for key, value, timestamp in records:
        produce_one(producer, topic, key, value, timestamp)


def read_committed(consumer: Any, partitions: list[Any],
                   timeout: float = REQUEST_TIMEOUT) -> list[Any]:
    """The group's committed offsets of ``partitions``. A group coordinator that is loading or
    has moved (as on a broker just started) answers with an error the client may retry, as
    Flink's Kafka client retries it: asked again until ``timeout``, not a failed job."""
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + timeout
    while True:
        try:
            return consumer.committed(partitions, timeout=timeout)  # type: ignore[no-any-return]
        except KafkaException as failure:
            error = failure.args[0]
            passing = error.retriable() or error.code() in _COORDINATOR_MOVING
            if not passing or time.monotonic() >= deadline:
                raise
            time.sleep(_RETRY_PAUSE)


class KafkaCommitter:
    """The driver's transactional producer of one exactly-once sink."""

    def __init__(self, first: KafkaCommittable) -> None:
        """Starts the producer with ``first``'s settings and reads what its topic carries."""
        from confluent_kafka import Consumer, Producer

        self.sink = first.sink
        #: Topics this run wrote to: each carries the published checkpoint's id.
        self.topics: list[str] = []
        self.published = 0
        self.transactional_id = first.transactional_id
        self.bootstrap_servers = first.bootstrap_servers
        common = {**secrets.resolve(dict(first.properties)),
                  "bootstrap.servers": first.bootstrap_servers}
        self.producer = Producer({**common, "transactional.id": first.transactional_id,
                                  "enable.idempotence": True})
        #: Only for the group's metadata and offset: it never subscribes.
        self.consumer = Consumer({**common, "group.id": first.transactional_id,
                                  "enable.auto.commit": False,
                                  "isolation.level": "read_committed"})
        try:
            self.producer.init_transactions(REQUEST_TIMEOUT)
            self._learn_topics([first.topic])
        except Exception as error:
            self.close()
            raise self._fail("cannot start its transactions", error) from error

    def _fail(self, what: str, error: object) -> KafkaCommitError:
        return KafkaCommitError(
            f"kafka sink {self.sink!r} (transactional id {self.transactional_id!r}, "
            f"bootstrapServers {self.bootstrap_servers}) {what}: {error}")

    def _markers(self, topics: list[str], offset: int = -1001) -> list[Any]:
        from confluent_kafka import TopicPartition

        return [TopicPartition(topic, 0, offset) for topic in topics]

    def _learn_topics(self, topics: Iterable[str]) -> None:
        """Reads the id of the last checkpoint published to topics not seen yet (0: none)."""
        new = sorted(set(topics) - set(self.topics))
        if new:
            committed = read_committed(self.consumer, self._markers(new))
            unread = [c for c in committed if c.error is not None]
            if unread:  # taken as "nothing published", it would publish twice
                raise RuntimeError(f"the last published checkpoint of topic "
                                   f"{unread[0].topic!r} cannot be read: {unread[0].error}")
            self.published = max([self.published, *(int(c.offset) for c in committed)])
            self.topics += new

    def commit(self, checkpoint_id: int, committables: list[KafkaCommittable]) -> None:
        """Publishes one checkpoint's records in one transaction, unless they already were."""
        producer = self.producer
        try:
            self._learn_topics(c.topic for c in committables)
            if checkpoint_id <= self.published:
                return
            producer.begin_transaction()
            for committable in sorted(committables, key=lambda c: (c.epoch, c.subtask)):
                produce(producer, committable.topic, committable.records)
            producer.send_offsets_to_transaction(
                self._markers(self.topics, checkpoint_id),
                self.consumer.consumer_group_metadata(), REQUEST_TIMEOUT)
            producer.commit_transaction(REQUEST_TIMEOUT)
        except Exception as error:
            with contextlib.suppress(Exception):
                producer.abort_transaction(REQUEST_TIMEOUT)
            raise self._fail(f"cannot publish checkpoint {checkpoint_id}", error) from error
        self.published = checkpoint_id

    def close(self) -> None:
        self.consumer.close()
        self.producer.flush(REQUEST_TIMEOUT)
