"""The operator's side of savepoints: what it asks a driver for, and what it records.

A driver takes a savepoint at its next epoch boundary and lists it (or why it failed) in its
status document under the request's id; the operator moves it into ``status.savepoints`` with
an Event, as flink-kubernetes-operator keeps ``savepointInfo``. For an upgrade the request
carries the new plan's vertices, so the running driver checks that the new plan can take its
state before it stops: a refused upgrade leaves the job running.
"""

from __future__ import annotations

import uuid
from typing import Any

from dataflow_engine.compiler import CompiledJob
from dataflow_operator import conditions as cond
from dataflow_operator.reconciler import NORMAL, WARNING, Event
from dataflow_operator.status_model import (
    SAVEPOINT_HISTORY,
    PendingSavepoint,
    SavepointInfo,
    SavepointsStatus,
)

MANUAL, UPGRADE, SUSPEND = "manual", "upgrade", "suspend"


def request_id(trigger_type: str) -> str:
    return f"{trigger_type}-{uuid.uuid4().hex[:12]}"


def request_body(request: str, *, stop: bool, upgrade_to: CompiledJob | None = None,
                 allow_non_restored_state: bool = False) -> dict[str, Any]:
    """The driver's ``POST /savepoints`` body."""
    body: dict[str, Any] = {"nonce": request, "stop": stop}
    if upgrade_to is not None:
        body["upgradeTo"] = {
            "vertices": [{"id": v.id, "parallelism": v.parallelism,
                          "maxParallelism": v.max_parallelism,
                          "operatorUids": [node.uid for node in v.operators]}
                         for v in upgrade_to.job_graph.vertices],
            "allowNonRestoredState": allow_non_restored_state}
    return body


def reported(runner: dict[str, Any] | None, request: str) -> dict[str, Any] | None:
    """The driver's record of a request, once it took (or failed) it."""
    checkpoints = (runner or {}).get("checkpoints")
    if not isinstance(checkpoints, dict):
        return None
    for entry in checkpoints.get("savepoints") or []:
        if isinstance(entry, dict) and entry.get("nonce") == request:
            return entry
    return None


def pending(savepoints: SavepointsStatus, request: str, trigger_type: str,
            trigger_nonce: int | None = None) -> SavepointsStatus:
    return savepoints.model_copy(update={"pending": PendingSavepoint(
        request=request, trigger_type=trigger_type, trigger_nonce=trigger_nonce,
        since=cond.now())})


def resolved(savepoints: SavepointsStatus, entry: dict[str, Any], trigger_type: str,
             trigger_nonce: int | None = None
             ) -> tuple[SavepointsStatus, SavepointInfo | None, Event]:
    """The status after the driver reported a savepoint (``entry``): recorded in the history
    when it completed, its error kept when it failed; the pending request is gone."""
    update: dict[str, Any] = {"pending": None}
    if trigger_type == MANUAL:
        update["last_trigger_nonce"] = trigger_nonce
    error, path = entry.get("error"), entry.get("path")
    if error or not isinstance(path, str):
        update["last_error"] = cond.bounded(str(error or "the driver reported no path"))
        return (savepoints.model_copy(update=update), None,
                Event(WARNING, "SavepointFailed", f"{trigger_type} savepoint failed: "
                      f"{update['last_error']}"))
    stamp = entry.get("time")
    when = cond.from_millis(stamp) if isinstance(stamp, int | float) else cond.now()
    info = SavepointInfo(path=path, time=when, checkpoint_id=entry.get("id"),
                         trigger_type=trigger_type, trigger_nonce=trigger_nonce)
    update.update(last=info, history=[*savepoints.history, info][-SAVEPOINT_HISTORY:],
                  last_error=None)
    return (savepoints.model_copy(update=update), info,
            Event(NORMAL, "SavepointCompleted", f"{trigger_type} savepoint {info.checkpoint_id} "
                  f"at {path}"))
