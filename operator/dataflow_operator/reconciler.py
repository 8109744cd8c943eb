"""Status reconciliation as pure functions: observations in, the next status and Events out.

The daemon feeds it what the backend saw (driver phase, the runner's status document); the
result says what to patch, which Events to post, and whether to restart the driver.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from dataflow_engine.graph.states import ExecutionState, JobStatus, check_job_transition
from dataflow_engine.spec import DataflowJobSpec, RestartStrategyType, duration_seconds
from dataflow_operator import conditions as cond
from dataflow_operator.backends.base import DriverObservation, DriverPhase
from dataflow_operator.status_model import (
KAFKA_PARTITIONS_SHOWN,
    CheckpointingStatus,
    Condition,
    DataflowJobStatus,
    PlanStatus,
    VertexStatus,
)
from dataflow_operator.subtask_encoding import decode_states, encode_runs, encode_states

NORMAL, WARNING = "Normal", "Warning"


@dataclass(frozen=True)
class Event:
    type: str
    reason: str
    message: str


@dataclass
class Transition:
    status: DataflowJobStatus
    events: list[Event] = field(default_factory=list)
    #: Seconds to wait before the driver is started again (a restart), or None.
    restart_after: float | None = None


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


def vertices_from_runner(plan: PlanStatus, runner: dict[str, Any], restarts: int,
                         previous: list[VertexStatus]) -> list[VertexStatus]:
    """The runner's per-subtask states, in plan order; attempts count earlier driver runs."""
    reported = {v.get("id"): v for v in runner.get("vertices", []) if isinstance(v, dict)}
    known = {v.id: v for v in previous}
    result = []
    for planned in plan.job_vertices:
        vertex = reported.get(planned.id)
        if vertex is None:
            result.append(known.get(planned.id)
                          or initial_vertex(planned.id, planned.name, planned.parallelism))
            continue
        subtasks = sorted(vertex.get("subtasks", []), key=lambda s: s.get("index", 0))
        states = [ExecutionState(s.get("state", "CREATED")) for s in subtasks]
        result.append(vertex_status(
            planned.id, planned.name, states,
            [int(s.get("attempt", 0)) + restarts for s in subtasks],
            [int(s.get("recordsIn", 0)) for s in subtasks],
            [int(s.get("recordsOut", 0)) for s in subtasks]))
    return result


def checkpoints_from_runner(runner: dict[str, Any] | None) -> CheckpointingStatus | None:
    """The runner's ``checkpoints`` section (a continuous job's), with times in RFC 3339."""
    reported = (runner or {}).get("checkpoints")
    if not isinstance(reported, dict):
        return None
    last = reported.get("lastCompleted")
    if isinstance(last, dict) and isinstance(last.get("time"), int | float):
        last = {**last, "time": cond.from_millis(last["time"])}
    failure = reported.get("lastFailure")
    partitions = reported.get("kafkaPartitions") or []
    try:
        shown = sorted(partitions, key=lambda p: (-int(p["lag"]), p["source"], p["topic"],
                                                  int(p["partition"])))
        return CheckpointingStatus.model_validate({
            **reported, "lastCompleted": last,
            "lastFailure": cond.bounded(str(failure)) if failure is not None else None,
            "kafkaLag": sum(int(p["lag"]) for p in partitions) if partitions else None,
            "kafkaPartitions": shown[:KAFKA_PARTITIONS_SHOWN]})
    except (ValidationError, KeyError, TypeError, ValueError):
        return None  # a runner of another version: its checkpoints stay unreported


#: Job states in which no driver runs: no subtask can still be running.
_DRIVERLESS = frozenset({JobStatus.FAILED, JobStatus.CANCELED, JobStatus.SUSPENDED,
                         JobStatus.RESTARTING})


def settled_vertices(vertices: list[VertexStatus], to: ExecutionState) -> list[VertexStatus]:
    """Every subtask still shown in a non-terminal state becomes `to`: CANCELED when no driver
    runs any more (as Flink cancels a failed job's remaining tasks), FINISHED when the job
    finished (its last status may predate the last tasks' end). A status must never show
    subtasks running without a driver. Attempts and records stay as they were; a vertex
    summarised to counts (the status budget) is settled by its counts."""
    result = []
    for vertex in vertices:
        counts: Counter[str] = Counter()
        for name, count in vertex.states.items():
            counts[name if ExecutionState(name).is_terminal else to.value] += count
        states = [state if state.is_terminal else to for state in decode_states(vertex.subtasks)]
        result.append(vertex.model_copy(update={"states": dict(sorted(counts.items())),
                                                "subtasks": encode_states(states)}))
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


def observe(status: DataflowJobStatus, spec: DataflowJobSpec, observation: DriverObservation,
            generation: int) -> Transition:
    """The next status after one look at the driver."""
    current = status.job_status
    plan = status.plan
    if (current is None or plan is None or current is JobStatus.SUSPENDED
            or current is JobStatus.RESTARTING or current.is_globally_terminal):
        return Transition(status)
    if observation.plan_hash is not None and observation.plan_hash != plan.hash:
        return Transition(status)  # a redeploy is replacing this driver
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
    transition = _next_job_status(status.model_copy(update=update), spec, observation,
                                  generation)
    return dataclasses.replace(transition, events=[*outcomes, *transition.events])


