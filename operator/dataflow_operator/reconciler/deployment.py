"""What a spec change does to a job's deployment: the first deploy, an upgrade (stateless,
savepoint or last-state), a suspend, a resume, a refused upgrade, an invalid spec.

``reconcile_spec`` is a pure function of the new spec and plan, the job's status and what
was observed of its driver. An upgrade or suspend of a stateful continuous job that still
runs first needs a stop-with-savepoint: the answer is then a :class:`SavepointRequest`;
the controller takes it, folds the outcome into the status and asks again.
"""

from __future__ import annotations

from dataclasses import dataclass

from dataflow_engine.graph.states import JobStatus
from dataflow_engine.spec.model import DataflowJobSpec, UpgradeMode
from dataflow_operator.observer.savepoints import SUSPEND, UPGRADE
from dataflow_operator.plan import JobPlan
from dataflow_operator.reconciler import rollback
from dataflow_operator.reconciler.actions import (
    Action,
    AdoptRunning,
    Provision,
    Reconciled,
    StopDriver,
)
from dataflow_operator.reconciler.savepoints import SavepointRequest
from dataflow_operator.status import conditions as cond
from dataflow_operator.status.events import NORMAL, WARNING, Event
from dataflow_operator.status.job_status import (
    initial_vertices,
    subtask_summary,
    with_new_job_status,
)
from dataflow_operator.status.model import DataflowJobStatus, DeploymentStatus


@dataclass(frozen=True)
class SavepointFailure:
    """The stop-with-savepoint this reconcile asked for failed: ``event`` says so; the
    status already holds its error, ``previous_error`` is the one before."""

    event: Event
    previous_error: str | None
    #: The driver refused the upgrade (its state does not fit the new plan).
    refused: bool


@dataclass(frozen=True)
class SpecChange:
    """A spec to reconcile, and what the reconcile knows of the job."""

    spec: DataflowJobSpec
    plan: JobPlan
    #: The plan of the running deployment, when this operator process knows it.
    deployed_plan: JobPlan | None
    status: DataflowJobStatus
    generation: int
    backend: str

    @property
    def deployed_hash(self) -> str | None:
        status = self.status
        return status.plan.hash if status.plan and status.deployed_generation is not None else None

    @property
    def needs_deploy(self) -> bool:
        return self.deployed_hash != self.plan.status.hash

    @property
    def upgrading(self) -> bool:
        return self.deployed_hash is not None and self.needs_deploy and not self.spec.suspend

    @property
    def stateful(self) -> bool:
        return self.spec.job.upgrade_mode is not UpgradeMode.STATELESS

    def may_run(self) -> bool:
        """Savepoints are asked of a driver that runs a continuous job and was not stopped
        yet. The status may be older than the driver's end (the operator restarted, or the
        monitor has not looked since): when a savepoint depends on it, the driver is looked
        at (``driver_running``)."""
        deployment = self.status.deployment
        return (self.status.job_status is JobStatus.RUNNING
                and (deployment is None or deployment.stopped_with_savepoint is None)
                and (self.deployed_plan or self.plan).compiled.continuous)

    def needs_driver_look(self) -> bool:
        return self.may_run() and self.stateful and (self.upgrading or self.spec.suspend)


