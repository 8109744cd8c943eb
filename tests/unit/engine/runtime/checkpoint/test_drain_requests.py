"""Drain and checkpoint requests without Spark: how a trigger request reaches the run, what an
epoch boundary makes of them (a checkpoint asked for is taken when none is due; a drain waits
for its draining epoch only once its savepoint can be taken), and what the status records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dataflow_engine.rest import (
    SavepointEntry,
    SavepointFailureReason,
    SavepointTriggerResponse,
    parse_savepoint_response,
)
from dataflow_engine.runtime.checkpoint.coordinator import CheckpointCoordinator
from dataflow_engine.runtime.checkpoint.restore import VertexShape
from dataflow_engine.runtime.checkpoint.savepoints import SavepointRequest, SavepointRequests
from dataflow_engine.runtime.checkpoint.snapshots import OperatorSnapshot, SubtaskSnapshot
from dataflow_engine.runtime.checkpoint.storage import load_checkpoint
from dataflow_engine.runtime.jobmaster.epochs import ContinuousExecution
from dataflow_engine.runtime.jobmaster.rest_server import savepoint_action
from dataflow_engine.runtime.time.durations import MIN_TIMESTAMP
from dataflow_engine.spec.model import CheckpointingSpec

pytestmark = pytest.mark.unit

SHAPES = {"v": VertexShape("v", 1, 128, ("w",))}
STATES = {"v": (SubtaskSnapshot({"w": OperatorSnapshot({3: {"a": 1}}, None, MIN_TIMESTAMP)})
                .to_bytes(),)}
NOW = 100.0


def _coordinator(checkpointing: dict[str, Any] | None) -> CheckpointCoordinator:
    coordinator = CheckpointCoordinator(
        CheckpointingSpec.model_validate(checkpointing) if checkpointing else None, SHAPES,
        [], [], SavepointRequests(), clock=lambda: NOW)
    coordinator.restore("none")
    return coordinator


def _execution(coordinator: CheckpointCoordinator, epoch: int = 4) -> ContinuousExecution:
    """The epoch loop's boundary logic over ``coordinator``, without Spark or sources."""
    execution = ContinuousExecution.__new__(ContinuousExecution)
    execution.coordinator, execution.sources, execution.draining = coordinator, [], []
    execution.restores, execution.epoch = dict(STATES), epoch
    return execution


def _entry(coordinator: CheckpointCoordinator, nonce: str) -> SavepointEntry:
    entry = coordinator.stats.savepoint(nonce)
    assert entry is not None, nonce
    return entry


def test_drain_and_kind_reach_the_run_and_are_echoed() -> None:
    requests = SavepointRequests()
    requests.accepting = True
    drain = savepoint_action(requests, {"nonce": "d", "stop": True, "drain": True})
    checkpoint = savepoint_action(requests, {"nonce": "c", "kind": "checkpoint"})
    assert requests.take() == [SavepointRequest("d", stop=True, drain=True),
                               SavepointRequest("c", kind="checkpoint")]
    assert (drain.drain, drain.kind, checkpoint.drain, checkpoint.kind) == (
        True, "savepoint", False, "checkpoint")
    for body in ({"nonce": "n", "drain": True}, {"nonce": "n", "kind": "checkpoint",
                                                 "stop": True},
                 {"nonce": "n", "kind": "full"}):
        with pytest.raises(ValueError, match="not a savepoint request"):
            savepoint_action(requests, body)
    assert requests.take() == []
    # An older driver ignores the fields and does not echo them: its caller can tell.
    older = parse_savepoint_response({"accepted": True, "nonce": "d", "stop": True})
    assert older is not None and not older.drain
    assert parse_savepoint_response(SavepointTriggerResponse(
        nonce="c", kind="checkpoint").to_json()) == checkpoint


def test_an_entry_says_what_was_taken_and_whether_it_drained() -> None:
    wire = SavepointEntry(nonce="d", time=1, checkpoint_id=9, path="/s/savepoint-9-ab",
                          stop=True, drained=True).to_json()
    assert (wire["kind"], wire["drained"]) == ("savepoint", True)
    assert SavepointEntry.model_validate({"nonce": "old", "time": 1}).kind == "savepoint"


def test_a_checkpoint_asked_for_is_taken_when_none_is_due(tmp_path: Path) -> None:
    coordinator = _coordinator({"interval": "1h", "storage": str(tmp_path), "retained": 1})
    execution = _execution(coordinator, epoch=3)
    assert not execution._boundary(NOW, end=False)  # the run's first periodic one
    execution.epoch = 4
    execution._boundary(NOW, end=False)
    assert coordinator.stats.completed == 1  # the next is due in an hour
    assert not (tmp_path / "chk-4").exists()

    coordinator.savepoints.request(SavepointRequest("asked", kind="checkpoint"))
    assert not execution._boundary(NOW, end=False)
    entry = _entry(coordinator, "asked")
    assert (entry.kind, entry.checkpoint_id, entry.path, entry.stop, entry.error) == (
        "checkpoint", 4, str(tmp_path / "chk-4"), False, None)
    assert load_checkpoint(str(tmp_path / "chk-4")).checkpoint_id == 4
    assert coordinator.stats.completed == 2
    assert not (tmp_path / "chk-3").exists()  # retained: 1, as for periodic checkpoints

    execution.epoch = 5
    coordinator.savepoints.request(SavepointRequest("again", kind="checkpoint"))
    execution._boundary(NOW, end=False)
    assert _entry(coordinator, "again").path == str(tmp_path / "chk-5")
    assert not (tmp_path / "chk-4").exists()
    assert not list(tmp_path.glob("savepoints/*"))  # it is no savepoint
    coordinator.close()


