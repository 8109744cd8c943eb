"""The checkpoint coordinator without Spark: where a run starts, checkpoints and savepoints at
an epoch boundary, and the reasons a savepoint fails, as the status document reports them."""

from __future__ import annotations

from pathlib import Path

import pytest

from dataflow_engine.rest import SavepointFailureReason
from dataflow_engine.runtime.checkpoint.coordinator import CheckpointCoordinator
from dataflow_engine.runtime.checkpoint.restore import VertexShape
from dataflow_engine.runtime.checkpoint.savepoints import (
    UPGRADE_REFUSED,
    SavepointRequest,
    SavepointRequests,
)
from dataflow_engine.runtime.checkpoint.snapshots import OperatorSnapshot, SubtaskSnapshot
from dataflow_engine.runtime.checkpoint.storage import load_checkpoint
from dataflow_engine.runtime.time.durations import MIN_TIMESTAMP
from dataflow_engine.spec.model import CheckpointingSpec

pytestmark = pytest.mark.unit

SHAPES = {"v": VertexShape("v", 1, 128, ("w",))}
STATES = {"v": (SubtaskSnapshot({"w": OperatorSnapshot({3: {"a": 1}}, None, MIN_TIMESTAMP)})
                .to_bytes(),)}


def _coordinator(storage: Path | None) -> CheckpointCoordinator:
    checkpointing = (CheckpointingSpec.model_validate({"interval": "1h", "storage": str(storage)})
                     if storage is not None else None)
    return CheckpointCoordinator(checkpointing, SHAPES, [], [], SavepointRequests(),
                                 clock=lambda: 100.0)


def test_a_checkpoint_and_savepoints_at_an_epoch_boundary(tmp_path: Path) -> None:
    coordinator = _coordinator(tmp_path)
    start = coordinator.restore("none")
    assert (start.epoch, start.restores, start.positions) == (1, {}, {})
    assert coordinator.savepoints.accepting
    assert coordinator.checkpoint_due(100.0)

    coordinator.checkpoint(coordinator.snapshot(2, {"src": 7}, STATES), 100.0, final=False)
    last = coordinator.stats.last_completed
    assert coordinator.stats.completed == 1 and last is not None
    assert (last.id, last.path) == (2, str(tmp_path / "chk-2"))
    assert not coordinator.checkpoint_due(100.0)  # the interval is an hour

    refused = SavepointRequest("upgrade", stop=True,
                               upgrade_to=(VertexShape("v2", 1, 128, ("other",)),))
    assert not coordinator.savepoint(refused, coordinator.snapshot(3, {"src": 9}, STATES))
    assert coordinator.savepoint(SavepointRequest("manual"),
                                 coordinator.snapshot(3, {"src": 9}, STATES))
    failed, taken = coordinator.stats.savepoints
    assert (failed.nonce, failed.reason, failed.stop, failed.path) == (
        "upgrade", SavepointFailureReason.UPGRADE_REFUSED, True, None)
    assert failed.error is not None and failed.error.startswith(UPGRADE_REFUSED)
    assert (taken.nonce, taken.reason, taken.error, taken.checkpoint_id) == (
        "manual", None, None, 3)
    assert taken.path is not None and load_checkpoint(taken.path).sources == {"src": 9}

    coordinator.savepoints.request(SavepointRequest("late"))
    coordinator.close()
    late = coordinator.stats.savepoint("late")
    assert late is not None and late.reason is SavepointFailureReason.JOB_ENDED
    assert not coordinator.savepoints.accepting


def test_a_savepoint_without_a_directory_fails_with_its_reason() -> None:
    coordinator = _coordinator(None)
    coordinator.restore("none")
    assert not coordinator.checkpoint_due(100.0)  # no periodic checkpoints configured
    assert not coordinator.savepoint(SavepointRequest("n"), coordinator.snapshot(1, {}, STATES))
    entry = coordinator.stats.savepoint("n")
    assert entry is not None and entry.reason is SavepointFailureReason.NO_DIRECTORY
    coordinator.close()


def test_a_restarted_run_resumes_from_the_latest_checkpoint(tmp_path: Path) -> None:
    first = _coordinator(tmp_path)
    first.restore("none")
    first.checkpoint(first.snapshot(5, {"src": 50}, STATES), 100.0, final=True)
    first.close()

    again = _coordinator(tmp_path)
    start = again.restore("latest")
    assert (start.epoch, start.positions, set(start.restores)) == (5, {"src": 50}, {"v"})
    assert again.stats.restored_from == str(tmp_path / "chk-5")
    again.close()
