"""Rollback of an upgrade that does not come up healthy (flink-kubernetes-operator's deployment
rollback, ``spec.job.upgrade.rollbackTimeout``).

A deployment is healthy once its job is RUNNING with every subtask running and, if it
checkpoints, has completed a checkpoint of its own: its spec becomes ``status.lastStableSpec``.
A deployment started by a later spec change that is not healthy within the timeout, or that
failed for good, is replaced by the last stable spec, started where the failed deployment
started: the upgrade's savepoint (a lineage of its own), or, after a last-state or stateless
upgrade, the failed deployment's lineage, unless it checkpointed the new plan's state (then
the rollback is refused: RolledBack=False). The DataflowJob's spec is left as the user wrote it: the
RolledBack condition says the job runs another generation, and the next spec change is
reconciled as usual. An autoscaler's rescale deploys the same generation anew: it is rolled
back as an upgrade is, to the parallelism it replaced, and the autoscaler waits for the next
spec change.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from dataflow_engine.graph.states import JobStatus
from dataflow_engine.spec.model import DataflowJobSpec, duration_seconds
from dataflow_operator.plan import JobPlan
from dataflow_operator.reconciler.actions import Provision, Reconciled, StopDriver
from dataflow_operator.status import conditions as cond
from dataflow_operator.status.events import WARNING, Event
from dataflow_operator.status.job_status import (
    initial_vertices,
    subtask_summary,
    with_new_job_status,
)
from dataflow_operator.status.model import DataflowJobStatus, DeploymentStatus

#: A stable spec larger than this is not kept (the status has a byte budget): no rollback.
MAX_STABLE_SPEC_BYTES = 64 * 1024


def checkpointed(status: DataflowJobStatus) -> bool:
    """The running deployment completed a checkpoint since it started."""
    deployment = status.deployment
    last = status.checkpoints.last_completed if status.checkpoints is not None else None
    return (last is not None and deployment is not None and deployment.since is not None
            and cond.parse_time(last.time) >= cond.parse_time(deployment.since))


def healthy(spec: DataflowJobSpec, status: DataflowJobStatus) -> bool:
    """RUNNING, every subtask running, and a checkpoint completed since the deployment
    started (if the job checkpoints)."""
    if status.job_status is not JobStatus.RUNNING or not status.vertices:
        return False
    if any(v.states.get("RUNNING", 0) != v.parallelism for v in status.vertices):
        return False
    return spec.checkpointing is None or checkpointed(status)


def stable(spec: DataflowJobSpec, status: DataflowJobStatus) -> DataflowJobStatus | None:
    """The status recording the running spec as the last stable one while its deployment is
    healthy; None when there is nothing new to record. A deployment is known by the
    generation that started it (``deployment.generation``: a spec change that redeploys
    nothing keeps it), so the stable spec follows such changes while the deployment stays."""
    deployment = status.deployment
    if deployment is None or not healthy(spec, status):
        return None
    text: str | None = spec.model_dump_json(by_alias=True, exclude_defaults=True)
    if text is not None and len(text) > MAX_STABLE_SPEC_BYTES:
        text = None  # too large to keep in the status: no rollback (docs/snapshots.md)
    if (deployment.generation, deployment.id, text) == (
            status.last_stable_generation, status.last_stable_deployment,
            status.last_stable_spec):
        return None
    return status.model_copy(update={"last_stable_spec": text,
                                     "last_stable_generation": deployment.generation,
                                     "last_stable_deployment": deployment.id})


def is_stable(deployment: DeploymentStatus, status: DataflowJobStatus) -> bool:
    """The deployment is the one that ran the last stable spec: the same generation, and
    the same deployment unless none was recorded (a status written before they were)."""
    return deployment.generation == status.last_stable_generation and (
        status.last_stable_deployment in (None, deployment.id))


def due(spec: DataflowJobSpec, status: DataflowJobStatus, now: datetime) -> str | None:
    """Why the running deployment is rolled back now, or None: rollback is off, there is no
    stable spec, the deployment is the stable one or healthy, this generation's rollback was
    decided already (RolledBack, True or False), or it has time left."""
    timeout = spec.job.upgrade.rollback_timeout
    deployment = status.deployment
    if (timeout is None or status.last_stable_spec is None or deployment is None
            or is_stable(deployment, status)
            or any(c.type == cond.ROLLED_BACK for c in status.conditions)
            or healthy(spec, status)):
        return None
    if status.job_status is JobStatus.FAILED:
        return f"it failed: {status.error or 'no reason given'}"
    started = cond.parse_time(deployment.since) if deployment.since else now
    if status.job_status is not JobStatus.SUSPENDED and (
            now - started > timedelta(seconds=duration_seconds(timeout))):
        why = ("it is " + status.job_status.value if status.job_status is not JobStatus.RUNNING
               else "not every subtask runs" if not healthy(spec, status)
               else "no checkpoint completed") if status.job_status else "it did not start"
        return f"it was not healthy within {timeout} ({why})"
    return None


def roll_back(status: DataflowJobStatus, stable_plan: JobPlan, why: str,
              generation: int) -> Reconciled:
    """Back to the last stable spec (its plan ``stable_plan``), from where the failed
    deployment started; ``generation`` is the DataflowJob's, which keeps the user's spec.
    A deployment that continued its lineage (last-state or stateless) and completed a
    checkpoint of the new plan cannot be rolled back: that checkpoint is what its lineage
    resumes from."""
    assert status.deployment is not None and status.last_stable_generation is not None
    stable_generation = status.last_stable_generation
    started = status.deployment.restore_from
    if started in ("none", "latest") and checkpointed(status):
        message = (f"generation {status.deployed_generation} is not rolled back ({why}): it "
                   "checkpointed the new plan's state, which its deployment would resume")
        return failed(status, message, generation)
    if started in ("none", "latest"):  # its lineage goes on (it took no checkpoint)
        deployment = status.deployment.model_copy(update={
            "generation": stable_generation, "since": cond.now(),
            "stopped_with_savepoint": None})
    else:  # the upgrade's savepoint, in a lineage of its own
        deployment = DeploymentStatus.new(stable_generation, started, cond.now())
    failed_generation = status.deployment.generation
    what = (f"the rescale of generation {stable_generation} rolled back"
            if failed_generation == stable_generation else
            f"generation {failed_generation} rolled back to generation {stable_generation}")
    message = f"{what}: {why}; started again from {deployment.restore_from}"
    status, moved = with_new_job_status(status, JobStatus.CREATED, generation)
    kept = (cond.COMPILED, cond.PROVISIONED, cond.UPGRADED)
    conditions = [c for c in status.conditions if c.type in kept]
    conditions = cond.set_condition(conditions, cond.ROLLED_BACK, True, "UpgradeNotHealthy",
                                    message, generation)
    conditions = cond.set_condition(conditions, cond.UPGRADED, False, "RolledBack", message,
                                    generation)
    vertices = initial_vertices(stable_plan.status)
    status = status.model_copy(update={
        "restarts": 0, "error": None, "start_time": None, "end_time": None,
        "plan": stable_plan.status, "vertices": vertices, "subtasks": subtask_summary(vertices),
        "deployment": deployment, "deployed_generation": stable_generation,
        "last_stable_deployment": deployment.id,  # it runs the stable spec: not rolled back
        "conditions": conditions})
    return Reconciled(status, [*moved, Event(WARNING, "RolledBack", message)],
                      [StopDriver(), Provision(0, deployment)])


def failed(status: DataflowJobStatus, message: str, generation: int) -> Reconciled:
    """RolledBack=False: the rollback was due and cannot be done; said once."""
    return Reconciled(status.model_copy(update={"conditions": cond.set_condition(
        status.conditions, cond.ROLLED_BACK, False, "RollbackFailed", message, generation)}),
        [Event(WARNING, "RollbackFailed", message)])


def rolled_back_before(status: DataflowJobStatus, generation: int) -> bool:
    """This generation was rolled back: it is not deployed again until the spec changes."""
    return any(c.type == cond.ROLLED_BACK and c.status == "True"
               and c.observed_generation == generation for c in status.conditions)
