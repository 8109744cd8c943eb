"""Savepoints of continuous jobs: stop-with-savepoint, resume from a savepoint with the window
rescaled 2 -> 3 -> 1 (keyed state and timers redistributed by key group, every window
published once), refused and allowed non-restored state, a savepoint path that does not
exist, a stop with drain and a checkpoint asked for."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from test_spark_continuous import (
    committed_lines,
    completed_checkpoints,
    expected_windows,
    windowed_job,
)

from conftest import RunJob
from dataflow_engine.graph.states import JobStatus
from dataflow_engine.runtime.checkpoint.savepoints import (
    SavepointRefused,
    SavepointRequest,
    SavepointRequests,
)
from dataflow_engine.runtime.checkpoint.storage import load_checkpoint
from dataflow_engine.runtime.jobmaster.config import JobExecutionResult

pytestmark = pytest.mark.spark


def _savepoint_after(storage: Path, checkpoints: int, nonce: str,
                     requests: SavepointRequests) -> None:
    """Asks for a stop-with-savepoint once the job completed ``checkpoints`` more."""
    def watch() -> None:
        first = (completed_checkpoints(storage) or [0])[-1]
        while (completed_checkpoints(storage) or [0])[-1] < first + checkpoints:
            time.sleep(0.05)
        while True:
            try:
                requests.request(SavepointRequest(nonce, stop=True))
                return
            except SavepointRefused:  # the run has not started its epochs yet
                time.sleep(0.05)

    threading.Thread(target=watch, daemon=True).start()


def _stopped_with_savepoint(result: JobExecutionResult, nonce: str) -> str:
    assert result.job_status is JobStatus.FINISHED, result.error
    assert result.status.checkpoints is not None
    savepoint = result.status.checkpoints.savepoints[-1]
    assert (savepoint.nonce, savepoint.stop, savepoint.error) == (nonce, True, None)
    assert savepoint.path is not None and Path(savepoint.path, "_metadata").is_file()
    return savepoint.path


def test_stop_with_savepoint_and_resume_rescaled_two_three_one(run: RunJob,
                                                              tmp_path: Path) -> None:
    storage, output = tmp_path / "checkpoints", tmp_path / "out"
    sink = {"type": "file", "args": {"path": str(output), "format": "json"}}
    checkpointing = {"interval": "200ms", "storage": str(storage)}

    requests = SavepointRequests()
    _savepoint_after(storage, 3, "first", requests)
    first = run(windowed_job(None, 1500, sink=sink, checkpointing=checkpointing),
                savepoints=requests)
    first_path = _stopped_with_savepoint(first, "first")
    assert first_path.startswith(str(storage / "savepoints" / "savepoint-"))

    requests = SavepointRequests()
    _savepoint_after(storage, 3, "second", requests)
    second = run(windowed_job(None, 1500, sink=sink, checkpointing=checkpointing,
                              window_parallelism=3), savepoints=requests, restore=first_path)
    second_path = _stopped_with_savepoint(second, "second")
    assert second.status.checkpoints is not None
    assert second.status.checkpoints.restored_from == first_path

    rows = int(load_checkpoint(second_path).sources["events"]) + 1500
    third = run(windowed_job(rows, 1500, sink=sink, checkpointing=checkpointing,
                             window_parallelism=1), restore=second_path)
    assert third.job_status is JobStatus.FINISHED, third.error
    assert committed_lines(output) == expected_windows(rows)


def _without_window(rows: int, checkpointing: dict[str, Any], output: Path) -> dict[str, Any]:
    spec = windowed_job(rows, 1500, sink={"type": "file", "args": {"path": str(output)}},
                        checkpointing=checkpointing)
    spec["pipeline"] = [op for op in spec["pipeline"] if op["name"] != "sums"]
    spec["pipeline"][-1]["inputs"] = ["stamped"]
    return spec


def test_state_the_new_plan_lacks_is_refused_unless_allowed(run: RunJob,
                                                            tmp_path: Path) -> None:
    storage = tmp_path / "checkpoints"
    checkpointing = {"interval": "200ms", "storage": str(storage)}
    requests = SavepointRequests()
    _savepoint_after(storage, 2, "before", requests)
    first = run(windowed_job(None, 1500, sink={"type": "discard"},
                             checkpointing=checkpointing), savepoints=requests)
    path = _stopped_with_savepoint(first, "before")
    rows = int(load_checkpoint(path).sources["events"]) + 100

    refused = run(_without_window(rows, checkpointing, tmp_path / "a"), restore=path)
    assert refused.job_status is JobStatus.FAILED
    assert "state of operator(s) 'sums' that the job no longer has" in (refused.error or "")
    allowed = run(_without_window(rows, checkpointing, tmp_path / "b"), restore=path,
                  allow_non_restored_state=True)
    assert allowed.job_status is JobStatus.FINISHED, allowed.error
    assert allowed.operator_metrics()["events"][1] == 100  # on from the savepoint's position

    missing = run(_without_window(rows, checkpointing, tmp_path / "c"),
                  restore=str(tmp_path / "no-such-savepoint"))
    assert missing.job_status is JobStatus.FAILED
    assert f"{tmp_path / 'no-such-savepoint'} does not exist" in (missing.error or "")


def test_a_run_started_from_scratch_is_what_a_restarted_driver_resumes(
        run: RunJob, tmp_path: Path) -> None:
    """A deployment that starts from scratch (a stateless upgrade) over a storage with an
    older deployment's checkpoints, and whose driver dies before its first checkpoint: the
    restarted driver resumes from the new deployment's start, not the old state."""
    storage, output = tmp_path / "checkpoints", tmp_path / "out"
    checkpointing = {"interval": "200ms", "storage": str(storage)}
    requests = SavepointRequests()
    _savepoint_after(storage, 2, "old", requests)
    old = run(windowed_job(None, 1500, sink={"type": "discard"}, checkpointing=checkpointing),
              savepoints=requests)
    _stopped_with_savepoint(old, "old")
    before = completed_checkpoints(storage)[-1]

    stop = threading.Event()
    stop.set()  # the driver is gone before its first epoch
    fresh = run(windowed_job(None, 1500, sink={"type": "discard"},
                             checkpointing=checkpointing), restore="none", stop=stop)
    assert fresh.job_status is JobStatus.CANCELED
    assert completed_checkpoints(storage)[-1] == before + 1

    sink = {"type": "file", "args": {"path": str(output), "format": "json"}}
    restarted = run(windowed_job(3000, 1500, sink=sink, checkpointing=checkpointing))
    assert restarted.job_status is JobStatus.FINISHED, restarted.error
    assert restarted.status.checkpoints is not None
    assert restarted.status.checkpoints.restored_from == str(storage / f"chk-{before + 1}")
    assert committed_lines(output) == expected_windows(3000)  # every row, from the first