def _next_job_status(status: DataflowJobStatus, spec: DataflowJobSpec,
                     observation: DriverObservation, generation: int) -> Transition:
    current = status.job_status
    runner_status = (observation.runner or {}).get("jobStatus")
    phase = observation.phase
    failed = phase is DriverPhase.FAILED or runner_status == JobStatus.FAILED.value or (
        phase is DriverPhase.MISSING and current is JobStatus.RUNNING)
    if failed:
        message = (observation.message or (observation.runner or {}).get("error")
                   or "the driver disappeared")
        return _on_failure(status, spec, str(message), generation)
    if phase is DriverPhase.SUCCEEDED or runner_status == JobStatus.FINISHED.value:
        target = JobStatus.FINISHED
        if current is JobStatus.CREATED:
            status, events = with_job_status(status, JobStatus.RUNNING, generation)
            status, more = with_job_status(status, target, generation)
            return Transition(status, events + more)
    elif phase is DriverPhase.RUNNING and runner_status != JobStatus.CREATED.value:
        # A driver that is up but whose runner has not started Spark yet stays CREATED.
        target = JobStatus.RUNNING
    elif phase is DriverPhase.PENDING and observation.pending_reason:
        return _pending(status, observation, generation)
    else:
        return Transition(status)
    status, events = with_job_status(status, target, generation)
    return Transition(status, events)


def checkpoint_outcomes(before: CheckpointingStatus | None, after: CheckpointingStatus,
                        conditions: list[Condition], spec: DataflowJobSpec,
                        generation: int) -> tuple[list[Condition], list[Event]]:
    """Checkpoint failures as Events, and the Checkpointing condition: False while checkpoints
    fail one after another, True again once one completes."""
    events: list[Event] = []
    # A new driver counts from zero: nothing before it is compared.
    earlier = before.failed if before is not None and before.failed <= after.failed else 0
    if after.failed > earlier:
        events.append(Event(WARNING, "CheckpointFailed",
                            f"{after.failed - earlier} checkpoint(s) failed: "
                            f"{after.last_failure or 'no reason given'}"))
    shown = next((c for c in conditions if c.type == cond.CHECKPOINTING), None)
    if after.consecutive_failures:
        tolerable = spec.checkpointing.tolerable_failed_checkpoints if spec.checkpointing else 0
        conditions = cond.set_condition(
            conditions, cond.CHECKPOINTING, False, "CheckpointsFailing",
            f"{after.consecutive_failures} checkpoint(s) failed in a row, more than "
            f"{tolerable} (tolerableFailedCheckpoints) fail the job: {after.last_failure}",
            generation)
    elif after.last_completed is not None:
        if shown is not None and shown.status == "False":
            events.append(Event(NORMAL, "CheckpointsRecovered",
                                f"checkpoint {after.last_completed.id} completed"))
        conditions = cond.set_condition(conditions, cond.CHECKPOINTING, True,
                                        "CheckpointCompleted", "checkpoints complete",
                                        generation)
    return conditions, events


def _pending(status: DataflowJobStatus, observation: DriverObservation,
             generation: int) -> Transition:
    """A driver that cannot start (unschedulable, image not pulled) says why in the Running
    condition, with one Warning Event per new reason or message."""
    reason = observation.pending_reason
    message = f"the driver pod cannot start: {observation.pending_message or reason}"
    shown = next((c for c in status.conditions if c.type == cond.RUNNING), None)
    if shown is not None and (shown.reason, shown.message) == (reason, cond.bounded(message)):
        return Transition(status)
    conditions = cond.set_condition(status.conditions, cond.RUNNING, False, reason, message,
                                    generation)
    return Transition(status.model_copy(update={"conditions": conditions}),
                      [Event(WARNING, "DriverPending", f"{reason}: {message}")])


def _on_failure(status: DataflowJobStatus, spec: DataflowJobSpec, message: str,
                generation: int) -> Transition:
    strategy = spec.restart_strategy
    status, events = with_job_status(status, JobStatus.FAILING, generation)
    can_restart = (strategy.type is RestartStrategyType.FIXED_DELAY
                   and status.restarts < strategy.attempts)
    if can_restart:
        attempt = status.restarts + 1
        status, more = with_job_status(status, JobStatus.RESTARTING, generation)
        status = status.model_copy(update={"restarts": attempt, "error": message})
        delay = duration_seconds(strategy.delay)
        return Transition(status, [*events, *more, Event(
            WARNING, "Restarting",
            f"driver failed: {message}; restart {attempt} of {strategy.attempts} in "
            f"{strategy.delay}")], restart_after=delay)
    reason = ("no restart strategy" if strategy.type is RestartStrategyType.NONE
              else f"{strategy.attempts} restarts used")
    full = f"driver failed: {message} ({reason})"
    status, more = with_job_status(status, JobStatus.FAILED, generation, full)
    status = status.model_copy(update={"error": full})
    return Transition(status, [*events, *more, Event(WARNING, "Failed", full)])
