"""The kafka source on a real broker (``hack/kafka``): bounded and unbounded, keyed event-time
windows over the records' own Kafka timestamps, a driver killed while it reads and resumed
from its checkpoint, and clear errors for a missing topic and unreachable brokers. Expected
output is computed from what the test produced."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from test_spark_continuous import committed_lines, dataflow_run, run_then_kill, write_job

from conftest import RunJob
from dataflow_engine.graph.states import JobStatus

pytestmark = pytest.mark.spark

WINDOW_MS = 1000
PAGES = 5


def new_topic(bootstrap: str, partitions: int = 3) -> str:
    topic = f"clicks-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(timeout=30)
    return topic


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
         mode: str = "STREAMING", checkpointing: dict[str, Any] | None = None
         ) -> dict[str, Any]:
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
            {"name": "pages", "type": "process", "function": "spark_fns:page_clicks",
             "inputs": ["stamped"]},
            {"name": "sums", "type": "window", "function": "spark_fns:add_page_clicks",
             "inputs": [{"from": "pages", "keyBy": 0}],
             "window": {"assigner": {"type": "tumbling", "time": "event",
                                     "size": f"{WINDOW_MS}ms"}, "kind": "reduce"}},
            {"name": "out", "inputs": ["sums"], **sink}]}
    if checkpointing is not None:
        spec["checkpointing"] = checkpointing
    return spec


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
    unreachable = run(clicks_job("127.0.0.1:9", "clicks", {"type": "discard"}, bounded=False))
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