def _visible_then_savepoints(storage: Path, output: Path, requests: SavepointRequests,
                             seen: dict[str, Any]) -> None:
    """After the first checkpoint and a few windows: an intermediate savepoint, the output
    visible before and after it, then a stop-with-savepoint."""
    def watch() -> None:
        while not completed_checkpoints(storage):
            time.sleep(0.05)
        time.sleep(1.5)  # windows fire; their part files wait for a commit
        seen["before"] = committed_lines(output)
        requests.request(SavepointRequest("intermediate"))
        while not list((storage / "savepoints").glob("savepoint-*/_metadata")):
            time.sleep(0.02)
        seen["after"] = committed_lines(output)
        requests.request(SavepointRequest("final", stop=True))

    threading.Thread(target=watch, daemon=True).start()


def test_only_a_savepoint_that_stops_the_job_commits_and_it_is_the_latest_checkpoint(
        run: RunJob, tmp_path: Path) -> None:
    """Flink's rule: an intermediate savepoint publishes no side effects (a driver that dies
    after it replays from the last checkpoint, which published nothing newer); a
    stop-with-savepoint does, and is what the storage resumes from next."""
    storage, output = tmp_path / "checkpoints", tmp_path / "out"
    sink = {"type": "file", "args": {"path": str(output), "format": "json"}}
    checkpointing = {"interval": "1h", "storage": str(storage)}  # the first epoch's only
    requests, seen = SavepointRequests(), {}
    _visible_then_savepoints(storage, output, requests, seen)
    result = run(windowed_job(None, 1500, sink=sink, checkpointing=checkpointing),
                 savepoints=requests)
    assert result.job_status is JobStatus.FINISHED, result.error
    assert result.status.checkpoints is not None
    intermediate, final = result.status.checkpoints.savepoints[-2:]
    assert (intermediate.nonce, intermediate.stop, final.nonce, final.stop) == (
        "intermediate", False, "final", True)
    assert intermediate.path is not None and final.path is not None
    assert load_checkpoint(intermediate.path).committables  # windows it did not publish
    assert seen["after"] == seen["before"]
    assert len(committed_lines(output)) > len(seen["after"])  # the stop published them
    assert completed_checkpoints(storage)[-1] == final.checkpoint_id


