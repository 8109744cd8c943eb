"""What the reconciler decides and the controller carries out through a backend.

A decision is data: the status to record, the Events that explain it, and the actions that
bring the driver there. Actions run first; the Events are posted and the status written only
once they succeeded, so a failed action leaves no status claiming it happened.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dataflow_operator.status.events import Event
from dataflow_operator.status.model import DataflowJobStatus, DeploymentStatus


@dataclass(frozen=True)
class StopDriver:
    """Stop the driver (and so its executors); the job's other objects stay."""


@dataclass(frozen=True)
class Provision:
    """Create what is missing and start the driver from ``deployment``; the driver it
    reports goes into ``status.driver``."""

    restart: int
    deployment: DeploymentStatus | None


@dataclass(frozen=True)
class ScheduleRestart:
    """Start the driver again once ``after`` seconds have passed (the restart strategy's
    delay); the monitor carries it out when it is due."""

    after: float


@dataclass(frozen=True)
class CleanUp:
    """Delete a finished job's driver (its time to live ran out); ``deleted`` is posted when
    there was something to delete."""

    deleted: Event


@dataclass(frozen=True)
class AdoptRunning:
    """Read back the spec of the deployment that keeps running (its plan ConfigMap), so that
    an operator that restarted observes it again."""


Action = StopDriver | Provision | ScheduleRestart | CleanUp | AdoptRunning


@dataclass
class Reconciled:
    """The reconciler's answer: carry out ``actions``, then post ``events`` and record
    ``status``. ``interim`` is what the job's record holds while the actions run, so an
    action that fails is reported against it. ``retry`` asks to reconcile again later (the
    status is recorded first)."""

    status: DataflowJobStatus
    events: list[Event] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    interim: DataflowJobStatus | None = None
    retry: str | None = None