def reconcile_spec(change: SpecChange, driver_running: bool | None = None,
                   failure: SavepointFailure | None = None
                   ) -> Reconciled | SavepointRequest:
    """The next status, Events and actions for a spec; ``driver_running`` is what a look at
    the driver found when :meth:`SpecChange.needs_driver_look`, ``failure`` the outcome of
    the stop-with-savepoint asked for before (a completed one is in the status already)."""
    spec, plan, status, generation = change.spec, change.plan, change.status, change.generation
    current = status.job_status
    terminal = current is not None and current.is_globally_terminal
    upgrading, stateful, needs_deploy = change.upgrading, change.stateful, change.needs_deploy
    previous = status.deployment
    stopped = previous.stopped_with_savepoint if previous else None
    running = change.may_run()
    if change.needs_driver_look():
        assert driver_running is not None, "the driver must be looked at first"
        running = driver_running
    events: list[Event] = []
    deployment: DeploymentStatus | None = None  # a new one when the driver starts afresh
    if upgrading and rollback.rolled_back_before(status, generation):
        # Said once; the last stable spec runs until the spec changes again.
        return Reconciled(status, actions=[] if change.deployed_plan else [AdoptRunning()])
    if upgrading and not stateful:
        deployment = _new_deployment(generation, "none")
    elif upgrading and running:
        if _upgrade_refused_before(status, generation):
            # Said once; the job keeps running until the spec changes again.
            return Reconciled(status, actions=[] if change.deployed_plan else [AdoptRunning()])
        if failure is None:
            return SavepointRequest.new(UPGRADE, stop=True, upgrade_to=plan,
                                        allow_non_restored_state=
                                        spec.job.allow_non_restored_state)
        if failure.refused:
            return _refused_upgrade(status, generation, failure)
        return _savepoint_delayed("upgrade", status, failure)
    elif upgrading or current is JobStatus.SUSPENDED:
        deployment = (_new_deployment(generation, stopped) if stopped
                      else _continued(previous, generation) if stateful
                      else _new_deployment(generation, "none"))
    elif change.deployed_hash is None:
        deployment = _new_deployment(generation, spec.job.initial_savepoint_path or "none")
    # A rollback is said of the generation rolled back; any later one runs as written.
    conditions = [c for c in status.conditions
                  if c.type != cond.ROLLED_BACK or c.observed_generation == generation]
    status = status.model_copy(update={
        "observed_generation": generation,
        "plan": plan.status,
        "conditions": cond.set_condition(conditions, cond.COMPILED, True, "Compiled",
                                         f"{len(plan.status.job_vertices)} JobVertices, "
                                         f"{plan.status.total_slots} slots", generation),
    })
    if current is None:  # a nonce already set when the job is created asks for nothing
        status = status.model_copy(update={"savepoints": status.savepoints.model_copy(
            update={"last_trigger_nonce": spec.job.savepoint_trigger_nonce})})
    interim = status
    if spec.suspend:
        if running and stateful:  # as in Flink's operator: not suspended without its state
            if failure is None:
                return SavepointRequest.new(SUSPEND, stop=True,
                                            drain=spec.job.drain_on_suspend)
            return _savepoint_delayed("suspend", status, failure)
        if not terminal and current is not JobStatus.SUSPENDED:
            status, moved = with_new_job_status(status, JobStatus.SUSPENDED, generation)
            events += [*moved, Event(NORMAL, "Suspended", "driver stopped; resource kept")]
        return Reconciled(status, events, [StopDriver()], interim)
    if terminal and not needs_deploy:
        return Reconciled(status, events, [], interim)
    actions: list[Action] = []
    deployment = deployment or previous or _new_deployment(generation, "latest")
    if upgrading:
        events.append(Event(NORMAL, "SpecChanged",
                            f"plan changed ({change.deployed_hash} -> {plan.status.hash}); "
                            f"redeploying ({spec.job.upgrade_mode.value} upgrade, "
                            f"starting from {_restore_text(deployment, previous)})"))
        actions.append(StopDriver())
    fresh = needs_deploy or current in (None, JobStatus.SUSPENDED) or _queued_before(status)
    if current is JobStatus.SUSPENDED:
        events.append(Event(NORMAL, "Resumed", "starting the driver again from "
                            f"{_restore_text(deployment, previous)}"))
    actions.append(Provision(0 if fresh else status.restarts, deployment))
    if fresh:
        status, moved = with_new_job_status(status, JobStatus.CREATED, generation)
        if current is None:
            moved = []  # "Submitted" says it; "none -> CREATED" would add nothing
        kept = (cond.COMPILED, cond.PROVISIONED, cond.UPGRADED)
        status = status.model_copy(update={
            "restarts": 0, "error": None, "start_time": None, "end_time": None,
            "vertices": initial_vertices(plan.status),
            "conditions": [c for c in status.conditions if c.type in kept]})
        events += [*moved, Event(NORMAL, "Submitted",
                                 f"driver started by the {change.backend} backend")]
    if upgrading:  # also ends an earlier upgrade's refusal
        status = status.model_copy(update={"conditions": cond.set_condition(
            status.conditions, cond.UPGRADED, True, "Upgraded",
            f"{spec.job.upgrade_mode.value} upgrade from {_restore_text(deployment, previous)}",
            generation)})
    status = status.model_copy(update={
        "deployment": deployment,
        "deployed_generation": generation,
        "subtasks": subtask_summary(status.vertices or initial_vertices(plan.status)),
        "conditions": cond.set_condition(status.conditions, cond.PROVISIONED, True,
                                         "Provisioned", f"driver on {change.backend}",
                                         generation),
    })
    return Reconciled(status, events, actions, interim)


def rejected(status: DataflowJobStatus, generation: int, message: str,
             deployed: bool) -> Reconciled | None:
    """An invalid spec: a job with a good deployment keeps it running (as Flink's operator
    does); one without fails. None when this generation was already reported so."""
    if _already_rejected(status, generation, message):
        return None  # seen before a restart: no second Event
    conditions = cond.set_condition(status.conditions, cond.COMPILED, False, "InvalidSpec",
                                    message, generation)
    if deployed:
        return Reconciled(
            status.model_copy(update={"observed_generation": generation,
                                      "conditions": conditions}),
            [Event(WARNING, "InvalidSpec",
                   f"update rejected, previous version keeps running: {message}")])
    conditions = cond.set_failed(conditions, "InvalidSpec", message, generation)
    return Reconciled(
        status.model_copy(update={"observed_generation": generation, "conditions": conditions,
                                  "job_status": JobStatus.FAILED, "error": message,
                                  "end_time": cond.now()}),
        [Event(WARNING, "Failed", f"invalid spec: {message}")])


