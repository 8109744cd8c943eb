"""Pipelined continuous jobs (``execution: PIPELINED``): long-lived tasks in one Spark barrier
stage, records streaming between them, aligned checkpoint barriers. The windowed job of the
epoch tests publishes every window exactly once through checkpoints, through a failing subtask
(the stage restarts from the latest checkpoint) and through a savepoint taken pipelined and
resumed in epochs. Expected output is computed from the generator."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import spark_fns
from test_spark_continuous import committed_lines, expected_windows, windowed_job
from test_spark_savepoints import _savepoint_after, _stopped_with_savepoint

from conftest import RunJob
from dataflow_engine.graph.states import JobStatus
from dataflow_engine.runtime.checkpoint.savepoints import SavepointRequests
from dataflow_engine.runtime.checkpoint.storage import load_checkpoint

pytestmark = pytest.mark.spark


def pipelined(spec: dict[str, Any]) -> dict[str, Any]:
    return {**spec, "execution": "PIPELINED", "epochInterval": "50ms"}


def _file_sink(output: Path) -> dict[str, Any]:
    return {"type": "file", "args": {"path": str(output), "format": "json"}}


def test_a_pipelined_job_checkpoints_and_publishes_every_window_once(
        run: RunJob, tmp_path: Path) -> None:
    rows, output = 4000, tmp_path / "out"
    checkpointing = {"interval": "300ms", "storage": str(tmp_path / "checkpoints")}
    result = run(pipelined(windowed_job(rows, 2000, sink=_file_sink(output),
                                        checkpointing=checkpointing)))
    assert result.job_status is JobStatus.FINISHED, result.error
    assert committed_lines(output) == expected_windows(rows)
    stats = result.status.checkpoints
    assert stats is not None and stats.completed >= 3 and stats.failed == 0
    vertices = {v.name.split(" ")[0]: v for v in result.status.vertices}
    assert sum(s.records_out for s in result.status.vertices[0].subtasks) == rows
    assert {s.state.value for v in vertices.values() for s in v.subtasks} == {"FINISHED"}


def test_a_failing_subtask_restarts_the_stage_from_its_latest_checkpoint(
        run: RunJob, tmp_path: Path) -> None:
    rows, output = 6000, tmp_path / "out"
    spec = windowed_job(rows, 3000, sink=_file_sink(output),
                        checkpointing={"interval": "200ms", "storage": str(tmp_path / "ck")})
    spec["pipeline"].insert(1, {"name": "flaky", "type": "map", "inputs": ["events"],
                                "function": "spark_fns:FailOnceInJob"})
    spec["pipeline"][2]["inputs"] = ["flaky"]
    name = f"pipelined-failover-{os.getpid()}-{tmp_path.name}"
    try:
        result = run(pipelined(spec), name=name)
        assert os.path.exists(spark_fns.events_path(name) + ".failed"), "it never failed"
    finally:
        if os.path.exists(spark_fns.events_path(name) + ".failed"):
            os.remove(spark_fns.events_path(name) + ".failed")
    assert result.job_status is JobStatus.FINISHED, result.error
    assert committed_lines(output) == expected_windows(rows)  # nothing lost, nothing twice
    attempts = {s.attempt for v in result.status.vertices for s in v.subtasks}
    assert attempts == {1}  # every subtask restarted once, with the stage


def test_a_pipelined_savepoint_resumes_in_epochs(run: RunJob, tmp_path: Path) -> None:
    storage, output = tmp_path / "checkpoints", tmp_path / "out"
    checkpointing = {"interval": "200ms", "storage": str(storage)}
    requests = SavepointRequests()
    _savepoint_after(storage, 3, "pipelined", requests)
    first = run(pipelined(windowed_job(None, 1500, sink=_file_sink(output),
                                       checkpointing=checkpointing)), savepoints=requests)
    path = _stopped_with_savepoint(first, "pipelined")

    rows = int(load_checkpoint(path).sources["events"]) + 1500
    second = run(windowed_job(rows, 1500, sink=_file_sink(output), checkpointing=checkpointing,
                              window_parallelism=3), restore=path)
    assert second.job_status is JobStatus.FINISHED, second.error
    assert committed_lines(output) == expected_windows(rows)
