"""What the reconciler needs from a backend, whichever runs the driver."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from dataflow_engine.rest import DriverStatusDocument, SavepointTriggerRequest
from dataflow_engine.spec.model import DataflowJobSpec
from dataflow_operator.plan import JobPlan
from dataflow_operator.resources.meta import JobRef
from dataflow_operator.status.model import DeploymentStatus, DriverStatus


class DriverPhase(StrEnum):
    MISSING = "Missing"
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


@dataclass(frozen=True)
class DriverObservation:
    phase: DriverPhase
    #: The runner's status document, when it could be read (and was of this protocol).
    runner: DriverStatusDocument | None = None
    #: Why the driver failed, for status and Events.
    message: str = ""
    #: The plan the running driver was started with.
    plan_hash: str | None = None
    #: Why a pending driver does not run yet (the scheduler's or the kubelet's reason, e.g.
    #: Unschedulable or ImagePullBackOff) and what it said; empty while it just starts.
    pending_reason: str = ""
    pending_message: str = ""


class DriverQueued(RuntimeError):
    """No driver slot is free (the local backend's limit): provisioning waits for one."""


class Backend(Protocol):
    name: str

    def provision(self, job: JobRef, spec: DataflowJobSpec, plan: JobPlan,
                  restart: int, deployment: DeploymentStatus | None = None) -> DriverStatus:
        """Creates what is missing (idempotently) and starts the driver unless it runs; a
        continuous job starts where ``deployment`` says (``dataflow run --restore``)."""
        ...

    def request_savepoint(self, job: JobRef, request: SavepointTriggerRequest) -> None:
        """Asks the running driver for a savepoint (its ``POST /savepoints``); raises when
        the driver cannot be reached or refuses."""
        ...

    def dispose_savepoint(self, job: JobRef, path: str) -> bool:
        """Asks the running driver to delete a savepoint of its job (its ``POST
        /savepoints/dispose``, which refuses any other path); False when it was gone already.
        Raises when the driver cannot be reached or refuses."""
        ...

    def forget(self, job: JobRef) -> None:
        """The job is deleted: drop what the backend keeps of it outside Kubernetes."""

    def clean_up(self, job: JobRef) -> bool:
        """A finished job's time to live ran out: deletes its driver (and so its executors) and
        what belongs to that run only. True when there was something to delete."""
        ...

    def stop_driver(self, job: JobRef) -> None:
        """Stops the driver (and with it the executors); keeps the job's other objects."""
        ...

    def snapshot(self, jobs: list[JobRef]) -> object:
        """One bulk read per monitor cycle, shared by that cycle's observations."""
        ...

    def observe(self, job: JobRef, snapshot: object = None) -> DriverObservation: ...

