"""Continuous jobs on Spark: a STREAMING job with a datagen source runs in epochs, carries its
state (window contents, timers, watermarks) from epoch to epoch, checkpoints it, and resumes
from its latest checkpoint after the driver is killed, its file sink publishing every window
exactly once. Expected output is computed here from the generator, not taken from a run."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import spark_fns
import yaml

from conftest import RunJob
from dataflow_engine.graph.states import JobStatus
from dataflow_engine.runtime.checkpoint.storage import CheckpointStorage

pytestmark = pytest.mark.spark

WINDOW_MS = 1000


def windowed_job(rows: int | None, rate: float, *, sink: dict[str, Any],
                 parallelism: int = 2, window_parallelism: int | None = None,
                 checkpointing: dict[str, Any] | None = None,
                 mode: str = "STREAMING") -> dict[str, Any]:
    """datagen -> event time -> keyBy -> 1 s tumbling windows summing amounts -> sink."""
    args: dict[str, Any] = {"rowsPerSecond": rate}
    if rows is not None:
        args["numberOfRows"] = rows
    window: dict[str, Any] = {
        "name": "sums", "type": "window", "function": "spark_fns:add_amounts",
        "inputs": [{"from": "stamped", "keyBy": 0}],
        "window": {"assigner": {"type": "tumbling", "time": "event", "size": f"{WINDOW_MS}ms"},
                   "kind": "reduce"}}
    if window_parallelism is not None:
        window["parallelism"] = window_parallelism
    spec: dict[str, Any] = {
        "parallelism": parallelism, "runtimeMode": mode, "epochInterval": "200ms",
        "pipeline": [
            {"name": "events", "type": "datagen", "function": "spark_fns:timed_event",
             "args": args},
            {"name": "stamped", "type": "timestamps", "inputs": ["events"],
             "function": "spark_fns:TimestampOfField1",
             "watermarkStrategy": {"type": "forMonotonousTimestamps"}},
            window,
            {"name": "out", "inputs": ["sums"], **sink}]}
    if checkpointing is not None:
        spec["checkpointing"] = checkpointing
    return spec


def expected_windows(rows: int) -> list[tuple[int, int, bool, int]]:
    """What the windows emit for records ``0..rows-1``: every window, once."""
    sums: dict[tuple[int, int], list[int]] = defaultdict(lambda: [0, -1])
    for index in range(rows):
        key, timestamp, _, amount = spark_fns.timed_event(index)
        entry = sums[(key, timestamp // WINDOW_MS)]
        entry[0] += amount
        entry[1] = max(entry[1], timestamp)
    return sorted((key, latest, False, total) for (key, _), (total, latest) in sums.items())


def test_a_bounded_datagen_job_runs_in_epochs_and_its_windows_span_them(run: RunJob) -> None:
    rows = 6000
    streaming = run(windowed_job(rows, 1000, sink={"type": "collect"}))
    assert streaming.job_status is JobStatus.FINISHED, streaming.error
    stats = streaming.status.checkpoints
    assert stats is not None
    # 6000 rows at 1000 per second: the input was cut into several epochs, and 1 s windows
    # (1000 rows) still came out whole.
    assert stats.epochs >= 3
    assert sorted(tuple(r) for r in streaming.collected["out"]) == expected_windows(rows)
    source = streaming.status.vertices[0]
    assert source.records_out == rows  # summed over the epochs
    assert {s.state.value for s in source.subtasks} == {"FINISHED"}

    batch = run(windowed_job(rows, 1000, sink={"type": "collect"}, mode="BATCH"))
    assert batch.job_status is JobStatus.FINISHED, batch.error
    assert batch.status.checkpoints is None
    assert sorted(tuple(r) for r in batch.collected["out"]) == expected_windows(rows)


def test_an_unbounded_job_runs_until_it_is_stopped(run: RunJob, tmp_path: Path) -> None:
    stop = threading.Event()
    status_file = tmp_path / "status.json"
    seen: list[dict[str, Any]] = []

    def watch() -> None:
        while not stop.is_set():
            if status_file.exists():
                document = json.loads(status_file.read_text())
                seen.append(document)
                if (document["checkpoints"] or {}).get("epochs", 0) >= 8:
                    stop.set()
            time.sleep(0.1)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        result = run(windowed_job(None, 2000, sink={"type": "discard"}),
                     stop=stop, status_file=status_file, poll_interval=0.1)
    finally:
        stop.set()
        watcher.join()
    assert result.job_status is JobStatus.CANCELED
    assert result.status.checkpoints is not None and result.status.checkpoints.epochs >= 4
    running = [d for d in seen if d["jobStatus"] == "RUNNING" and d["checkpoints"]["epochs"]]
    assert running, "no status document of the running job"
    states = {s["state"] for v in running[-1]["vertices"] for s in v["subtasks"]}
    assert states == {"RUNNING"}
    # Rates over the last epochs: the source's about its pace (it catches up after a slow
    # first epoch), what it emits is what the windows take in over the same epochs; every
    # subtask was busy some of the time, and not more than all of it.
    source, windows = running[-1]["vertices"]
    assert 1000 < source["recordsOutPerSecond"] < 8000, source
    assert windows["recordsInPerSecond"] == pytest.approx(source["recordsOutPerSecond"])
    assert all(0 < s["busyRatio"] <= 1 and s["busyMs"] > 0
               for v in running[-1]["vertices"] for s in v["subtasks"]), running[-1]["vertices"]
    assert source["backlog"] is None  # not a Kafka source


def committed_lines(directory: Path) -> list[tuple[Any, ...]]:
    lines = []
    for part in sorted(directory.glob("part-*")):
        lines += [tuple(json.loads(line)) for line in part.read_text().splitlines()]
    return sorted(lines)


def write_job(path: Path, spec: dict[str, Any]) -> None:
    path.write_text(yaml.safe_dump({"apiVersion": "dataflow.io/v1alpha1", "kind": "DataflowJob",
                                    "metadata": {"name": "continuous"}, "spec": spec}))


def dataflow_run(job: Path, status: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(Path(spark_fns.__file__).parent), os.environ.get("PYTHONPATH", "")]))
    return subprocess.Popen(
        [sys.executable, "-m", "dataflow_engine.cli", "run", str(job), "--master", "local[2]",
         "--status-file", str(status)], env=env, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, start_new_session=True)


def run_then_kill(job: Path, status: Path, storage: Path, delay: float,
                  when: Callable[[], bool] | None = None) -> None:
    """Runs ``dataflow run job`` and kills it (SIGKILL, the whole process group) ``delay``
    seconds after it checkpointed three epochs of its own (its first one reads nothing: a
    source's pace counts from the restart) and then ``when`` (polled) turned true."""
    process = dataflow_run(job, status)
    first = (completed_checkpoints(storage) or [0])[-1]
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and process.poll() is None:
        if any(c >= first + 3 for c in completed_checkpoints(storage)):
            break
        time.sleep(0.05)
    while when is not None and time.monotonic() < deadline and process.poll() is None:
        if when():
            break
        time.sleep(0.01)
    assert process.poll() is None, process.communicate()[1].decode()[-3000:]
    time.sleep(delay)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def completed_checkpoints(storage: Path) -> list[int]:
    return sorted(int(p.parent.name.removeprefix("chk-")) for p in storage.glob("chk-*/_metadata"))


def _emitted(storage: Path) -> int:
    """Rows the datagen source had emitted at the latest completed checkpoint."""
    checkpoint = CheckpointStorage(str(storage)).latest()
    assert checkpoint is not None
    return int(checkpoint.sources["events"])


def test_a_killed_driver_resumes_from_its_checkpoint_and_publishes_each_window_once(
        tmp_path: Path) -> None:
    """Killed twice at random moments while unbounded, then given an end: the output is
    every window of the rows generated, once. (The end comes last so that no run can finish
    before it is killed, however slow the machine.) The last run resumes from a checkpoint
    that a resumed run took; more kills would add a driver's start each and test nothing
    new."""
    storage, output = tmp_path / "checkpoints", tmp_path / "out"
    job = tmp_path / "job.yaml"
    sink = {"type": "file", "args": {"path": str(output), "format": "json"}}
    checkpointing = {"interval": "400ms", "storage": str(storage), "retained": 2}
    write_job(job, windowed_job(None, 3000, sink=sink, checkpointing=checkpointing))
    rng = random.Random(7)
    restored_from: list[str] = []
    for kill in range(2):
        status = tmp_path / f"status-{kill}.json"
        run_then_kill(job, status, storage, rng.uniform(0.0, 1.0))
        if status.exists():
            restored = json.loads(status.read_text())["checkpoints"]["restoredFrom"]
            if restored:
                restored_from.append(restored)
    assert len(restored_from) == 1  # the run after the first resumed
    assert committed_lines(output)  # some windows were published before the kills

    rows = _emitted(storage) + 3000
    write_job(job, windowed_job(rows, 3000, sink=sink, checkpointing=checkpointing))
    status = tmp_path / "status-final.json"
    process = dataflow_run(job, status)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr.decode()[-3000:]
    assert committed_lines(output) == expected_windows(rows)
    assert not [p for p in output.iterdir() if p.name.startswith(".")]
    document = json.loads(status.read_text())
    assert document["jobStatus"] == "FINISHED"
    assert document["checkpoints"]["restoredFrom"].startswith(str(storage))
    assert len(completed_checkpoints(storage)) <= 2  # retained


def test_a_checkpoint_directory_that_cannot_be_written_fails_the_job_naming_it(
        run: RunJob, tmp_path: Path) -> None:
    """A storage that cannot be read fails the job at its start. One that stops taking
    writes mid-stream fails checkpoints while the job runs on, up to
    tolerableFailedCheckpoints in a row; the next failure fails the job with the storage's
    error."""
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    unusable = run(windowed_job(None, 1500, sink={"type": "discard"}, checkpointing={
        "interval": "200ms", "storage": str(blocked / "checkpoints")}))
    assert unusable.job_status is JobStatus.FAILED
    assert f"checkpoint storage {blocked / 'checkpoints'} cannot be read" in (
        unusable.error or ""), unusable.error

    storage = tmp_path / "checkpoints"

    def break_storage() -> None:  # root ignores permissions: a file takes the directory's place
        while not completed_checkpoints(storage):
            time.sleep(0.05)
        storage.rename(tmp_path / "moved")
        storage.write_text("")

    threading.Thread(target=break_storage, daemon=True).start()
    result = run(windowed_job(None, 1500, sink={"type": "discard"}, checkpointing={
        "interval": "200ms", "storage": str(storage), "tolerableFailedCheckpoints": 2}))
    assert result.job_status is JobStatus.FAILED
    assert f"could not be written to {storage}" in (result.error or ""), result.error
    checkpoints = result.status.checkpoints
    assert checkpoints is not None and checkpoints.completed >= 1
    assert checkpoints.consecutive_failures == 3


def test_a_checkpoint_restores_into_a_rescaled_window(run: RunJob, tmp_path: Path) -> None:
    """Stopped with parallelism 2, resumed with the window at 3 and then (with an end) at 1:
    its keyed state and timers are redistributed by key group, and every window is
    published once."""
    storage, output = tmp_path / "checkpoints", tmp_path / "out"
    stop = threading.Event()
    sink = {"type": "file", "args": {"path": str(output), "format": "json"}}
    checkpointing = {"interval": "200ms", "storage": str(storage)}

    def stop_after(checkpoints: int) -> threading.Thread:
        def watch() -> None:
            while len(completed_checkpoints(storage)) < 1 or (
                    completed_checkpoints(storage)[-1] < checkpoints):
                time.sleep(0.05)
            stop.set()
        thread = threading.Thread(target=watch, daemon=True)
        thread.start()
        return thread

    stop_after(3)
    first = run(windowed_job(None, 1500, sink=sink, checkpointing=checkpointing), stop=stop)
    assert first.job_status is JobStatus.CANCELED

    stop.clear()
    stop_after(completed_checkpoints(storage)[-1] + 3)
    second = run(windowed_job(None, 1500, sink=sink, checkpointing=checkpointing,
                              window_parallelism=3), stop=stop)
    assert second.job_status is JobStatus.CANCELED
    assert second.status.checkpoints is not None
    assert second.status.checkpoints.restored_from is not None

    stop.clear()
    rows = _emitted(storage) + 1500
    third = run(windowed_job(rows, 1500, sink=sink, checkpointing=checkpointing,
                             window_parallelism=1), stop=stop)
    assert third.job_status is JobStatus.FINISHED, third.error
    assert committed_lines(output) == expected_windows(rows)
