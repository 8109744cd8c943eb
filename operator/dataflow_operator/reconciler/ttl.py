"""ttlSecondsAfterFinished: a job that ended long enough ago loses its pods, and keeps its
resource and status (as a Kubernetes Job's TTL, but the object stays)."""

from __future__ import annotations

from datetime import datetime, timedelta

from dataflow_engine.spec.model import DataflowJobSpec
from dataflow_operator.reconciler.actions import CleanUp, Reconciled
from dataflow_operator.status import conditions as cond
from dataflow_operator.status.events import NORMAL, Event
from dataflow_operator.status.model import DataflowJobStatus


def expired(spec: DataflowJobSpec | None, status: DataflowJobStatus, now: datetime) -> bool:
    """The job ended longer than its TTL ago and its driver is still there. ``status.driver``
    goes with the pods: a job without it is cleaned up, also after an operator restart."""
    if (spec is None or spec.ttl_seconds_after_finished is None or status.job_status is None
            or not status.job_status.is_globally_terminal or status.end_time is None
            or status.driver is None):
        return False
    ttl = timedelta(seconds=spec.ttl_seconds_after_finished)
    return now >= cond.parse_time(status.end_time) + ttl


def clean_up(spec: DataflowJobSpec, status: DataflowJobStatus) -> Reconciled:
    """The driver deleted, ``status.driver`` gone."""
    return Reconciled(status.model_copy(update={"driver": None}), actions=[CleanUp(Event(
        NORMAL, "CleanedUp", f"the job ended {spec.ttl_seconds_after_finished} s ago or more "
        "(ttlSecondsAfterFinished): its driver was deleted"))])
