"""One look at a driver folded into the job's status: per-subtask states, records and
attempts, checkpoints, and the JobStatus the driver's phase and runner imply.

A failure is observed (the job moves to FAILING); whether it restarts is the reconciler's
decision (:mod:`dataflow_operator.reconciler.restart`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dataflow_engine.graph.states import JobStatus
from dataflow_engine.rest import DriverStatusDocument
from dataflow_engine.spec.model import DataflowJobSpec
from dataflow_operator.backends.base import DriverObservation, DriverPhase
from dataflow_operator.observer.checkpoints import checkpoint_outcomes, checkpoints_from_runner
from dataflow_operator.status import conditions as cond
from dataflow_operator.status.events import WARNING, Event
from dataflow_operator.status.job_status import (
    initial_vertex,
    initial_vertices,
    subtask_summary,
    vertex_status,
    with_job_status,
)
from dataflow_operator.status.model import DataflowJobStatus, PlanStatus, VertexStatus


@dataclass
class Observed:
    """The status after one look, the Events it explains, and the driver's failure if it
    failed (the status is then FAILING)."""

    status: DataflowJobStatus
    events: list[Event] = field(default_factory=list)
    failure: str | None = None


def vertices_from_runner(plan: PlanStatus, runner: DriverStatusDocument, restarts: int,
                         previous: list[VertexStatus]) -> list[VertexStatus]:
    """The runner's per-subtask states, in plan order; attempts count earlier driver runs."""
    reported = {v.id: v for v in runner.vertices}
    known = {v.id: v for v in previous}
    result = []
    for planned in plan.job_vertices:
        vertex = reported.get(planned.id)
        if vertex is None:
            result.append(known.get(planned.id)
                          or initial_vertex(planned.id, planned.name, planned.parallelism))
            continue
        subtasks = sorted(vertex.subtasks, key=lambda s: s.index)
        observed = vertex_status(
            planned.id, planned.name, [s.state for s in subtasks],
            [s.attempt + restarts for s in subtasks], [s.records_in for s in subtasks],
            [s.records_out for s in subtasks])
        if runner.checkpoints is not None:  # a continuous job: its rates over its last epochs
            observed = observed.model_copy(update={
                "records_in_per_second": round(vertex.records_in_per_second, 1),
                "records_out_per_second": round(vertex.records_out_per_second, 1),
                "busy_ratio": round(vertex.busy_ratio, 3), "backlog": vertex.backlog})
        result.append(observed)
    return result


def observe(status: DataflowJobStatus, spec: DataflowJobSpec, observation: DriverObservation,
            generation: int) -> Observed:
    """The status after one look at the driver."""
    current = status.job_status
    plan = status.plan
    if (current is None or plan is None or current is JobStatus.SUSPENDED
            or current is JobStatus.RESTARTING or current.is_globally_terminal):
        return Observed(status)
    if observation.plan_hash is not None and observation.plan_hash != plan.hash:
        return Observed(status)  # a redeploy is replacing this driver
    vertices = status.vertices or initial_vertices(plan)
    if observation.runner is not None:
        vertices = vertices_from_runner(plan, observation.runner, status.restarts, vertices)
    update: dict[str, Any] = {"vertices": vertices, "subtasks": subtask_summary(vertices)}
    checkpoints = checkpoints_from_runner(observation.runner)
    outcomes: list[Event] = []
    if checkpoints is not None:
        update["checkpoints"] = checkpoints
        update["conditions"], outcomes = checkpoint_outcomes(
            status.checkpoints, checkpoints, status.conditions, spec, generation)
    observed = _next_job_status(status.model_copy(update=update), observation, generation)
    observed.events[:0] = outcomes
    return observed


def _next_job_status(status: DataflowJobStatus, observation: DriverObservation,
                     generation: int) -> Observed:
    current = status.job_status
    runner = observation.runner
    runner_status = runner.job_status if runner is not None else None
    phase = observation.phase
    failed = phase is DriverPhase.FAILED or runner_status is JobStatus.FAILED or (
        phase is DriverPhase.MISSING and current is JobStatus.RUNNING)
    if failed:
        message = (observation.message or (runner.error if runner is not None else None)
                   or "the driver disappeared")
        status, events = with_job_status(status, JobStatus.FAILING, generation)
        return Observed(status, events, failure=str(message))
    if phase is DriverPhase.SUCCEEDED or runner_status is JobStatus.FINISHED:
        target = JobStatus.FINISHED
        if current is JobStatus.CREATED:
            status, events = with_job_status(status, JobStatus.RUNNING, generation)
            status, more = with_job_status(status, target, generation)
            return Observed(status, events + more)
    elif phase is DriverPhase.RUNNING and runner_status is not JobStatus.CREATED:
        # A driver that is up but whose runner has not started Spark yet stays CREATED.
        target = JobStatus.RUNNING
    elif phase is DriverPhase.PENDING and observation.pending_reason:
        return _pending(status, observation, generation)
    else:
        return Observed(status)
    status, events = with_job_status(status, target, generation)
    return Observed(status, events)


def _pending(status: DataflowJobStatus, observation: DriverObservation,
             generation: int) -> Observed:
    """A driver that cannot start (unschedulable, image not pulled) says why in the Running
    condition, with one Warning Event per new reason or message."""
    reason = observation.pending_reason
    message = f"the driver pod cannot start: {observation.pending_message or reason}"
    shown = next((c for c in status.conditions if c.type == cond.RUNNING), None)
    if shown is not None and (shown.reason, shown.message) == (reason, cond.bounded(message)):
        return Observed(status)
    conditions = cond.set_condition(status.conditions, cond.RUNNING, False, reason, message,
                                    generation)
    return Observed(status.model_copy(update={"conditions": conditions}),
                    [Event(WARNING, "DriverPending", f"{reason}: {message}")])
