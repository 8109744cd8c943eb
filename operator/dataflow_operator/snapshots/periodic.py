"""When the operator asks a running job for its next periodic savepoint or checkpoint.

As flink-kubernetes-operator's periodic savepoints: one is due an interval after the later of
the job's start, the last one asked for and the newest savepoint of any trigger (a manual or
upgrade savepoint counts as the periodic one).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from dataflow_engine.graph.states import JobStatus
from dataflow_engine.spec.model import DataflowJobSpec, duration_seconds
from dataflow_operator.status import conditions as cond
from dataflow_operator.status.model import DataflowJobStatus

SAVEPOINT, CHECKPOINT = "savepoint", "checkpoint"


def interval(spec: DataflowJobSpec, kind: str) -> timedelta | None:
    """The job's interval for ``kind``; None when it takes none on a schedule."""
    text = (spec.job.savepoint.interval if kind == SAVEPOINT
            else spec.job.checkpoint.interval if spec.job.checkpoint is not None else None)
    return timedelta(seconds=duration_seconds(text)) if text is not None else None


def due(spec: DataflowJobSpec, status: DataflowJobStatus, kind: str, now: datetime,
        in_flight: bool) -> bool:
    """A periodic ``kind`` is due: the job runs, none is being taken, and an interval passed
    since the job started, the last one was asked for, and (savepoints) the newest one of any
    trigger completed."""
    every = interval(spec, kind)
    if every is None or in_flight or status.job_status is not JobStatus.RUNNING:
        return False
    savepoints = status.savepoints
    times = [status.start_time,
             savepoints.periodic_triggered if kind == SAVEPOINT
             else savepoints.periodic_checkpoint_triggered]
    if kind == SAVEPOINT and savepoints.last is not None:
        times.append(savepoints.last.time)
    known = [cond.parse_time(t) for t in times if t is not None]
    return not known or now - max(known) >= every


def triggered(status: DataflowJobStatus, kind: str, now: str) -> DataflowJobStatus:
    """The status once a periodic ``kind`` was asked for at ``now``."""
    key = "periodic_triggered" if kind == SAVEPOINT else "periodic_checkpoint_triggered"
    return status.model_copy(update={"savepoints": status.savepoints.model_copy(
        update={key: now})})
