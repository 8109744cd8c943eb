"""Status reconciliation: JobStatus moves, conditions, restarts per strategy, Events."""

from __future__ import annotations

from typing import Any

import pytest
from status_documents import parsed

from dataflow_engine.compiler.manifest import load_manifest_text
from dataflow_engine.graph.states import JobStatus
from dataflow_engine.spec.model import DataflowJobSpec
from dataflow_operator.backends.base import DriverObservation, DriverPhase
from dataflow_operator.observer.job_status import observe as look
from dataflow_operator.plan import build_plan
from dataflow_operator.reconciler.actions import Reconciled, ScheduleRestart
from dataflow_operator.reconciler.restart import after_observation
from dataflow_operator.status.conditions import condition_is
from dataflow_operator.status.job_status import initial_vertices
from dataflow_operator.status.model import DataflowJobStatus
from dataflow_operator.status.subtask_encoding import decode_runs

pytestmark = pytest.mark.unit
MANIFEST = """
apiVersion: dataflow.io/v1alpha1
kind: DataflowJob
metadata: {name: wc}
spec:
  parallelism: 2
  restartStrategy: {type: fixed-delay, attempts: 2, delay: 1s}
  pipeline:
    - {name: src, type: sequence, args: {from: 1, to: 10}, parallelism: 1}
    - {name: out, type: print, inputs: [src]}
"""


def _setup(strategy: str = "") -> tuple[DataflowJobSpec, DataflowJobStatus]:
    text = MANIFEST.replace("{type: fixed-delay, attempts: 2, delay: 1s}", strategy or
                            "{type: fixed-delay, attempts: 2, delay: 1s}")
    spec = load_manifest_text(text).spec
    plan = build_plan("wc", "ns", spec).status
    status = DataflowJobStatus(job_status=JobStatus.CREATED, plan=plan,
                               vertices=initial_vertices(plan), deployed_generation=1)
    return spec, status


def _runner(status: DataflowJobStatus, job_status: str, state: str,
            attempt: int = 0) -> dict[str, Any]:
    assert status.plan is not None
    return {"jobStatus": job_status, "vertices": [
        {"id": v.id, "subtasks": [{"index": i, "state": state, "attempt": attempt,
                                   "recordsIn": 5, "recordsOut": 5 + i}
                                  for i in range(v.parallelism)]}
        for v in status.plan.job_vertices]}


def observe(status: DataflowJobStatus, spec: DataflowJobSpec, observation: DriverObservation,
            generation: int) -> Reconciled:
    """One monitor look as the controller takes it: observed, then the restart strategy."""
    return after_observation(look(status, spec, observation, generation), spec, generation)


def observation(phase: DriverPhase, runner: dict[str, Any] | None = None, message: str = "",
                plan_hash: str | None = None, pending_reason: str = "",
                pending_message: str = "") -> DriverObservation:
    """What a backend reports, the runner's document parsed as the backends parse it."""
    return DriverObservation(phase, parsed(runner) if runner is not None else None,
                             message, plan_hash, pending_reason, pending_message)


def restart_after(step: Reconciled) -> float | None:
    return next((a.after for a in step.actions if isinstance(a, ScheduleRestart)), None)


def test_running_then_finished() -> None:
    spec, status = _setup()
    step = observe(status, spec, observation(
        DriverPhase.RUNNING, _runner(status, "RUNNING", "RUNNING")), 1)
    status = step.status
    assert status.job_status is JobStatus.RUNNING
    assert status.subtasks == "3/3"
    assert condition_is(status.conditions, "Running")
    assert status.vertices[1].states == {"RUNNING": 2}
    assert decode_runs(status.vertices[1].subtask_records_out, base36=True) == [5, 6]
    assert [e.reason for e in step.events] == ["JobStatusChanged"]

    step = observe(status, spec, observation(
        DriverPhase.SUCCEEDED, _runner(status, "FINISHED", "FINISHED")), 1)
    status = step.status
    assert status.job_status is JobStatus.FINISHED
    assert condition_is(status.conditions, "Succeeded")
    assert condition_is(status.conditions, "Running", False)
    assert status.end_time is not None
    assert [e.reason for e in step.events] == ["JobStatusChanged", "Finished"]
    # A finished job is left alone.
    assert observe(status, spec, observation(DriverPhase.MISSING), 1).status == status


