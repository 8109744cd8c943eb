"""The broker of ``hack/kafka``, which the Kafka tests and the demo use: a real Apache Kafka
(KRaft) from its Maven Central artifacts, serving transactions and refusing unknown topics."""

from __future__ import annotations

import subprocess
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = pytest.mark.spark

HACK_KAFKA = Path(__file__).resolve().parents[2] / "hack" / "kafka"


def _consume(bootstrap: str, topic: str, isolation: str, expected: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex,
                         "auto.offset.reset": "earliest", "isolation.level": isolation})
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while len(values) < expected and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
        # Nothing more arrives: what was read is all there is.
        extra = consumer.poll(1.0)
        assert extra is None or extra.error() is not None, extra.value()
    finally:
        consumer.close()
    return values


def test_committed_transactions_are_read_and_aborted_ones_are_not(kafka_bootstrap: str
                                                                   ) -> None:
    topic = f"orders-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    for future in admin.create_topics([NewTopic(topic, 3, 1)]).values():
        future.result(timeout=30)
    producer = Producer({"bootstrap.servers": kafka_bootstrap,
                         "transactional.id": f"test-{topic}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(6):
        producer.produce(topic, f"committed-{i}".encode(), key=str(i % 3).encode())
    producer.commit_transaction(30)
    producer.begin_transaction()
    producer.produce(topic, b"aborted")
    producer.flush(30)
    producer.abort_transaction(30)
    committed = _consume(kafka_bootstrap, topic, "read_committed", 6)
    assert sorted(committed) == [f"committed-{i}".encode() for i in range(6)]
    everything = _consume(kafka_bootstrap, topic, "read_uncommitted", 7)
    assert b"aborted" in everything and len(everything) == 7


def test_a_missing_topic_is_an_error_not_created(kafka_bootstrap: str) -> None:
    topic = f"missing-{uuid.uuid4().hex[:8]}"
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": uuid.uuid4().hex,
                         "allow.auto.create.topics": True})
    consumer.subscribe([topic])
    errors = []
    deadline = time.monotonic() + 20
    try:
        while not errors and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is not None:
                errors.append(message.error().code())
    finally:
        consumer.close()
    assert errors == [KafkaError.UNKNOWN_TOPIC_OR_PART]
    topics = AdminClient({"bootstrap.servers": kafka_bootstrap}).list_topics(timeout=10).topics
    assert topic not in topics


def test_up_list_and_down_manage_a_broker_of_its_own() -> None:
    started = subprocess.run([str(HACK_KAFKA), "up"], capture_output=True, text=True,
                             timeout=300, check=True)
    bootstrap = started.stdout.strip().splitlines()[-1]
    listed = subprocess.run([str(HACK_KAFKA), "list"], capture_output=True, text=True,
                            check=True).stdout
    state = Path(next(line.split("\t")[0] for line in listed.splitlines()
                      if line.endswith("\t" + bootstrap)))
    assert (state / "server.properties").is_file()
    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
    assert metadata.brokers and not metadata.topics
    subprocess.run([str(HACK_KAFKA), "down", bootstrap], capture_output=True, check=True)
    assert not state.exists()
    assert bootstrap not in subprocess.run([str(HACK_KAFKA), "list"], capture_output=True,
                                           text=True, check=True).stdout
    refused = subprocess.run([str(HACK_KAFKA), "down", str(Path.home())], capture_output=True,
                             text=True, check=False)
    assert refused.returncode == 1 and "not the state dir" in refused.stderr


def test_topic_create_and_list_make_and_show_a_topic(kafka_bootstrap: str) -> None:
    topic = f"made-{uuid.uuid4().hex[:8]}"
    created = subprocess.run([str(HACK_KAFKA), "topic", "create", topic, "--partitions", "3",
                              "--bootstrap", kafka_bootstrap], capture_output=True, text=True,
                             timeout=60, check=False)
    assert created.returncode == 0, created.stderr
    metadata = AdminClient({"bootstrap.servers": kafka_bootstrap}).list_topics(timeout=10)
    assert len(metadata.topics[topic].partitions) == 3
    listed = subprocess.run([str(HACK_KAFKA), "topic", "list", "--bootstrap", kafka_bootstrap],
                            capture_output=True, text=True, timeout=60, check=True).stdout
    assert f"{topic}\t3" in listed.splitlines()
    assert not [line for line in listed.splitlines() if line.startswith("__")]
    again = subprocess.run([str(HACK_KAFKA), "topic", "create", topic, "--partitions", "1",
                            "--bootstrap", kafka_bootstrap], capture_output=True, text=True,
                           timeout=60, check=False)
    assert again.returncode == 1 and "already exists" in again.stderr, again.stderr
