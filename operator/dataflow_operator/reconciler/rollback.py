"""Rollback of an upgrade that does not come up healthy (flink-kubernetes-operator's deployment
rollback, ``spec.job.upgrade.rollbackTimeout``).

A deployment is healthy once its job is RUNNING with every subtask running and, if it
checkpoints, has completed a checkpoint of its own: its spec becomes ``status.lastStableSpec``.
A deployment of a later generation that is not healthy within the timeout, or that failed for
good, is replaced by the last stable spec, started where the failed deployment started (its
deployment id resumes its own newest checkpoint, of which an unhealthy deployment has none: so
from the upgrade's savepoint). The DataflowJob's spec is left as the user wrote it: the
RolledBack condition says the job runs another generation, and the next spec change is
reconciled as usual.
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


def healthy(spec: DataflowJobSpec, status: DataflowJobStatus) -> bool:
    """RUNNING, every subtask running, and a checkpoint completed since the deployment
    started (if the job checkpoints)."""
    deployment = status.deployment
    if status.job_status is not JobStatus.RUNNING or not status.vertices:
        return False
    if any(v.states.get("RUNNING", 0) != v.parallelism for v in status.vertices):
        return False
    if spec.checkpointing is None:
        return True
    last = status.checkpoints.last_completed if status.checkpoints is not None else None
    return (last is not None and deployment is not None and deployment.since is not None
            and cond.parse_time(last.time) >= cond.parse_time(deployment.since))


def stable(spec: DataflowJobSpec, status: DataflowJobStatus) -> DataflowJobStatus | None:
    """The status recording the running spec as the last stable one, once its deployment is
    healthy; None when there is nothing new to record."""
    generation = status.deployed_generation
    if generation is None or generation == status.last_stable_generation:
        return None
    if not healthy(spec, status):
        return None
    text = spec.model_dump_json(by_alias=True, exclude_defaults=True)
    return status.model_copy(update={
        "last_stable_spec": text if len(text) <= MAX_STABLE_SPEC_BYTES else None,
        "last_stable_generation": generation})


def due(spec: DataflowJobSpec, status: DataflowJobStatus, now: datetime) -> str | None:
    """Why the running deployment is rolled back now, or None: it is not an upgrade past the
    last stable generation, rollback is off, it was rolled back already, or it has time left."""
    timeout = spec.job.upgrade.rollback_timeout
    deployment = status.deployment
    if (timeout is None or status.last_stable_spec is None or deployment is None
            or status.deployed_generation in (None, status.last_stable_generation)
            or cond.condition_is(status.conditions, cond.ROLLED_BACK)):
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
    deployment started; ``generation`` is the DataflowJob's, which keeps the user's spec."""
    assert status.deployment is not None and status.last_stable_generation is not None
    stable_generation = status.last_stable_generation
    started = status.deployment.restore_from
    if started in ("none", "latest"):  # its lineage goes on (it took no checkpoint)
        deployment = status.deployment.model_copy(update={
            "generation": stable_generation, "since": cond.now(),
            "stopped_with_savepoint": None})
    else:  # the upgrade's savepoint, in a lineage of its own
        deployment = DeploymentStatus.new(stable_generation, started, cond.now())
    failed = status.deployed_generation
    message = (f"generation {failed} rolled back to generation {stable_generation}: {why}; "
               f"started again from {deployment.restore_from}")
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
        "conditions": conditions})
    return Reconciled(status, [*moved, Event(WARNING, "RolledBack", message)],
                      [StopDriver(), Provision(0, deployment)])


def rolled_back_before(status: DataflowJobStatus, generation: int) -> bool:
    """This generation was rolled back: it is not deployed again until the spec changes."""
    return any(c.type == cond.ROLLED_BACK and c.status == "True"
               and c.observed_generation == generation for c in status.conditions)
