"""Where a driver names its status server's port (``dataflow run --status-port 0``), how the
file is written and removed, and when the server serves on after the job ended."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from status_documents import status_document

from dataflow_engine.compiler.compile import CompiledJob, compile_job
from dataflow_engine.runtime.jobmaster import runner
from dataflow_engine.runtime.jobmaster.config import RunnerConfig
from dataflow_engine.spec.model import DataflowJobSpec

pytestmark = pytest.mark.unit


def _continuous(storage: str | None) -> CompiledJob:
    spec: dict[str, Any] = {"runtimeMode": "STREAMING", "pipeline": [
        {"name": "events", "type": "datagen", "args": {"rowsPerSecond": 10}},
        {"name": "out", "type": "discard", "inputs": ["events"]}]}
    if storage is not None:
        spec["checkpointing"] = {"interval": "1s", "storage": storage}
    return compile_job(DataflowJobSpec.model_validate(spec), "job")


def test_the_port_file_is_beside_the_status_file_else_in_a_local_checkpoint_storage(
        tmp_path: Path) -> None:
    storage = str(tmp_path / "ckpt")
    with_file = RunnerConfig(status_file=tmp_path / "run" / "status.json")
    assert runner.status_port_path(_continuous(storage), with_file) == (
        tmp_path / "run" / "status-port")
    assert runner.status_port_path(_continuous(storage), RunnerConfig()) == (
        tmp_path / "ckpt" / "status-port")
    assert runner.status_port_path(_continuous(f"file://{storage}"), RunnerConfig()) == (
        tmp_path / "ckpt" / "status-port")
    assert runner.status_port_path(_continuous("hdfs://nn:8020/ckpt"), RunnerConfig()) is None
    assert runner.status_port_path(_continuous(None), RunnerConfig()) is None


def test_the_port_file_is_written_whole_and_removed_only_while_it_is_ours(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "new-storage" / "status-port"
    assert runner._write_status_port(path, 40123)
    assert path.read_text() == "40123\n"
    assert [p.name for p in path.parent.iterdir()] == ["status-port"]  # no temporary left
    assert path.parent.stat().st_mode & 0o777 == 0o700  # as a checkpoint storage is made
    runner._remove_status_port(path, 40124)  # another run's port now: not ours to remove
    assert path.exists()
    runner._remove_status_port(path, 40123)
    assert not path.exists()

    blocked = tmp_path / "a-file"
    blocked.write_text("")
    assert not runner._write_status_port(blocked / "status-port", 40123)
    assert "the status port could not be written to" in caplog.text


def test_the_server_serves_on_after_a_stop_with_savepoint_or_requests_the_end_failed() -> None:
    def final(*savepoints: dict[str, Any]) -> Any:
        return status_document({"jobStatus": "FINISHED", "checkpoints": {
            "savepoints": [{"nonce": f"n{i}", "time": i, **s} for i, s in enumerate(savepoints)]}})

    assert runner._ends_with_savepoint_outcome(final({"path": "/sp", "stop": True}))
    assert runner._ends_with_savepoint_outcome(
        final({"path": "/sp"}, {"error": "the job ended", "reason": "JOB_ENDED"}))
    assert not runner._ends_with_savepoint_outcome(final({"path": "/sp"}))
    assert not runner._ends_with_savepoint_outcome(status_document({"jobStatus": "FINISHED"}))
