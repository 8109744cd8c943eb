"""Moves of a job's JobStatus and what goes with them: the Running/Succeeded/Failed
conditions, the per-vertex subtask states, start and end times, and the Events that say so.

Both the observer (what the driver reports) and the reconciler (what the operator does) move
a job's status; they do it here, so every move is legal by Flink's JobStatus state machine.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from dataflow_engine.graph.states import (
    ExecutionState,
    IllegalStateTransition,
    JobStatus,
    check_job_transition,
)
from dataflow_operator.status import conditions as cond
from dataflow_operator.status.events import NORMAL, Event
from dataflow_operator.status.model import DataflowJobStatus, PlanStatus, VertexStatus
from dataflow_operator.status.subtask_encoding import decode_states, encode_runs, encode_states

#: Job states in which no driver runs: no subtask can still be running.
_DRIVERLESS = frozenset({JobStatus.FAILED, JobStatus.CANCELED, JobStatus.SUSPENDED,
                         JobStatus.RESTARTING})


def initial_vertices(plan: PlanStatus) -> list[VertexStatus]:
    return [initial_vertex(v.id, v.name, v.parallelism) for v in plan.job_vertices]


def initial_vertex(vertex_id: str, name: str, parallelism: int) -> VertexStatus:
    zeros = [0] * parallelism
    return vertex_status(vertex_id, name, [ExecutionState.CREATED] * parallelism, zeros, zeros,
                         zeros)


def vertex_status(vertex_id: str, name: str, states: list[ExecutionState], attempts: list[int],
                  records_in: list[int], records_out: list[int]) -> VertexStatus:
    counts = Counter(s.value for s in states)
    return VertexStatus(
        id=vertex_id, name=name, parallelism=len(states), states=dict(sorted(counts.items())),
        records_in=sum(records_in), records_out=sum(records_out),
        subtasks=encode_states(states), attempts=encode_runs(attempts),
        subtask_records_in=encode_runs(records_in, base36=True),
        subtask_records_out=encode_runs(records_out, base36=True))


#: A vertex's rates of a running job: gone once no driver runs.
_RATES = ("records_in_per_second", "records_out_per_second", "busy_ratio", "backlog")


def settled_vertices(vertices: list[VertexStatus], to: ExecutionState) -> list[VertexStatus]:
    """Every subtask still shown in a non-terminal state becomes `to`: CANCELED when no driver
    runs any more (as Flink cancels a failed job's remaining tasks), FINISHED when the job
    finished (its last status may predate the last tasks' end). A status must never show
    subtasks running without a driver, nor their rates. Attempts and records stay as they
    were; a vertex summarised to counts (the status budget) is settled by its counts."""
    result = []
    for vertex in vertices:
        counts: Counter[str] = Counter()
        for name, count in vertex.states.items():
            counts[name if ExecutionState(name).is_terminal else to.value] += count
        states = [state if state.is_terminal else to for state in decode_states(vertex.subtasks)]
        result.append(vertex.model_copy(update={
            "states": dict(sorted(counts.items())), "subtasks": encode_states(states),
            **dict.fromkeys(_RATES)}))
    return result


def subtask_summary(vertices: list[VertexStatus]) -> str:
    running = sum(v.states.get("RUNNING", 0) for v in vertices)
    return f"{running}/{sum(v.parallelism for v in vertices)}"


def with_job_status(status: DataflowJobStatus, target: JobStatus, generation: int,
                    message: str = "") -> tuple[DataflowJobStatus, list[Event]]:
    """Moves the JobStatus (legally) and keeps the Running/Succeeded/Failed conditions true."""
    current = status.job_status
    if current is target:
        return status, []
    if current is not None:
        check_job_transition(current, target)
    conditions = status.conditions
    conditions = cond.set_condition(conditions, cond.RUNNING, target is JobStatus.RUNNING,
                                    f"Job{target.value.capitalize()}",
                                    f"JobStatus is {target.value}", generation)
    if target is JobStatus.FINISHED:
        conditions = cond.set_condition(conditions, cond.SUCCEEDED, True, "JobFinished",
                                        "every ExecutionVertex finished", generation)
    if target is JobStatus.FAILED:
        conditions = cond.set_failed(conditions, "JobFailed", message or "the job failed",
                                     generation)
    update: dict[str, Any] = {"job_status": target, "conditions": conditions}
    if (target in _DRIVERLESS or target is JobStatus.FINISHED) and status.vertices:
        to = ExecutionState.FINISHED if target is JobStatus.FINISHED else ExecutionState.CANCELED
        vertices = settled_vertices(status.vertices, to)
        update.update({"vertices": vertices, "subtasks": subtask_summary(vertices)})
    if target.is_globally_terminal:
        update["end_time"] = cond.now()
    if target is JobStatus.RUNNING and status.start_time is None:
        update["start_time"] = cond.now()
    events = [Event(NORMAL, "JobStatusChanged",
                    f"{current.value if current else 'none'} -> {target.value}")]
    if target is JobStatus.FINISHED:
        events.append(Event(NORMAL, "Finished", "the job finished"))
    return status.model_copy(update=update), events


def with_new_job_status(status: DataflowJobStatus, target: JobStatus,
                        generation: int) -> tuple[DataflowJobStatus, list[Event]]:
    """Operator-driven moves (deploy, redeploy, suspend, resume) start a new JobStatus history
    when the state machine has no edge from the old one, as a new ExecutionGraph would."""
    previous = status.job_status
    try:
        return with_job_status(status, target, generation)
    except IllegalStateTransition:
        status, _ = with_job_status(status.model_copy(update={"job_status": None}), target,
                                    generation)
        return status, [Event(NORMAL, "JobStatusChanged",
                              f"{previous.value if previous else 'none'} -> {target.value} "
                              "(new deployment)")]
