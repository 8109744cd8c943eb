"""The kafka source on a real broker (``hack/kafka``): bounded and unbounded, keyed event-time
windows over the records' own Kafka timestamps, a driver killed while it reads and resumed
from its checkpoint, and clear errors for a missing topic and unreachable brokers. Expected
output is computed from what the test produced."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer
from test_spark_continuous import (
    committed_lines,
    completed_checkpoints,
    dataflow_run,
    run_then_kill,
    write_job,
)

from conftest import RunJob
from dataflow_engine.graph.states import JobStatus
from kafka_helpers import (
    PAGES,
    WINDOW_MS,
    ClickProducer,
    clicks_job,
    expected_clicks,
    new_topic,
    produce_clicks,
    produce_watermark_pushers,
)

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("mode", ["STREAMING", "BATCH"])
def test_a_bounded_kafka_source_windows_its_records_by_their_own_timestamps(
        run: RunJob, kafka_bootstrap: str, mode: str) -> None:
    topic, base = new_topic(kafka_bootstrap), int(time.time() * 1000) - 60_000
    produce_clicks(kafka_bootstrap, topic, 0, 4000, base)
    result = run(clicks_job(kafka_bootstrap, topic, {"type": "collect"}, bounded=True, mode=mode))
    assert result.job_status is JobStatus.FINISHED, result.error
    assert sorted(tuple(r) for r in result.collected["out"]) == expected_clicks(4000, base)
    assert result.status.vertices[0].records_out == 4000
    if mode == "STREAMING":  # every partition's position and lag, read in the one epoch
        assert result.status.checkpoints is not None
        partitions = result.status.checkpoints.kafka_partitions
        assert sorted((p.source, p.topic, p.partition) for p in partitions) == [
            ("clicks", topic, partition) for partition in range(3)]
        assert sum(p.offset for p in partitions) == sum(p.lag for p in partitions) == 4000
        assert result.status.vertices[0].backlog == 4000  # its partitions' lag


def test_a_killed_driver_resumes_reading_kafka_where_its_checkpoint_stopped(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    """Clicks keep arriving while the driver is killed twice; given an end at last, the file
    sink holds every window of every click, once."""
    topic, base = new_topic(kafka_bootstrap), int(time.time() * 1000) - 600_000
    storage, output, job = tmp_path / "checkpoints", tmp_path / "out", tmp_path / "job.yaml"
    sink = {"type": "file", "args": {"path": str(output), "format": "json"}}
    checkpointing = {"interval": "300ms", "storage": str(storage)}
    write_job(job, clicks_job(kafka_bootstrap, topic, sink, bounded=False,
                         checkpointing=checkpointing))
    with ClickProducer(kafka_bootstrap, topic, base, 1000, 30_000) as clicks:
        for kill in range(2):
            run_then_kill(job, tmp_path / f"status-{kill}.json", storage, 0.3 * kill)
    assert committed_lines(output)  # published before the kills, and kept

    write_job(job, clicks_job(kafka_bootstrap, topic, sink, bounded=True,
                         checkpointing=checkpointing))
    process = dataflow_run(job, tmp_path / "status-final.json")
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr.decode()[-3000:]
    assert committed_lines(output) == expected_clicks(clicks.produced, base)


def test_a_missing_topic_and_unreachable_brokers_are_named(run: RunJob,
                                                         kafka_bootstrap: str) -> None:
    missing = run(clicks_job(kafka_bootstrap, "no-such-topic", {"type": "discard"}, bounded=True))
    assert missing.job_status is JobStatus.FAILED
    assert "topic 'no-such-topic' does not exist" in (missing.error or "")
    spec = clicks_job("127.0.0.1:9", "clicks", {"type": "discard"}, bounded=False)
    spec["pipeline"][0]["args"]["properties"] = {"socket.timeout.ms": "2000"}
    unreachable = run(spec)
    assert unreachable.job_status is JobStatus.FAILED
    assert "the brokers cannot be reached (bootstrapServers 127.0.0.1:9)" in (
        unreachable.error or "")


def test_an_idle_partition_does_not_stall_the_windows_with_idleness(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    """Three partitions, one subtask each, and clicks only in two: the third subtask's
    timestamps operator goes idle after 1 s without records, so the windows downstream fire
    while the job runs (without idleness its watermark would hold them back forever, as in
    Flink)."""
    topic, base = new_topic(kafka_bootstrap), int(time.time() * 1000) - 60_000
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "enable.idempotence": True})
    for i in range(3000):
        producer.produce(topic, json.dumps({"page": i % PAGES, "n": i % 3 + 1}).encode(),
                         partition=i % 2, timestamp=base + i)
    assert producer.flush(30) == 0
    storage, output, job = tmp_path / "checkpoints", tmp_path / "out", tmp_path / "job.yaml"
    spec = clicks_job(kafka_bootstrap, topic,
                      {"type": "file", "args": {"path": str(output), "format": "json"}},
                      bounded=False, checkpointing={"interval": "300ms", "storage": str(storage)})
    spec["parallelism"] = 3
    spec["pipeline"][1]["watermarkStrategy"].update(maxOutOfOrderness="100ms", idleness="1s")
    write_job(job, spec)
    process = dataflow_run(job, tmp_path / "status.json")
    try:
        deadline = time.monotonic() + 120
        while not committed_lines(output) and time.monotonic() < deadline:
            assert process.poll() is None, process.communicate()[1].decode()[-3000:]
            time.sleep(0.2)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    fired = committed_lines(output)
    assert fired, "no window fired while a partition was idle"
    assert set(fired) <= set(expected_clicks(3000, base))  # the windows the watermark passed


def _read_offset(status: Path, partition: int) -> int:
    """The next offset the job assigns in ``partition`` (0 before its status says)."""
    try:
        checkpoints = json.loads(status.read_text()).get("checkpoints") or {}
    except (FileNotFoundError, json.JSONDecodeError):
        return 0
    return next((entry["offset"] for entry in checkpoints.get("kafkaPartitions", [])
                 if entry["partition"] == partition), 0)


def test_a_partition_behind_another_of_its_subtask_holds_the_watermark_back(
        kafka_bootstrap: str, tmp_path: Path) -> None:
    """One subtask reads two partitions. The even clicks reach partition 0 and are read, and
    epochs pass; only then do the odd clicks, as old, reach partition 1. With a watermark per
    partition (Flink's KafkaSource) partition 1 held the subtask's back meanwhile, so no odd
    click is late: every window holds all its clicks (one watermark for the subtask would
    have fired the windows with the even clicks alone)."""
    topic, base = new_topic(kafka_bootstrap, partitions=2), int(time.time() * 1000) - 60_000
    clicks = 4000
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "enable.idempotence": True})

    def produce(parity: int) -> None:
        for i in range(parity, clicks, 2):
            producer.produce(topic, json.dumps({"page": i % PAGES, "n": i % 3 + 1}).encode(),
                             partition=parity, timestamp=base + i)
        assert producer.flush(30) == 0

    storage, output, job = tmp_path / "checkpoints", tmp_path / "out", tmp_path / "job.yaml"
    status = tmp_path / "status.json"
    spec = clicks_job(kafka_bootstrap, topic,
                      {"type": "file", "args": {"path": str(output), "format": "json"}},
                      bounded=False, checkpointing={"interval": "300ms", "storage": str(storage)})
    spec["parallelism"] = 1
    spec["pipeline"][1]["watermarkStrategy"]["maxOutOfOrderness"] = "100ms"
    write_job(job, spec)
    produce(0)
    process = dataflow_run(job, status)
    try:
        deadline = time.monotonic() + 120
        while _read_offset(status, 0) < clicks // 2 and time.monotonic() < deadline:
            assert process.poll() is None, process.communicate()[1].decode()[-3000:]
            time.sleep(0.2)
        read = completed_checkpoints(storage)[-1]
        while completed_checkpoints(storage)[-1] < read + 3 and time.monotonic() < deadline:
            time.sleep(0.2)  # epochs with nothing new in partition 1
        assert committed_lines(output) == []  # partition 1 holds every window back
        produce(1)
        produce_watermark_pushers(kafka_bootstrap, topic, base + clicks + 2 * WINDOW_MS)
        expected = expected_clicks(clicks, base)
        while len(committed_lines(output)) < len(expected) and time.monotonic() < deadline:
            assert process.poll() is None, process.communicate()[1].decode()[-3000:]
            time.sleep(0.2)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert committed_lines(output) == expected
