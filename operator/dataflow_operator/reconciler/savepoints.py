"""Savepoints the operator asks for: a changed ``savepointTriggerNonce`` (manual), and the
stop-with-savepoint an upgrade or a suspend of a stateful continuous job needs.

For an upgrade the request carries the new plan's vertices, so the running driver checks that
the new plan can take its state before it stops: a refused upgrade leaves the job running.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from dataflow_engine.graph.states import JobStatus
from dataflow_engine.rest import (
    DriverStatusDocument,
    SavepointEntry,
    SavepointTriggerRequest,
    upgrade_target,
)
from dataflow_engine.spec.model import DataflowJobSpec
from dataflow_operator.observer import savepoints as observed
from dataflow_operator.observer.savepoints import MANUAL, SUSPEND
from dataflow_operator.plan import JobPlan
from dataflow_operator.reconciler.actions import Reconciled
from dataflow_operator.status import conditions as cond
from dataflow_operator.status.events import NORMAL, Event
from dataflow_operator.status.model import DataflowJobStatus


@dataclass(frozen=True)
class SavepointRequest:
    """Ask the running driver for a savepoint; ``stop`` ends the job with it."""

    request: str
    trigger_type: str
    stop: bool
    upgrade_to: JobPlan | None = None
    allow_non_restored_state: bool = False
    #: Send the maximum watermark through the job first (a suspend with drainOnSuspend).
    drain: bool = False

    @classmethod
    def new(cls, trigger_type: str, *, stop: bool, upgrade_to: JobPlan | None = None,
            allow_non_restored_state: bool = False, drain: bool = False) -> SavepointRequest:
        return cls(f"{trigger_type}-{uuid.uuid4().hex[:12]}", trigger_type, stop, upgrade_to,
                   allow_non_restored_state, drain)

    @property
    def adopts_spec(self) -> bool:
        """A suspend takes the new spec at once (the monitor stops looking at the job while
        its savepoint is taken, or retried); an upgrade keeps the running deployment's spec
        until its savepoint lets the new one deploy."""
        return self.trigger_type == SUSPEND

    def message(self) -> SavepointTriggerRequest:
        """The driver's ``POST /savepoints`` request."""
        return SavepointTriggerRequest(
            nonce=self.request, stop=self.stop, drain=self.drain,
            upgrade_to=(upgrade_target(self.upgrade_to.compiled, self.allow_non_restored_state)
                        if self.upgrade_to is not None else None))


def manual_savepoint(spec: DataflowJobSpec, status: DataflowJobStatus,
                     runner: DriverStatusDocument | None, now: datetime,
                     timeout: float) -> Reconciled | SavepointRequest | None:
    """savepointTriggerNonce: a changed nonce asks the running driver for a savepoint (the
    request, to carry out); a later look finds its outcome in the driver's status, or gives
    up after ``timeout`` seconds. None: nothing to do."""
    savepoints = status.savepoints
    nonce = spec.job.savepoint_trigger_nonce
    if savepoints.pending is not None:
        outcome: SavepointEntry | str | None = observed.reported(runner,
                                                                  savepoints.pending.request)
        if outcome is None and status.job_status is JobStatus.RUNNING:
            if now - cond.parse_time(savepoints.pending.since) < timedelta(seconds=timeout):
                return None
            outcome = f"not reported within {timeout:g} s"
        savepoints, _, event = observed.resolved(
            savepoints, outcome or "the job stopped before taking it", MANUAL,
            savepoints.pending.trigger_nonce)
        return Reconciled(status.model_copy(update={"savepoints": savepoints}), [event])
    if (nonce is not None and nonce != savepoints.last_trigger_nonce
            and status.job_status is JobStatus.RUNNING):
        return SavepointRequest.new(MANUAL, stop=False)
    return None


def manual_requested(spec: DataflowJobSpec, status: DataflowJobStatus,
                     request: SavepointRequest, refused: str | None) -> Reconciled:
    """The manual request was sent (pending until the driver reports it), or the driver
    ``refused`` it (failed at once)."""
    nonce = spec.job.savepoint_trigger_nonce
    if refused is not None:
        savepoints, _, event = observed.resolved(
            status.savepoints, f"the driver cannot take it: {refused}", MANUAL, nonce)
    else:
        savepoints = observed.pending(status.savepoints, request.request, MANUAL, nonce)
        event = Event(NORMAL, "SavepointTriggered",
                      f"savepoint asked for (savepointTriggerNonce {nonce})")
    return Reconciled(status.model_copy(update={"savepoints": savepoints}), [event])