def test_restarts_then_fails() -> None:
    spec, status = _setup()
    failed = observation(DriverPhase.FAILED, None, "exit code 1")
    for attempt in (1, 2):
        step = observe(status, spec, failed, 1)
        assert step.status.job_status is JobStatus.RESTARTING
        assert step.status.restarts == attempt
        assert restart_after(step) == 1.0
        assert "Restarting" in [e.reason for e in step.events]
        status = step.status.model_copy(update={"job_status": JobStatus.CREATED})
    step = observe(status, spec, failed, 1)
    assert step.status.job_status is JobStatus.FAILED
    assert restart_after(step) is None
    assert condition_is(step.status.conditions, "Failed")
    assert "2 restarts used" in (step.status.error or "")
    assert step.events[-1].reason == "Failed"


def test_no_restart_strategy_fails_at_once() -> None:
    spec, status = _setup("{type: none}")
    step = observe(status, spec, observation(DriverPhase.FAILED, None, "boom"), 1)
    assert step.status.job_status is JobStatus.FAILED
    assert "no restart strategy" in (step.status.error or "")


def test_attempts_count_driver_restarts() -> None:
    spec, status = _setup()
    status = status.model_copy(update={"restarts": 2})
    step = observe(status, spec, observation(
        DriverPhase.RUNNING, _runner(status, "RUNNING", "RUNNING", attempt=1)), 1)
    assert decode_runs(step.status.vertices[0].attempts) == [3]


def test_stale_driver_of_an_old_plan_is_ignored() -> None:
    spec, status = _setup()
    step = observe(status, spec, observation(DriverPhase.FAILED, plan_hash="old"), 1)
    assert step.status == status and step.events == []


def test_driver_up_before_spark_stays_created() -> None:
    spec, status = _setup()
    step = observe(status, spec, observation(
        DriverPhase.RUNNING, _runner(status, "CREATED", "SCHEDULED")), 1)
    assert step.status.job_status is JobStatus.CREATED
    assert step.status.vertices[0].states == {"SCHEDULED": 1}
    # Without a status document (no runner reachable yet) the running pod counts.
    step = observe(status, spec, observation(DriverPhase.RUNNING), 1)
    assert step.status.job_status is JobStatus.RUNNING


def test_a_failed_job_shows_no_subtask_running_and_has_not_succeeded() -> None:
    spec, status = _setup("{type: none}")
    status = observe(status, spec, observation(
        DriverPhase.RUNNING, _runner(status, "RUNNING", "RUNNING")), 1).status
    assert status.subtasks == "3/3"
    step = observe(status, spec, observation(DriverPhase.FAILED, None, "boom"), 1)
    failed = step.status
    assert failed.job_status is JobStatus.FAILED
    assert failed.subtasks == "0/3"
    assert [v.states for v in failed.vertices] == [{"CANCELED": 1}, {"CANCELED": 2}]
    # What was counted stays: the records of the run that failed.
    assert decode_runs(failed.vertices[1].subtask_records_out, base36=True) == [5, 6]
    assert condition_is(failed.conditions, "Succeeded", False)


def test_finished_subtasks_stay_finished_when_the_job_is_suspended() -> None:
    from dataflow_operator.status.job_status import with_job_status

    spec, status = _setup()
    runner = _runner(status, "RUNNING", "RUNNING")
    runner["vertices"][0]["subtasks"][0]["state"] = "FINISHED"
    status = observe(status, spec, observation(DriverPhase.RUNNING, runner), 1).status
    suspended, _ = with_job_status(status, JobStatus.SUSPENDED, 1)
    assert [v.states for v in suspended.vertices] == [{"FINISHED": 1}, {"CANCELED": 2}]