def queued(status: DataflowJobStatus, generation: int, message: str,
           reason: str = "Queued") -> Reconciled | None:
    """Provisioned=False: the job waits, for a driver slot (Queued) or the DataflowSnapshot
    it starts from (WaitingForSnapshot). None when already said."""
    if any(c.type == cond.PROVISIONED and c.status == "False" and c.reason == reason
           for c in status.conditions):
        return None
    conditions = cond.set_condition(status.conditions, cond.PROVISIONED, False, reason,
                                    message, generation)
    return Reconciled(
        status.model_copy(update={"observed_generation": generation, "conditions": conditions,
                                  "job_status": status.job_status or JobStatus.CREATED}),
        [Event(NORMAL, reason, message)])


def provisioning_failed(status: DataflowJobStatus, generation: int,
                        message: str) -> Reconciled | None:
    """Provisioning failed for good (not a passing API error). None when already said."""
    if _already_failed(status, generation, message):
        return None
    conditions = cond.set_condition(status.conditions, cond.PROVISIONED, False,
                                    "ProvisioningFailed", message, generation)
    conditions = cond.set_failed(conditions, "ProvisioningFailed", message, generation)
    return Reconciled(
        status.model_copy(update={"observed_generation": generation, "conditions": conditions,
                                  "job_status": JobStatus.FAILED, "error": message,
                                  "end_time": cond.now()}),
        [Event(WARNING, "Failed", f"provisioning failed: {message}")])


def _new_deployment(generation: int, restore_from: str) -> DeploymentStatus:
    return DeploymentStatus.new(generation, restore_from, cond.now())


def _queued_before(status: DataflowJobStatus) -> bool:
    return any(c.type == cond.PROVISIONED and c.status == "False" and c.reason == "Queued"
               for c in status.conditions)


def _refused_upgrade(status: DataflowJobStatus, generation: int,
                     failure: SavepointFailure) -> Reconciled:
    """The running job cannot be upgraded with its state: it keeps running as it was."""
    message = (f"upgrade to generation {generation} refused, the job keeps running "
               f"generation {status.deployed_generation}: {status.savepoints.last_error}")
    status = status.model_copy(update={
        "observed_generation": generation,
        "conditions": cond.set_condition(status.conditions, cond.UPGRADED, False,
                                         "UpgradeRefused", message, generation)})
    return Reconciled(status, [failure.event, Event(WARNING, "UpgradeRefused", message)])


def _savepoint_delayed(what: str, status: DataflowJobStatus,
                       failure: SavepointFailure) -> Reconciled:
    """The savepoint an upgrade or suspend needs failed for a passing reason: it is retried,
    and said again only when the reason changed (no Event per retry)."""
    error = status.savepoints.last_error
    events = [failure.event] if error != failure.previous_error else []
    return Reconciled(status, events, retry=f"{what} waits for a savepoint: {error}")


def _upgrade_refused_before(status: DataflowJobStatus, generation: int) -> bool:
    return any(c.type == cond.UPGRADED and c.status == "False"
               and c.observed_generation == generation for c in status.conditions)


def _continued(previous: DeploymentStatus | None, generation: int) -> DeploymentStatus:
    """A last-state start: the previous deployment's lineage goes on from its newest
    checkpoint (or from where it began, if it never took one)."""
    if previous is None:
        return _new_deployment(generation, "latest")
    return previous.model_copy(update={"generation": generation, "since": cond.now(),
                                       "stopped_with_savepoint": None})


def _restore_text(deployment: DeploymentStatus, previous: DeploymentStatus | None) -> str:
    began = {"none": "scratch", "latest": "the latest checkpoint"}.get(
        deployment.restore_from, deployment.restore_from)
    continued = previous is not None and deployment.id == previous.id
    if continued and deployment.restore_from != "latest":
        return f"its newest checkpoint (or {began}, if it took none)"
    return began


def _already_failed(status: DataflowJobStatus, generation: int, message: str) -> bool:
    """This generation already failed with this message (e.g. reported before a restart)."""
    return (status.observed_generation == generation and status.job_status is JobStatus.FAILED
            and any(c.type == cond.FAILED and c.status == "True" and c.message == message
                    for c in status.conditions))


def _already_rejected(status: DataflowJobStatus, generation: int, message: str) -> bool:
    """This generation's spec was already reported invalid with this message."""
    return (status.observed_generation == generation
            and any(c.type == cond.COMPILED and c.status == "False" and c.message == message
                    for c in status.conditions))
