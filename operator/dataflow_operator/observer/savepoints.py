"""Savepoints as a driver reports them, folded into ``status.savepoints``.

A driver takes a savepoint at its next epoch boundary and lists it (or why it failed) in its
status document under the request's id; the operator moves it into ``status.savepoints`` with
an Event, as flink-kubernetes-operator keeps ``savepointInfo``.
"""

from __future__ import annotations

from typing import Any

from dataflow_engine.rest import DriverStatusDocument, SavepointEntry
from dataflow_operator.status import conditions as cond
from dataflow_operator.status.events import NORMAL, WARNING, Event
from dataflow_operator.status.model import (
    SAVEPOINT_HISTORY,
    DataflowJobStatus,
    DeploymentStatus,
    PendingSavepoint,
    SavepointInfo,
    SavepointsStatus,
)

MANUAL, UPGRADE, SUSPEND = "manual", "upgrade", "suspend"


def reported(runner: DriverStatusDocument | None, request: str) -> SavepointEntry | None:
    """The driver's record of a request, once it took (or failed) it."""
    if runner is None or runner.checkpoints is None:
        return None
    return runner.checkpoints.savepoint(request)


def pending(savepoints: SavepointsStatus, request: str, trigger_type: str,
            trigger_nonce: int | None = None) -> SavepointsStatus:
    return savepoints.model_copy(update={"pending": PendingSavepoint(
        request=request, trigger_type=trigger_type, trigger_nonce=trigger_nonce,
        since=cond.now())})


def resolved(savepoints: SavepointsStatus, outcome: SavepointEntry | str, trigger_type: str,
             trigger_nonce: int | None = None
             ) -> tuple[SavepointsStatus, SavepointInfo | None, Event]:
    """The status after a savepoint's ``outcome``: the driver's entry, or why the operator
    got none (a string). A completed one is recorded in the history, a failed one's error
    kept; the pending request is gone."""
    update: dict[str, Any] = {"pending": None}
    if trigger_type == MANUAL:
        update["last_trigger_nonce"] = trigger_nonce
    savepoints = savepoints.model_copy(update=update)
    if isinstance(outcome, str) or not outcome.completed or outcome.path is None:
        error = outcome if isinstance(outcome, str) else outcome.error
        savepoints = failed(savepoints, error or "the driver reported no path")
        return (savepoints, None, Event(WARNING, "SavepointFailed",
                                        f"{trigger_type} savepoint failed: "
                                        f"{savepoints.last_error}"))
    info = SavepointInfo(path=outcome.path, time=cond.from_millis(outcome.time),
                         checkpoint_id=outcome.checkpoint_id, trigger_type=trigger_type,
                         trigger_nonce=trigger_nonce)
    return (completed(savepoints, info), info,
            Event(NORMAL, "SavepointCompleted", f"{trigger_type} savepoint {info.checkpoint_id} "
                  f"at {outcome.path}"))


def completed(savepoints: SavepointsStatus, info: SavepointInfo) -> SavepointsStatus:
    """``info`` is the newest savepoint, at the end of the bounded history; no error stays."""
    return savepoints.model_copy(update={
        "last": info, "last_error": None,
        "history": [*savepoints.history, info][-SAVEPOINT_HISTORY:]})


def failed(savepoints: SavepointsStatus, error: str) -> SavepointsStatus:
    """The last savepoint asked for failed with ``error``."""
    return savepoints.model_copy(update={"last_error": cond.bounded(error)})


def stopped_with(status: DataflowJobStatus, path: str) -> DataflowJobStatus:
    """The driver stopped with the savepoint at ``path``: the deployment's state is there."""
    deployment = status.deployment or DeploymentStatus(
        id="", generation=status.deployed_generation or 0, restore_from="latest")
    return status.model_copy(update={"deployment": deployment.model_copy(
        update={"stopped_with_savepoint": path})})


def named(status: DataflowJobStatus, info: SavepointInfo) -> DataflowJobStatus:
    """The status with the savepoint at ``info.path`` naming the DataflowSnapshot that
    records it (``info.snapshot``)."""
    savepoints = status.savepoints

    def rename(entry: SavepointInfo | None) -> SavepointInfo | None:
        return info if entry is not None and entry.path == info.path else entry

    return status.model_copy(update={"savepoints": savepoints.model_copy(update={
        "last": rename(savepoints.last),
        "history": [rename(e) or e for e in savepoints.history]})})