def test_a_finished_job_shows_every_subtask_finished_even_from_a_stale_look() -> None:
    spec, status = _setup()
    status = observe(status, spec, observation(
        DriverPhase.RUNNING, _runner(status, "RUNNING", "RUNNING")), 1).status
    # The driver exited 0 before its last status document was read.
    finished = observe(status, spec, observation(DriverPhase.SUCCEEDED, None), 1).status
    assert finished.job_status is JobStatus.FINISHED
    assert [v.states for v in finished.vertices] == [{"FINISHED": 1}, {"FINISHED": 2}]
    assert finished.subtasks == "0/3"


def test_a_driver_that_cannot_start_says_why_once_per_reason() -> None:
    spec, status = _setup()
    unschedulable = observation(
        DriverPhase.PENDING, pending_reason="Unschedulable",
        pending_message="0/3 nodes are available: 3 Insufficient cpu.")
    step = observe(status, spec, unschedulable, 1)
    assert step.status.job_status is JobStatus.CREATED
    running = next(c for c in step.status.conditions if c.type == "Running")
    assert (running.status, running.reason) == ("False", "Unschedulable")
    assert running.message.endswith("0/3 nodes are available: 3 Insufficient cpu.")
    assert [(e.type, e.reason) for e in step.events] == [("Warning", "DriverPending")]
    # The same verdict again (every monitor cycle, or after an operator restart): no new Event.
    again = observe(step.status, spec, unschedulable, 1)
    assert again.events == [] and again.status == step.status
    # A new reason is news.
    pulled = observe(again.status, spec, observation(
        DriverPhase.PENDING, pending_reason="ImagePullBackOff", pending_message="not found"), 1)
    assert [e.message for e in pulled.events] == [
        "ImagePullBackOff: the driver pod cannot start: not found"]
    # Once it runs, Running says so.
    up = observe(pulled.status, spec, observation(
        DriverPhase.RUNNING, _runner(status, "RUNNING", "RUNNING")), 1)
    assert condition_is(up.status.conditions, "Running")


def test_a_continuous_jobs_checkpoints_reach_the_status() -> None:
    spec, status = _setup()
    runner = _runner(status, "RUNNING", "RUNNING")
    runner["checkpoints"] = {"epochs": 12, "completed": 3, "failed": 0, "restoredFrom": None,
                             "lastCompleted": {"id": 12, "time": 1795471790446,
                                               "durationMs": 4, "stateSize": 361058,
                                               "path": "/mnt/chk/chk-12"}}
    status = observe(status, spec, observation(DriverPhase.RUNNING, runner), 1).status
    checkpoints = status.checkpoints
    assert checkpoints is not None and (checkpoints.epochs, checkpoints.completed) == (12, 3)
    last = checkpoints.last_completed
    assert last is not None
    assert (last.id, last.time, last.path) == (12, "2026-11-23T22:09:50Z", "/mnt/chk/chk-12")
    dumped = status.model_dump(by_alias=True, exclude_none=True)["checkpoints"]
    assert dumped["lastCompleted"]["stateSize"] == 361058
    # A runner of another shape leaves the last known checkpoints in place.
    runner["checkpoints"] = {"epochs": "many"}
    again = observe(status, spec, observation(DriverPhase.RUNNING, runner), 1).status
    assert again.checkpoints == checkpoints