def test_a_restarted_driver_resumes_its_deployments_own_checkpoint(run: RunJob,
                                                                    tmp_path: Path) -> None:
    """``--deployment``: a driver started again within a deployment that took checkpoints
    resumes from its newest one, not from where the deployment began; another deployment
    from the same savepoint starts there."""
    storage = tmp_path / "checkpoints"
    checkpointing = {"interval": "200ms", "storage": str(storage)}
    job = windowed_job(None, 1500, sink={"type": "discard"}, checkpointing=checkpointing)
    requests = SavepointRequests()
    _savepoint_after(storage, 2, "old", requests)
    origin = _stopped_with_savepoint(run(job, savepoints=requests), "old")

    requests = SavepointRequests()
    _savepoint_after(storage, 2, "d2", requests)
    second = run(job, savepoints=requests, restore=origin, deployment="d2")
    _stopped_with_savepoint(second, "d2")
    assert second.status.checkpoints is not None
    assert second.status.checkpoints.restored_from == origin
    own = completed_checkpoints(storage)[-1]
    assert load_checkpoint(str(storage / f"chk-{own}")).deployment == "d2"

    def restored_from(deployment: str) -> str | None:
        stop = threading.Event()
        stop.set()  # only the restore happens
        result = run(job, restore=origin, deployment=deployment, stop=stop)
        assert result.status.checkpoints is not None
        return result.status.checkpoints.restored_from

    assert restored_from("d2") == str(storage / f"chk-{own}")
    assert restored_from("d3") == origin


def _checkpoint_then_drain(storage: Path, requests: SavepointRequests) -> None:
    """Once the first epoch's checkpoint completed and windows fired: a checkpoint and a stop
    with drain, asked for together (the checkpoint is taken at that boundary, the drain's
    savepoint after the draining epoch)."""
    def watch() -> None:
        while not completed_checkpoints(storage):
            time.sleep(0.05)
        time.sleep(1.0)  # some windows fired; each key's latest is open
        requests.request(SavepointRequest("asked", kind="checkpoint"))
        requests.request(SavepointRequest("drain", stop=True, drain=True))

    threading.Thread(target=watch, daemon=True).start()


def test_a_stop_with_drain_fires_every_open_window_once_and_a_checkpoint_is_asked_for(
        run: RunJob, tmp_path: Path) -> None:
    """Flink's ``stop --drain``: the maximum watermark fires the windows open at the stop, and
    the stop's savepoint publishes them; a job restored from that savepoint has nothing left
    to do. A checkpoint asked for is taken though none is due (the interval is an hour) and
    kept with the periodic ones."""
    storage, output = tmp_path / "checkpoints", tmp_path / "out"
    sink = {"type": "file", "args": {"path": str(output), "format": "json"}}
    checkpointing = {"interval": "1h", "storage": str(storage), "retained": 5}
    requests = SavepointRequests()
    _checkpoint_then_drain(storage, requests)
    result = run(windowed_job(None, 1500, sink=sink, checkpointing=checkpointing),
                 savepoints=requests)
    path = _stopped_with_savepoint(result, "drain")
    assert result.status.checkpoints is not None
    asked = result.status.checkpoints.savepoint("asked")
    drained = result.status.checkpoints.savepoint("drain")
    assert asked is not None and drained is not None
    assert (asked.kind, asked.error, asked.stop) == ("checkpoint", None, False)
    assert asked.checkpoint_id is not None and asked.checkpoint_id > completed_checkpoints(
        storage)[0]  # not the first epoch's, the one periodic checkpoint
    assert asked.path == str(storage / f"chk-{asked.checkpoint_id}")
    assert Path(asked.path, "_metadata").is_file()
    assert (drained.kind, drained.drained) == ("savepoint", True)
    assert drained.checkpoint_id == asked.checkpoint_id + 1  # the draining epoch's

    rows = int(load_checkpoint(path).sources["events"])
    lines = committed_lines(output)
    # The last record's window cannot fire before the watermark passes its end: only the
    # drain's maximum watermark fired it.
    assert any(latest == rows - 1 for _, latest, _, _ in lines)
    assert lines == expected_windows(rows)

    # Restored, its operators stay finished (as Flink's fully finished ones): it ends at once.
    stop = threading.Event()
    guard = threading.Timer(30, stop.set)  # a failure, not a hang, if it ran on
    guard.start()
    resumed = run(windowed_job(None, 1500, sink=sink, checkpointing=checkpointing),
                  restore=path, stop=stop)
    guard.cancel()
    assert resumed.job_status is JobStatus.FINISHED, resumed.error
    assert committed_lines(output) == lines
