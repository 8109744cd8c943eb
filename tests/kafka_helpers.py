"""Kafka helpers of the spark and node tiers: topics, a background producer of clicks whose
expected windows are known, a job that windows them, and a read_committed reader."""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from hack_servers import HACK, hack_server

#: Bootstrap servers of a broker the tests use instead of starting one.
KAFKA_ENV = "DATAFLOW_TEST_KAFKA_BOOTSTRAP"
WINDOW_MS = 1000
PAGES = 5


def new_topic(bootstrap: str, partitions: int = 3) -> str:
    topic = f"clicks-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(timeout=30)
    return topic


def fresh_topic(bootstrap: str, topic: str, partitions: int = 1) -> None:
    """The topic, empty: made again when it exists (a program names its own topics)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    if topic in admin.list_topics(timeout=15).topics:
        for future in admin.delete_topics([topic]).values():
            future.result(timeout=30)
        deadline = time.monotonic() + 30
        while topic in admin.list_topics(timeout=15).topics and time.monotonic() < deadline:
            time.sleep(0.2)
    for _ in range(50):  # a topic being deleted refuses to be made for a moment
        try:
            for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
                future.result(timeout=30)
            return
        except KafkaException as error:
            if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
            time.sleep(0.2)
    raise AssertionError(f"topic {topic} could not be made again")


def produce_clicks(bootstrap: str, topic: str, first: int, count: int, base: int) -> None:
    """Click ``i`` is ``{"page": i % PAGES, "n": i % 3 + 1}`` at ``base + i`` ms."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for i in range(first, first + count):
        producer.produce(topic, json.dumps({"page": i % PAGES, "n": i % 3 + 1}).encode(),
                         key=str(i).encode(), timestamp=base + i)
    assert producer.flush(30) == 0


class ClickProducer:
    """Produces clicks in the background, ``batch`` every 0.2 s up to ``limit``, until the
    ``with`` block ends; :attr:`produced` counts them."""

    def __init__(self, bootstrap: str, topic: str, base: int, batch: int, limit: int) -> None:
        self.produced = 0
        self._stop = threading.Event()

        def keep_producing() -> None:
            while not self._stop.is_set() and self.produced < limit:
                produce_clicks(bootstrap, topic, self.produced, batch, base)
                self.produced += batch
                time.sleep(0.2)

        self._thread = threading.Thread(target=keep_producing)

    def __enter__(self) -> ClickProducer:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def expected_clicks(count: int, base: int) -> list[tuple[Any, ...]]:
    """Per page and 1 s window of the clicks' timestamps: (page, last timestamp, total)."""
    sums: dict[tuple[int, int], list[int]] = defaultdict(lambda: [0, 0])
    for i in range(count):
        entry = sums[(i % PAGES, (base + i) // WINDOW_MS)]
        entry[0] += i % 3 + 1
        entry[1] = max(entry[1], base + i)
    return sorted((page, last, total) for (page, _), (total, last) in sums.items())


def clicks_job(bootstrap: str, topic: str, sink: dict[str, Any], *, bounded: bool,
               mode: str = "STREAMING", checkpointing: dict[str, Any] | None = None,
               functions: str = "spark_fns") -> dict[str, Any]:
    """Kafka clicks -> (page, timestamp, n) -> per page, 1 s tumbling event-time window sums
    -> ``sink``; ``functions`` names the module with ``page_clicks`` and ``add_page_clicks``."""
    args: dict[str, Any] = {"bootstrapServers": bootstrap, "topics": [topic],
                            "valueFormat": "json"}
    if bounded:
        args["stoppingOffsets"] = "latest"
    spec: dict[str, Any] = {
        "parallelism": 2, "runtimeMode": mode, "epochInterval": "300ms",
        "pipeline": [
            {"name": "clicks", "type": "kafka", "args": args},
            # No assigner: the records' own Kafka timestamps are their event time.
            {"name": "stamped", "type": "timestamps", "inputs": ["clicks"],
             "watermarkStrategy": {"type": "forBoundedOutOfOrderness",
                                   "maxOutOfOrderness": "5s"}},
            {"name": "pages", "type": "process", "function": f"{functions}:page_clicks",
             "inputs": ["stamped"]},
            {"name": "sums", "type": "window", "function": f"{functions}:add_page_clicks",
             "inputs": [{"from": "pages", "keyBy": 0}],
             "window": {"assigner": {"type": "tumbling", "time": "event",
                                     "size": f"{WINDOW_MS}ms"}, "kind": "reduce"}},
            {"name": "out", "inputs": ["sums"], **sink}]}
    if checkpointing is not None:
        spec["checkpointing"] = checkpointing
    return spec


def read_topic(bootstrap: str, topic: str, *, committed: bool = True) -> list[Any]:
    """Every record of the topic, as ``(key, value, timestamp)``; with ``committed``, as a
    read_committed consumer sees them."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"t-{uuid.uuid4().hex}",
                         "enable.auto.commit": False, "enable.partition.eof": False,
                         "isolation.level": "read_committed" if committed
                         else "read_uncommitted"})
    try:
        partitions = consumer.list_topics(topic, timeout=15).topics[topic].partitions
        ends = {}
        for partition in partitions:
            _, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), 15)
            if high > 0:
                ends[partition] = high
        consumer.assign([TopicPartition(topic, p, 0) for p in ends])
        records: list[Any] = []
        deadline = time.monotonic() + 60
        while ends and time.monotonic() < deadline:
            for message in consumer.consume(1000, timeout=0.5):
                assert message.error() is None, message.error()
                records.append((message.key(), message.value(), message.timestamp()[1]))
            for position in consumer.position([TopicPartition(topic, p) for p in ends]):
                if position.offset >= ends[position.partition]:
                    del ends[position.partition]
        assert not ends, f"partitions {sorted(ends)} of {topic} were not read to their end"
        return records
    finally:
        consumer.close()


class OutputGrows:
    """True once the topic's end offsets passed those of the first call. Polled in a tight
    loop, so it asks the brokers through one consumer of its own (made at the first call,
    closed once the topic grew) rather than a new client per call, which starved the driver
    being watched of CPU on a busy machine."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.bootstrap, self.topic = bootstrap, topic
        self.start: int | None = None
        self._consumer: Any = None

    def __call__(self) -> bool:
        if self._consumer is None:
            self._consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "unused"})
        partitions = self._consumer.list_topics(self.topic, timeout=15).topics[self.topic]
        end = sum(self._consumer.get_watermark_offsets(TopicPartition(self.topic, p), 15,
                                                       cached=False)[1]
                  for p in partitions.partitions)
        if self.start is None:
            self.start = end
        if end <= self.start:
            return False
        self._consumer.close()
        self._consumer = None
        return True