def test_a_continuous_jobs_vertex_rates_reach_the_status_and_a_bounded_ones_do_not() -> None:
    spec, status = _setup()
    runner = _runner(status, "RUNNING", "RUNNING")
    source, sink = runner["vertices"]
    for subtask in source["subtasks"]:
        subtask.update(recordsOutPerSecond=250.04, busyRatio=0.1)
    for subtask in sink["subtasks"]:
        subtask.update(recordsInPerSecond=250.0, busyRatio=0.75 + subtask["index"] * 0.1)
    source["backlog"] = 1200
    bounded = observe(status, spec, observation(DriverPhase.RUNNING, runner), 1).status
    assert [v.busy_ratio for v in bounded.vertices] == [None, None]

    runner["checkpoints"] = {"epochs": 12, "completed": 3, "failed": 0}
    vertices = observe(status, spec, observation(DriverPhase.RUNNING, runner), 1).status.vertices
    assert [(v.records_out_per_second, v.busy_ratio, v.backlog) for v in vertices] == [
        (250.0, 0.1, 1200), (0.0, 0.8, None)]  # one subtask of the source, the sink's two
    assert vertices[1].records_in_per_second == 500.0
    # Once no driver runs, no rates are shown.
    running = observe(status, spec, observation(DriverPhase.RUNNING, runner), 1).status
    runner["jobStatus"] = "CANCELED"
    ended = observe(running, spec, observation(DriverPhase.SUCCEEDED, runner), 1).status
    assert ended.job_status is not JobStatus.RUNNING
    assert [(v.busy_ratio, v.backlog) for v in ended.vertices] == [(None, None)] * 2


def test_failing_checkpoints_turn_the_condition_false_with_one_event_per_failure() -> None:
    spec, status = _setup()
    runner = _runner(status, "RUNNING", "RUNNING")
    last = {"id": 4, "time": 1795471790446, "durationMs": 4, "stateSize": 10, "path": "/c/chk-4"}

    def look(completed: int, failed: int, in_a_row: int,
             reason: str | None = None) -> tuple[DataflowJobStatus, list[tuple[str, str]]]:
        runner["checkpoints"] = {"epochs": 9, "completed": completed, "failed": failed,
                                 "consecutiveFailures": in_a_row, "lastFailure": reason,
                                 "lastCompleted": last}
        step = observe(status, spec, observation(DriverPhase.RUNNING, runner), 1)
        return step.status, [(e.reason, e.message) for e in step.events
                             if e.reason.startswith("Checkpoint")]

    status, events = look(3, 0, 0)
    assert condition_is(status.conditions, "Checkpointing") and events == []
    status, events = look(3, 2, 2, "checkpoint 6: disk full")
    assert not condition_is(status.conditions, "Checkpointing")
    shown = next(c for c in status.conditions if c.type == "Checkpointing")
    assert shown.reason == "CheckpointsFailing" and "disk full" in shown.message
    assert events == [("CheckpointFailed", "2 checkpoint(s) failed: checkpoint 6: disk full")]
    status, events = look(3, 2, 2, "checkpoint 6: disk full")
    assert events == []  # the same failures seen again
    status, events = look(4, 2, 0, "checkpoint 6: disk full")
    assert condition_is(status.conditions, "Checkpointing")
    assert events == [("CheckpointsRecovered", "checkpoint 4 completed")]
    status, events = look(1, 0, 0)  # a restarted driver counts from zero
    assert events == [] and condition_is(status.conditions, "Checkpointing")


def test_kafka_partition_lag_reaches_the_status_most_lagging_first_and_capped() -> None:
    from dataflow_operator.status.model import KAFKA_PARTITIONS_SHOWN

    spec, status = _setup()
    runner = _runner(status, "RUNNING", "RUNNING")
    partitions = [{"source": "clicks", "topic": "t", "partition": p, "offset": 1000 + p,
                   "lag": p % 7} for p in range(KAFKA_PARTITIONS_SHOWN + 20)]
    runner["checkpoints"] = {"epochs": 3, "completed": 0, "failed": 0,
                             "kafkaPartitions": partitions}
    checkpoints = observe(status, spec, observation(DriverPhase.RUNNING, runner),
                          1).status.checkpoints
    assert checkpoints is not None
    assert checkpoints.kafka_lag == sum(p % 7 for p in range(KAFKA_PARTITIONS_SHOWN + 20))
    shown = checkpoints.kafka_partitions
    assert len(shown) == KAFKA_PARTITIONS_SHOWN
    assert [p.lag for p in shown] == sorted((p.lag for p in shown), reverse=True)
    assert (shown[0].lag, shown[0].partition, shown[0].offset) == (6, 6, 1006)
