"""The DataflowSnapshot objects the operator makes, and what it reads back from them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from dataflow_engine.spec.model import API_GROUP, API_VERSION
from dataflow_operator.resources.meta import LABEL_JOB, MANAGED_BY, JobRef
from dataflow_operator.snapshots.model import (
    LABEL_TRIGGER,
    SNAPSHOT_KIND,
    DataflowSnapshotStatus,
    SnapshotState,
)
from dataflow_operator.snapshots.retention import TakenSnapshot
from dataflow_operator.status import conditions as cond


def snapshot_name(job: JobRef, trigger: str, kind: str, now: datetime) -> str:
    """``<job>-<trigger>[-checkpoint]-<UTC time to the millisecond>``: ``kubectl get
    dfsnap`` lists a job's snapshots in the order they were taken, a periodic savepoint and
    checkpoint due at once apart."""
    what = f"{trigger}-checkpoint" if kind == "checkpoint" else trigger
    return f"{job.name}-{what}-{now.strftime('%Y%m%d-%H%M%S')}-{now.microsecond // 1000:03d}"


def taken_by_operator(job: JobRef, trigger: str, kind: str, now: datetime,
                      path: str | None = None) -> dict[str, Any]:
    """A snapshot the operator takes (``path`` None: the snapshot controller asks the driver
    for it) or took already (``path``: recorded as an import of it). Owned by the job, so
    deleting the job deletes them (its files are kept: no driver is left to dispose of them)."""
    spec: dict[str, Any] = {"jobReference": {"name": job.name}}
    if kind == "checkpoint":
        spec["checkpoint"] = {}
    else:
        spec["savepoint"] = ({"alreadyExists": True, "path": path, "disposeOnDelete": True}
                             if path else {})
    return {
        "apiVersion": f"{API_GROUP}/{API_VERSION}",
        "kind": SNAPSHOT_KIND,
        "metadata": {
            "name": snapshot_name(job, trigger, kind, now),
            "namespace": job.namespace,
            "labels": {LABEL_JOB: job.name, LABEL_TRIGGER: trigger,
                       "app.kubernetes.io/managed-by": MANAGED_BY},
            "ownerReferences": [{**job.owner_reference(), "controller": False}],
        },
        "spec": spec,
    }


def completed(trigger: str, path: str, checkpoint_id: int | None, generation: int,
              trigger_id: str | None = None, since: str | None = None) -> DataflowSnapshotStatus:
    at = cond.now()
    return DataflowSnapshotStatus(
        state=SnapshotState.COMPLETED, trigger_type=trigger, trigger_id=trigger_id,
        trigger_timestamp=since or at, result_timestamp=at, path=path,
        checkpoint_id=checkpoint_id, observed_generation=generation,
        conditions=cond.set_condition([], cond.COMPLETED, True, "Completed",
                                      f"at {path}", generation))


def ended_badly(status: DataflowSnapshotStatus, state: SnapshotState, error: str,
                generation: int) -> DataflowSnapshotStatus:
    """FAILED or ABANDONED, with why."""
    reason = "Failed" if state is SnapshotState.FAILED else "Abandoned"
    message = cond.bounded(error)
    return status.model_copy(update={
        "state": state, "error": message, "result_timestamp": cond.now(),
        "observed_generation": generation,
        "conditions": cond.set_condition(status.conditions, cond.COMPLETED, False, reason,
                                         message, generation)})


def taken_snapshot(obj: dict[str, Any]) -> TakenSnapshot:
    """What retention needs of a listed DataflowSnapshot."""
    status = DataflowSnapshotStatus.model_validate(obj.get("status") or {})
    ended = status.result_timestamp if status.state.final else None
    return TakenSnapshot(
        name=obj["metadata"]["name"],
        kind="checkpoint" if "checkpoint" in (obj.get("spec") or {}) else "savepoint",
        state=status.state,
        ended=cond.parse_time(ended) if ended else None,
        path=status.path)
