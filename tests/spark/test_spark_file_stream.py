"""A monitored text source (Flink's FileSource with monitorContinuously): files moved into a
directory while the job runs are read once each, through a stop-with-savepoint and a
restore that finds the files it already read in the savepoint."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import RunJob
from dataflow_engine.graph.states import JobStatus
from dataflow_engine.runtime.checkpoint.savepoints import (
    SavepointRefused,
    SavepointRequest,
    SavepointRequests,
)

pytestmark = pytest.mark.spark


def _job(source: Path, output: Path, storage: Path) -> dict[str, Any]:
    return {
        "parallelism": 2, "runtimeMode": "AUTOMATIC", "epochInterval": "200ms",
        "checkpointing": {"interval": "200ms", "storage": str(storage)},
        "pipeline": [
            {"name": "files", "type": "text",
             "args": {"path": str(source), "monitorInterval": "300ms"}},
            {"name": "out", "type": "file", "inputs": ["files"],
             "args": {"path": str(output)}}]}


def _published(output: Path) -> list[str]:
    lines: list[str] = []
    for part in output.glob("part-*"):
        lines += part.read_text().splitlines()
    return sorted(lines)


def _drop_file(source: Path, number: int) -> list[str]:
    """Written under a hidden name, then renamed: the source never sees half a file."""
    lines = [f"file{number}-line{i}" for i in range(50)]
    hidden = source / f".file{number}.txt.tmp"
    hidden.write_text("\n".join(lines) + "\n")
    os.replace(hidden, source / f"file{number}.txt")
    return lines


def _feed_then_stop(source: Path, numbers: range, done: Callable[[list[str]], bool],
                    requests: SavepointRequests, nonce: str) -> list[str]:
    """Drops the files while the job runs, then stops it with a savepoint once ``done``."""
    written: list[str] = []

    def feed() -> None:
        for number in numbers:
            time.sleep(0.3)
            written.extend(_drop_file(source, number))
        while not done(written):
            time.sleep(0.1)
        while True:
            try:
                requests.request(SavepointRequest(nonce, stop=True))
                return
            except SavepointRefused:
                time.sleep(0.05)

    threading.Thread(target=feed, daemon=True).start()
    return written


def test_new_files_are_read_once_across_a_savepoint_and_restore(run: RunJob,
                                                                tmp_path: Path) -> None:
    source, output, storage = tmp_path / "in", tmp_path / "out", tmp_path / "checkpoints"
    source.mkdir()
    expected = _drop_file(source, 0)  # there before the job starts
    job = _job(source, output, storage)

    requests = SavepointRequests()
    written = _feed_then_stop(source, range(1, 5), lambda written: _published(output) == sorted(
        expected + written) and len(written) == 200, requests, "first")
    first = run(job, savepoints=requests)
    assert first.job_status is JobStatus.FINISHED, first.error
    expected += written
    assert _published(output) == sorted(expected)
    assert first.status.checkpoints is not None
    savepoint = first.status.checkpoints.savepoints[-1].path
    assert savepoint is not None

    requests = SavepointRequests()
    written = _feed_then_stop(source, range(5, 8), lambda written: len(_published(output)) >= len(
        expected) + 150 and len(written) == 150, requests, "second")
    second = run(job, savepoints=requests, restore=savepoint)
    assert second.job_status is JobStatus.FINISHED, second.error
    assert _published(output) == sorted(expected + written)  # each file once, none again
