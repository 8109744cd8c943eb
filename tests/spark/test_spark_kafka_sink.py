"""The kafka sink on a real broker (``hack/kafka``): exactly once end to end (Kafka in, keyed
windows, Kafka out read with read_committed) while the driver is killed twice; at least once
in a BATCH job, with the records' timestamps; and the committer's transactions: fenced, and
never published twice for one checkpoint."""

from __future__ import annotations

import json
import random
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from test_spark_continuous import dataflow_run, run_then_kill, write_job

from conftest import RunJob
from dataflow_engine.graph.states import JobStatus
from dataflow_engine.runtime.checkpoint.kafka_commit import KafkaCommittable, KafkaCommitter
from kafka_helpers import (
    ClickProducer,
    OutputGrows,
    clicks_job,
    expected_clicks,
    new_topic,
    produce_clicks,
    read_topic,
)

pytestmark = pytest.mark.spark


def _windows(records: list[Any]) -> list[tuple[Any, ...]]:
    return sorted(tuple(json.loads(value)) for _, value, _ in records)


def test_exactly_once_from_kafka_to_kafka_while_the_driver_is_killed_twice(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    """Clicks keep arriving while the driver is killed twice, once as records reach the
    output topic and once at a random moment; given an end at last, a read_committed consumer
    of the output topic sees every window of every click exactly once."""
    source, output = new_topic(kafka_bootstrap), new_topic(kafka_bootstrap, partitions=2)
    base = int(time.time() * 1000) - 600_000
    storage, job = tmp_path / "checkpoints", tmp_path / "job.yaml"
    sink = {"type": "kafka_sink", "args": {
        "bootstrapServers": kafka_bootstrap, "topic": output, "valueFormat": "json",
        "deliveryGuarantee": "exactly-once",
        "transactionalIdPrefix": f"test-{uuid.uuid4().hex[:8]}"}}
    checkpointing = {"interval": "300ms", "storage": str(storage)}
    write_job(job, clicks_job(kafka_bootstrap, source, sink, bounded=False,
                              checkpointing=checkpointing))
    delays = random.Random(7)
    with ClickProducer(kafka_bootstrap, source, base, 500, 40_000) as clicks:
        for kill in range(2):
            # The first kill comes as records reach the output topic: a transaction being
            # written or just committed, its checkpoint's marker the only guard.
            when = OutputGrows(kafka_bootstrap, output) if kill == 0 else None
            run_then_kill(job, tmp_path / f"status-{kill}.json", storage,
                          delays.uniform(0.0, 0.05 if when else 0.8), when)
    assert read_topic(kafka_bootstrap, output)  # published before the kills, and kept

    write_job(job, clicks_job(kafka_bootstrap, source, sink, bounded=True,
                              checkpointing=checkpointing))
    process = dataflow_run(job, tmp_path / "status-final.json")
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr.decode()[-3000:]
    assert _windows(read_topic(kafka_bootstrap, output)) == expected_clicks(clicks.produced, base)


def test_at_least_once_in_a_batch_job_keeps_keys_and_timestamps(
        run: RunJob, kafka_bootstrap: str) -> None:
    source, output = new_topic(kafka_bootstrap), new_topic(kafka_bootstrap)
    base = int(time.time() * 1000) - 60_000
    produce_clicks(kafka_bootstrap, source, 0, 3000, base)
    spec = {
        "parallelism": 2, "runtimeMode": "BATCH",
        "pipeline": [
            {"name": "clicks", "type": "kafka", "args": {
                "bootstrapServers": kafka_bootstrap, "topics": [source], "keyFormat": "text",
                "valueFormat": "json", "stoppingOffsets": "latest"}},
            {"name": "pages", "type": "map", "function": "spark_fns:page_of_click",
             "inputs": ["clicks"]},
            {"name": "out", "type": "kafka_sink", "inputs": ["pages"], "args": {
                "bootstrapServers": kafka_bootstrap, "topic": output, "keyFormat": "text",
                "valueFormat": "text", "deliveryGuarantee": "at-least-once"}}]}
    result = run(spec)
    assert result.job_status is JobStatus.FINISHED, result.error
    records = read_topic(kafka_bootstrap, output)
    assert sorted(records) == sorted((str(i).encode(), str(i % 5).encode(), base + i)
                                     for i in range(3000))


def _committable(bootstrap: str, topic: str, transactional_id: str, epoch: int,
                 values: range) -> KafkaCommittable:
    return KafkaCommittable("out", transactional_id, bootstrap, (), topic, epoch, 0,
                            tuple((None, str(v).encode(), None) for v in values))


def test_a_checkpoint_is_published_once_and_a_new_driver_fences_the_old(
        kafka_bootstrap: str) -> None:
    topic, transactional_id = new_topic(kafka_bootstrap, 1), f"test-{uuid.uuid4().hex[:8]}"
    first = KafkaCommitter(_committable(kafka_bootstrap, topic, transactional_id, 1, range(0)))
    first.commit(3, [_committable(kafka_bootstrap, topic, transactional_id, 2, range(0, 5)),
                     _committable(kafka_bootstrap, topic, transactional_id, 3, range(5, 8))])
    # A driver dies with checkpoint 6's transaction open: its records never become visible.
    first.producer.begin_transaction()
    first.producer.produce(topic, b"lost")
    first.producer.flush(15)

    second = KafkaCommitter(_committable(kafka_bootstrap, topic, transactional_id, 1, range(0)))
    assert second.published == 3
    second.commit(3, [_committable(kafka_bootstrap, topic, transactional_id, 3, range(5, 8))])
    second.commit(6, [_committable(kafka_bootstrap, topic, transactional_id, 6, range(8, 10))])
    with pytest.raises(Exception, match=r"(?i)fenced"):  # the old driver is a zombie
        first.producer.commit_transaction(15)
    second.close()
    values = [value for _, value, _ in read_topic(kafka_bootstrap, topic)]
    assert values == [str(v).encode() for v in range(10)]
    assert b"lost" in [value for _, value, _ in read_topic(kafka_bootstrap, topic,
                                                           committed=False)]


def test_an_upgrade_that_changes_the_topic_publishes_each_checkpoint_once(
        kafka_bootstrap: str) -> None:
    """Committables go to the topic they were written for, and every topic of the run carries
    the published checkpoint: a run restored after the topic changed skips what it published."""
    old, new = new_topic(kafka_bootstrap, 1), new_topic(kafka_bootstrap, 1)
    transactional_id = f"test-{uuid.uuid4().hex[:8]}"

    def committable(topic: str, epoch: int, values: range) -> KafkaCommittable:
        return _committable(kafka_bootstrap, topic, transactional_id, epoch, values)

    first = KafkaCommitter(committable(old, 1, range(0)))
    first.commit(2, [committable(old, 2, range(0, 3))])
    first.close()
    upgraded = KafkaCommitter(committable(old, 1, range(0)))  # restores checkpoint 2 first
    upgraded.commit(2, [committable(old, 2, range(0, 3))])
    upgraded.commit(4, [committable(old, 3, range(3, 5)), committable(new, 4, range(10, 12))])
    upgraded.close()
    restarted = KafkaCommitter(committable(new, 1, range(0)))
    assert restarted.published == 4
    restarted.commit(4, [committable(old, 3, range(3, 5)), committable(new, 4, range(10, 12))])
    restarted.close()
    assert [v for _, v, _ in read_topic(kafka_bootstrap, old)] == [
        str(v).encode() for v in range(5)]
    assert [v for _, v, _ in read_topic(kafka_bootstrap, new)] == [b"10", b"11"]


def test_a_run_on_an_empty_storage_numbers_its_checkpoints_above_what_was_published(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    """A job moved to a new, empty checkpoint storage with the same transactionalIdPrefix
    (or whose storage was wiped) starts counting checkpoints again; it must count above the
    checkpoint its sink last published, or each transaction is taken for one published
    already and its output silently dropped. Both runs read the topic from the start: the
    output holds every window twice."""
    source, output = new_topic(kafka_bootstrap), new_topic(kafka_bootstrap)
    base = int(time.time() * 1000) - 60_000
    produce_clicks(kafka_bootstrap, source, 0, 3000, base)
    sink = {"type": "kafka_sink", "args": {
        "bootstrapServers": kafka_bootstrap, "topic": output, "valueFormat": "json",
        "deliveryGuarantee": "exactly-once",
        "transactionalIdPrefix": f"test-{uuid.uuid4().hex[:8]}"}}
    for run_number, interval in ((1, "200ms"), (2, "1h")):  # the second takes one checkpoint
        job = tmp_path / f"job-{run_number}.yaml"
        write_job(job, clicks_job(kafka_bootstrap, source, sink, bounded=True, checkpointing={
            "interval": interval, "storage": str(tmp_path / f"checkpoints-{run_number}")}))
        process = dataflow_run(job, tmp_path / f"status-{run_number}.json")
        _, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr.decode()[-3000:]
    expected = expected_clicks(3000, base)
    assert _windows(read_topic(kafka_bootstrap, output)) == sorted(expected * 2)


def test_bad_records_and_unreachable_brokers_are_named(run: RunJob,
                                                      kafka_bootstrap: str) -> None:
    def job(bootstrap: str, sink_args: dict[str, Any]) -> dict[str, Any]:
        return {"parallelism": 1, "pipeline": [
            {"name": "numbers", "type": "sequence", "args": {"from": 1, "to": 10}},
            {"name": "out", "type": "kafka_sink", "inputs": ["numbers"], "args": {
                "bootstrapServers": bootstrap, "topic": "t",
                "deliveryGuarantee": "at-least-once", **sink_args,
                "properties": {"message.timeout.ms": "3000"}}}]}

    unkeyed = run(job(kafka_bootstrap, {"keyFormat": "text"}))
    assert unkeyed.job_status is JobStatus.FAILED
    assert "with keyFormat, records are (key, value) pairs, not int" in (unkeyed.error or "")
    unreachable = run(job("127.0.0.1:9", {}))
    assert unreachable.job_status is JobStatus.FAILED
    assert "were not acknowledged (bootstrapServers 127.0.0.1:9)" in (unreachable.error or "")