def kafka_broker(host: str = "127.0.0.1") -> contextlib.AbstractContextManager[str]:
    """A broker of ``hack/kafka up --host HOST`` (its bootstrap servers), stopped afterwards."""
    return hack_server("kafka", "--host", host)


def produce_watermark_pushers(bootstrap: str, topic: str, timestamp: int) -> None:
    """One record on every partition at ``timestamp``, of a page no click has: it moves every
    partition's watermark past the clicks' windows, and its own window stays open."""
    producer = Producer({"bootstrap.servers": bootstrap})
    partitions = producer.list_topics(topic, timeout=15).topics[topic].partitions
    for partition in partitions:
        producer.produce(topic, json.dumps({"page": PAGES, "n": 1}).encode(),
                         partition=partition, timestamp=timestamp)
    assert producer.flush(30) == 0


def sasl_listener(bootstrap: str) -> dict[str, str]:
    """The SASL_PLAINTEXT listener (mechanism PLAIN) of the ``hack/kafka`` broker serving
    ``bootstrap``: its bootstrap servers, ``username`` and ``password``."""
    found = subprocess.run([str(HACK / "kafka"), "sasl", bootstrap], capture_output=True,
                           text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert found.returncode == 0, f"hack/kafka sasl {bootstrap}: {found.stderr}"
    listener: dict[str, str] = json.loads(found.stdout)
    listener["password"] = Path(listener.pop("passwordFile")).read_text()
    return listener


def sasl_properties(listener: dict[str, str], password: Any) -> dict[str, Any]:
    """Kafka client properties that log in to ``listener`` with ``password`` (a value, or a
    secretKeyRef)."""
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": listener["username"], "sasl.password": password}


class RateProducer:
    """Produces ``{"id": i, "k": i % keys}`` (Kafka key ``i``, so spread over the partitions)
    for ids 0, 1, ... in the background at :attr:`rate` records per second, which may change
    while it runs, until the ``with`` block ends; :attr:`produced` counts the records sent and
    every one is acknowledged when the block ends."""

    def __init__(self, bootstrap: str, topic: str, rate: float, keys: int) -> None:
        self.rate = rate
        self.produced = 0
        self._producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                                   "linger.ms": 20})
        self._stop = threading.Event()

        def keep_producing() -> None:
            due, last = 0.0, time.monotonic()
            while not self._stop.wait(0.05):
                now = time.monotonic()
                due, last = due + self.rate * (now - last), now
                while self.produced < int(due):
                    i = self.produced
                    self._producer.produce(topic, json.dumps({"id": i, "k": i % keys}).encode(),
                                           key=str(i).encode())
                    self.produced += 1
                self._producer.poll(0)

        self._thread = threading.Thread(target=keep_producing, daemon=True)

    def __enter__(self) -> RateProducer:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        assert self._producer.flush(30) == 0