def test_a_checkpoint_asked_for_without_durable_storage_fails_naming_the_setting() -> None:
    coordinator = _coordinator({"interval": "1h"})  # checkpoints kept in memory only
    execution = _execution(coordinator)
    execution._boundary(NOW, end=False)
    assert coordinator.stats.completed == 1
    coordinator.savepoints.request(SavepointRequest("asked", kind="checkpoint"))
    execution._boundary(NOW, end=False)
    entry = _entry(coordinator, "asked")
    assert (entry.kind, entry.reason, entry.path) == (
        "checkpoint", SavepointFailureReason.NO_DIRECTORY, None)
    assert entry.error is not None and "spec.checkpointing.storage" in entry.error
    assert coordinator.stats.completed == 1
    coordinator.close()


def test_a_drain_that_cannot_be_taken_fails_before_it_ends_event_time(tmp_path: Path) -> None:
    without = _coordinator(None)
    execution = _execution(without)
    without.savepoints.request(SavepointRequest("nowhere", stop=True, drain=True))
    assert not execution._boundary(NOW, end=False)
    assert execution.draining == []  # no draining epoch follows
    entry = _entry(without, "nowhere")
    assert (entry.reason, entry.stop, entry.drained) == (
        SavepointFailureReason.NO_DIRECTORY, True, False)

    coordinator = _coordinator({"interval": "1h", "storage": str(tmp_path)})
    execution = _execution(coordinator)
    coordinator.savepoints.request(SavepointRequest(
        "upgrade", stop=True, drain=True, upgrade_to=(VertexShape("v2", 1, 128, ("x",)),)))
    assert not execution._boundary(NOW, end=False)
    assert execution.draining == []
    assert _entry(coordinator, "upgrade").reason is SavepointFailureReason.UPGRADE_REFUSED
    without.close()
    coordinator.close()


def test_a_drain_is_taken_after_its_draining_epoch(tmp_path: Path) -> None:
    coordinator = _coordinator({"interval": "1h", "storage": str(tmp_path)})
    execution = _execution(coordinator)
    request = SavepointRequest("drain", stop=True, drain=True)
    coordinator.savepoints.request(request)
    assert not execution._boundary(NOW, end=False)  # the job runs the draining epoch next
    assert execution.draining == [request]
    assert coordinator.stats.savepoint("drain") is None

    execution.epoch = 5
    assert execution._drained(NOW, end=False)
    entry = _entry(coordinator, "drain")
    assert (entry.stop, entry.drained, entry.checkpoint_id, entry.error) == (True, True, 5, None)
    assert entry.path is not None and load_checkpoint(entry.path).checkpoint_id == 5
    assert execution.draining == []
    coordinator.close()


def test_a_drain_whose_savepoint_then_fails_fails_the_job(tmp_path: Path) -> None:
    """The restart resumes from the checkpoint before the drain: none of the drained state
    may be stored, even with a checkpoint due at every boundary."""
    coordinator = _coordinator({"interval": "0ms", "storage": str(tmp_path)})
    execution = _execution(coordinator)
    coordinator.savepoints.request(SavepointRequest("drain", stop=True, drain=True))
    execution._boundary(NOW, end=False)
    assert (tmp_path / "chk-4").is_dir()
    (tmp_path / "savepoints").write_text("not a directory")  # the write will fail
    execution.epoch = 5
    with pytest.raises(RuntimeError, match="event time ended, but its savepoint failed"):
        execution._drained(NOW, end=False)
    assert _entry(coordinator, "drain").reason is SavepointFailureReason.STORAGE_FAILED
    assert not (tmp_path / "chk-5").exists()
    latest = coordinator.storage.latest()
    assert latest is not None and latest.checkpoint_id == 4
    coordinator.close()


def test_a_drain_fails_when_another_stop_or_the_job_ends_first(tmp_path: Path) -> None:
    coordinator = _coordinator({"interval": "1h", "storage": str(tmp_path)})
    execution = _execution(coordinator)
    coordinator.savepoints.request(SavepointRequest("drain", stop=True, drain=True))
    coordinator.savepoints.request(SavepointRequest("plain", stop=True))
    assert execution._boundary(NOW, end=False)  # the plain stop stopped the job at once
    assert _entry(coordinator, "plain").error is None
    assert _entry(coordinator, "drain").reason is SavepointFailureReason.JOB_ENDED
    assert execution.draining == []

    coordinator.savepoints.request(SavepointRequest("cancelled", stop=True, drain=True))
    execution._boundary(NOW, end=False)
    execution.close()  # cancelled before its draining epoch
    assert _entry(coordinator, "cancelled").reason is SavepointFailureReason.JOB_ENDED


def test_at_the_jobs_end_a_drain_is_taken_at_once(tmp_path: Path) -> None:
    """Every source ended in this epoch: every vertex has drained already."""
    coordinator = _coordinator({"interval": "1h", "storage": str(tmp_path)})
    execution = _execution(coordinator)
    coordinator.savepoints.request(SavepointRequest("drain", stop=True, drain=True))
    assert execution._boundary(NOW, end=True)
    entry = _entry(coordinator, "drain")
    assert (entry.drained, entry.error) == (True, None)
    assert execution.draining == []
    coordinator.close()
