"""The status keeps within its byte budget for any plan the operator's policy accepts."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from itertools import pairwise
from typing import Any

import pytest
from status_documents import status_document

from dataflow_engine.compiler.policy import STRICT
from dataflow_engine.graph.states import ExecutionState, JobStatus
from dataflow_engine.spec.model import DataflowJobSpec
from dataflow_operator.observer.job_status import vertices_from_runner
from dataflow_operator.plan import build_plan
from dataflow_operator.status import conditions as cond
from dataflow_operator.status.budget import STATUS_BUDGET_BYTES, status_bytes, within_budget
from dataflow_operator.status.job_status import initial_vertices, settled_vertices, with_job_status
from dataflow_operator.status.model import DataflowJobStatus, PlanStatus, SubtaskDetail
from dataflow_operator.status.view import render_status

pytestmark = pytest.mark.unit


def _largest_plan(operators: int = STRICT.max_operators,
                  execution_vertices: int = STRICT.max_execution_vertices) -> PlanStatus:
    """By default STRICT's bounds at once: max_operators operators, unchained, with the longest
    names, max_execution_vertices subtasks in all."""
    parallelism = execution_vertices // operators
    names = [f"o{i:04d}".ljust(63, "x") for i in range(operators)]
    pipeline: list[dict[str, Any]] = [{"name": names[0], "type": "sequence",
                                       "args": {"from": 0, "to": 10**9}}]
    pipeline += [{"name": name, "type": "map", "function": "json:dumps", "inputs": [before]}
                 for before, name in pairwise(names)]
    pipeline[-1] = {"name": names[-1], "type": "print", "inputs": [names[-2]]}
    spec = DataflowJobSpec.model_validate({"parallelism": parallelism, "chaining": False,
                                           "maxParallelism": 4096, "pipeline": pipeline})
    policy = replace(STRICT, max_operators=operators, max_execution_vertices=execution_vertices,
                     max_spec_bytes=4 * operators * 128)
    plan = build_plan("big", "ns", spec, policy).status
    assert len(plan.job_vertices) == operators
    assert plan.num_execution_vertices == execution_vertices
    return plan


def _busiest_runner(plan: PlanStatus, rng: random.Random) -> dict[str, Any]:
    """Every subtask different: no run-length encoding helps."""
    states = [s.value for s in ExecutionState]
    return {"jobStatus": "RUNNING", "vertices": [
        {"id": v.id, "subtasks": [{"index": i, "state": rng.choice(states),
                                   "attempt": rng.randrange(100),
                                   "recordsIn": rng.randrange(10**15),
                                   "recordsOut": rng.randrange(10**15)}
                                  for i in range(v.parallelism)]}
        for v in plan.job_vertices]}


def test_the_largest_accepted_plan_is_summarised_into_the_budget() -> None:
    rng = random.Random(3)
    plan = _largest_plan()
    runner = _busiest_runner(plan, rng)
    vertices = vertices_from_runner(plan, status_document(runner), 0, initial_vertices(plan))
    full = DataflowJobStatus(job_status=JobStatus.RUNNING, plan=plan, vertices=vertices,
                             error="Traceback (most recent call last):\n" * 5000)
    assert status_bytes(full) > STATUS_BUDGET_BYTES  # the case the budget exists for

    fitted = within_budget(full)

    assert status_bytes(fitted) <= STATUS_BUDGET_BYTES
    # Within the default bounds, some per-vertex detail always stays.
    assert fitted.subtask_detail in (SubtaskDetail.STATES, SubtaskDetail.COUNTS)
    assert fitted.error is not None and len(fitted.error) <= cond.MAX_MESSAGE_CHARS
    assert fitted.error.endswith("Traceback (most recent call last):\n")
    # Totals survive every summary: per-state counts and records per vertex.
    for before, after in zip(full.vertices, fitted.vertices, strict=True):
        assert (after.states, after.records_in, after.records_out) == (
            before.states, before.records_in, before.records_out)
        assert after.attempts == after.subtask_records_in == ""
    # The written document round-trips through the model.
    document = json.loads(json.dumps(fitted.model_dump(mode="json", by_alias=True)))
    assert DataflowJobStatus.model_validate(document).subtask_detail is fitted.subtask_detail


def test_each_level_is_used_only_when_the_one_before_does_not_fit() -> None:
    plan = _largest_plan()
    runner = status_document(_busiest_runner(plan, random.Random(5)))
    vertices = vertices_from_runner(plan, runner, 0, [])
    full = DataflowJobStatus(job_status=JobStatus.RUNNING, plan=plan, vertices=vertices)
    states_only = within_budget(full, budget=status_bytes(full) - 1)
    assert states_only.subtask_detail is SubtaskDetail.STATES
    assert states_only.vertices[0].subtasks == vertices[0].subtasks
    counts = within_budget(full, budget=status_bytes(states_only) - 1)
    assert counts.subtask_detail is SubtaskDetail.COUNTS
    assert all(v.subtasks == "" for v in counts.vertices)


def test_beyond_the_default_bounds_vertices_go_too() -> None:
    plan = _largest_plan(operators=4 * STRICT.max_operators,
                         execution_vertices=2 * STRICT.max_execution_vertices)
    runner = status_document(_busiest_runner(plan, random.Random(2)))
    vertices = vertices_from_runner(plan, runner, 0, [])
    full = DataflowJobStatus(job_status=JobStatus.RUNNING, plan=plan, vertices=vertices,
                             subtasks="0/40000")
    fitted = within_budget(full)
    assert status_bytes(fitted) <= STATUS_BUDGET_BYTES
    assert fitted.subtask_detail is SubtaskDetail.NONE
    assert fitted.vertices == [] and fitted.plan is not None and fitted.plan.job_vertices == []
    assert (fitted.plan.hash, fitted.plan.num_execution_vertices, fitted.subtasks) == (
        plan.hash, plan.num_execution_vertices, "0/40000")


def test_a_small_status_is_written_whole_and_a_summarised_one_never_claims_more() -> None:
    plan = build_plan("small", "ns", DataflowJobSpec.model_validate({"pipeline": [
        {"name": "src", "type": "sequence", "args": {"from": 0, "to": 9}},
        {"name": "out", "type": "print", "inputs": ["src"]}]})).status
    small = DataflowJobStatus(job_status=JobStatus.RUNNING, plan=plan,
                              vertices=initial_vertices(plan))
    assert within_budget(small) == small
    summarised = within_budget(small, budget=status_bytes(small) - 1)
    assert summarised.subtask_detail is not SubtaskDetail.FULL
    # Read back after an operator restart, it is small enough, yet its detail is gone.
    assert within_budget(summarised).subtask_detail is summarised.subtask_detail


def test_a_summarised_job_that_fails_shows_no_subtask_running() -> None:
    plan = _largest_plan()
    runner = status_document(_busiest_runner(plan, random.Random(9)))
    vertices = vertices_from_runner(plan, runner, 0, [])
    running = DataflowJobStatus(job_status=JobStatus.RUNNING, plan=plan, vertices=vertices)
    states_only = within_budget(running, budget=status_bytes(running) - 1)
    counts = within_budget(running, budget=status_bytes(states_only) - 1)
    assert counts.subtask_detail is SubtaskDetail.COUNTS

    failed, _ = with_job_status(counts.model_copy(update={"job_status": JobStatus.FAILING}),
                                JobStatus.FAILED, 1, "boom")

    for before, after in zip(counts.vertices, failed.vertices, strict=True):
        assert sum(after.states.values()) == before.parallelism
        assert not {name for name in after.states if not ExecutionState(name).is_terminal}
        assert after.states.get("CANCELED", 0) >= before.states.get("RUNNING", 0)
    assert failed.subtasks is not None and failed.subtasks.startswith("0/")


def test_settling_keeps_attempts_and_records() -> None:
    plan = build_plan("s", "ns", DataflowJobSpec.model_validate({"parallelism": 3, "pipeline": [
        {"name": "src", "type": "sequence", "args": {"from": 0, "to": 9}},
        {"name": "out", "type": "print", "inputs": ["src"]}]})).status
    runner = {"vertices": [{"id": v.id, "subtasks": [
        {"index": i, "state": "RUNNING" if i else "FINISHED", "attempt": i, "recordsOut": 7 * i}
        for i in range(v.parallelism)]} for v in plan.job_vertices]}
    vertices = vertices_from_runner(plan, status_document(runner), 0, [])
    settled = settled_vertices(vertices, ExecutionState.CANCELED)
    assert [v.subtasks for v in settled] == ["FXX"] * len(plan.job_vertices)
    assert [v.states for v in settled] == [{"CANCELED": 2, "FINISHED": 1}] * len(settled)
    assert [(v.attempts, v.subtask_records_out) for v in settled] == [
        (v.attempts, v.subtask_records_out) for v in vertices]


def test_dataflow_status_says_when_detail_was_left_out() -> None:
    plan = _largest_plan()
    runner = status_document(_busiest_runner(plan, random.Random(1)))
    vertices = vertices_from_runner(plan, runner, 0, [])
    fitted = within_budget(DataflowJobStatus(job_status=JobStatus.RUNNING, plan=plan,
                                             vertices=vertices))
    job = {"metadata": {"name": "big", "namespace": "ns"},
           "status": fitted.model_dump(mode="json", by_alias=True)}
    text = render_status(job)
    assert f"per-subtask detail: {fitted.subtask_detail.value} only" in text
