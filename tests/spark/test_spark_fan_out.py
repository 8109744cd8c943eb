"""A producer feeding several consumers through exchanges (a fan-out) runs once: one Spark
shuffle carries its frames to all of them, each consumer reading its own partitions, and nothing
is persisted. Producers that also feed a collect sink or a forward edge are still persisted."""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import pytest
import spark_fns

from dataflow_engine.compiler.compile import compile_job
from dataflow_engine.graph.states import ExecutionState, JobStatus
from dataflow_engine.runtime.spark.spark_plan import Action, ActionKind, plan_job
from dataflow_engine.spec.model import DataflowJobSpec

pytestmark = pytest.mark.spark

NUMBERS = 600


def fan_out_spec() -> dict[str, Any]:
    """numbers (2 subtasks, recording each run) -> rebalance to 3, broadcast to 2, keyBy to 4."""
    consumer = {"type": "map", "function": "spark_fns:TagSubtask", "disableChaining": True}
    return {
        "parallelism": 2,
        "pipeline": [
            {"name": "numbers", "type": "sequence", "args": {"from": 0, "to": NUMBERS - 1}},
            {"name": "recorded", "type": "map", "inputs": ["numbers"],
             "function": "spark_fns:LifecycleRecorder"},
            {**consumer, "name": "rebalanced", "parallelism": 3,
             "inputs": [{"from": "recorded", "partitioning": "rebalance"}]},
            {**consumer, "name": "broadcast", "parallelism": 2,
             "inputs": [{"from": "recorded", "partitioning": "broadcast"}]},
            {"name": "keyed", "type": "reduce", "parallelism": 4,
             "inputs": [{"from": "recorded", "keyBy": "spark_fns:parity"}],
             "function": "spark_fns:add"},
            {"name": "out-rebalanced", "type": "collect", "inputs": ["rebalanced"]},
            {"name": "out-broadcast", "type": "collect", "inputs": ["broadcast"]},
            {"name": "out-keyed", "type": "collect", "inputs": ["keyed"]},
        ],
    }


def test_a_fan_out_runs_its_producer_once_through_one_shared_shuffle(run: Any) -> None:
    spec = DataflowJobSpec.model_validate(fan_out_spec())
    job_name = f"fan-out-{os.getpid()}"
    events = spark_fns.events_path(job_name)
    if os.path.exists(events):
        os.remove(events)
    plan = plan_job(compile_job(spec, job_name))
    producer = next(vp for vp in plan.vertices.values() if vp.vertex.name.startswith("Source"))
    assert producer.shared_shuffle == 3 + 2 + 4
    assert not producer.materialized
    assert Action(ActionKind.MATERIALIZE, producer.vertex.id) not in plan.actions

    result = run(spec, job_name)
    assert result.job_status is JobStatus.FINISHED, result.error
    rebalanced = [tuple(r) for r in result.collected["out-rebalanced"]]
    assert sorted(v for _, v in rebalanced) == list(range(NUMBERS))
    assert Counter(s for s, _ in rebalanced) == {0: 200, 1: 200, 2: 200}  # round robin
    broadcast = [tuple(r) for r in result.collected["out-broadcast"]]
    assert Counter(v for _, v in broadcast) == {v: 2 for v in range(NUMBERS)}
    assert {s for s, _ in broadcast} == {0, 1}
    evens = sum(range(0, NUMBERS, 2))
    assert sorted(result.collected["out-keyed"]) == sorted(
        [evens, NUMBERS * (NUMBERS - 1) // 2 - evens])
    with open(events, encoding="utf-8") as f:
        opened = sorted(line.split()[-1] for line in f if line.startswith("open"))
    assert opened == ["0", "1"]  # each producer subtask ran once for three consumers
    for vertex in result.vertices:
        assert vertex.state is ExecutionState.FINISHED, vertex.name
        assert all(s.state is ExecutionState.FINISHED and s.attempt == 0
                   for s in vertex.subtasks), vertex.name
    source = result.vertex(producer.vertex.id)
    # numRecordsOut counts a record per output written (broadcast once, as Flink does).
    assert source.records_out == 3 * NUMBERS


def test_two_inputs_from_one_producer_share_its_shuffle(run: Any) -> None:
    """``union(a, a)``: both data sets go to one consumer, which reads the whole shuffle."""
    spec = DataflowJobSpec.model_validate({
        "parallelism": 2,
        "pipeline": [
            {"name": "numbers", "type": "sequence", "args": {"from": 1, "to": 50}},
            {"name": "both", "type": "union",
             "inputs": [{"from": "numbers", "partitioning": "rebalance"},
                        {"from": "numbers", "partitioning": "shuffle"}]},
            {"name": "tagged", "type": "map", "function": "spark_fns:TagSubtask",
             "parallelism": 3, "inputs": ["both"]},
            {"name": "out", "type": "collect", "inputs": ["tagged"]},
        ],
    })
    plan = plan_job(compile_job(spec, "twice"))
    source = next(iter(plan.vertices.values()))
    assert source.shared_shuffle == 3 and not source.materialized
    result = run(spec)
    assert result.job_status is JobStatus.FINISHED, result.error
    assert Counter(v for _, v in map(tuple, result.collected["out"])) == {
        v: 2 for v in range(1, 51)}


def test_a_producer_with_a_collect_sink_too_is_persisted_and_runs_once(run: Any) -> None:
    spec = fan_out_spec()
    spec["pipeline"].append({"name": "out-recorded", "type": "collect", "inputs": ["recorded"]})
    model = DataflowJobSpec.model_validate(spec)
    plan = plan_job(compile_job(model, "persisted"))
    producer = next(vp for vp in plan.vertices.values() if vp.vertex.name.startswith("Source"))
    assert producer.materialized and not producer.shared_shuffle
    result = run(model)
    assert result.job_status is JobStatus.FINISHED, result.error
    assert sorted(result.collected["out-recorded"]) == list(range(NUMBERS))
    assert len(result.collected["out-broadcast"]) == 2 * NUMBERS
