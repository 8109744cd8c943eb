"""Which of the snapshots the operator took of a job are deleted (flink-kubernetes-operator's
savepoint history: at most ``historyMaxCount``, none older than ``historyMaxAge``).

Only snapshots the operator took count (those with a trigger label): never one a user created
or imported. Nor are these ever deleted: the newest completed one of each kind, one being
taken, and one whose path the job would restore from (its deployment's start or stop
savepoint). Checkpoint snapshots are kept as the job's checkpoints are
(``checkpointing.retained``, whatever their age): older ones name deleted checkpoints.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from dataflow_engine.spec.model import PeriodicSavepointSpec, duration_seconds
from dataflow_operator.snapshots.model import SnapshotState
from dataflow_operator.status.model import DataflowJobStatus


@dataclass(frozen=True)
class TakenSnapshot:
    """What retention needs of one DataflowSnapshot the operator took."""

    name: str
    kind: str
    state: SnapshotState
    #: When it completed or failed; None while it is being taken.
    ended: datetime | None
    path: str | None


def protected_paths(status: DataflowJobStatus) -> set[str]:
    """Paths the job would restore from: never deleted, however old."""
    deployment = status.deployment
    paths = set()
    if deployment is not None:
        paths.add(deployment.restore_from)
        if deployment.stopped_with_savepoint is not None:
            paths.add(deployment.stopped_with_savepoint)
    return paths


def expired(snapshots: Iterable[TakenSnapshot], history: PeriodicSavepointSpec,
            protected: set[str], now: datetime, checkpoints_retained: int = 1) -> list[str]:
    """The names of the snapshots to delete, oldest first: savepoints as the history says,
    checkpoints as the job's checkpoint retention keeps their files (``checkpoints_retained``
    newest, however old)."""
    max_age = timedelta(seconds=duration_seconds(history.history_max_age))
    doomed: list[TakenSnapshot] = []
    limits = {"savepoint": (history.history_max_count, max_age),
              "checkpoint": (checkpoints_retained, None)}
    for kind, (count, age) in limits.items():
        ended = sorted((s for s in snapshots if s.kind == kind and s.ended is not None),
                       key=lambda s: s.ended or now, reverse=True)
        newest = next((s for s in ended if s.state is SnapshotState.COMPLETED), None)
        for index, snapshot in enumerate(ended):
            assert snapshot.ended is not None
            if snapshot is newest or (snapshot.path is not None and snapshot.path in protected):
                continue
            if index >= count or (age is not None and now - snapshot.ended > age):
                doomed.append(snapshot)
    return [s.name for s in sorted(doomed, key=lambda s: s.ended or now)]
