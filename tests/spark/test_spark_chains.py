"""OperatorChain semantics on Spark: life-cycle order, copying versus object reuse, the runtime
context, union, a producer with two consumers, and how a failing function is reported."""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from spark_fns import events_path

from dataflow_engine.compiler.compile import compile_job
from dataflow_engine.graph.states import ExecutionState, JobStatus
from dataflow_engine.runtime.spark.spark_plan import plan_job
from dataflow_engine.runtime.streamoperators.sources import sequence_splits
from dataflow_engine.runtime.taskmanager.stream_task import StreamTask
from dataflow_engine.spec.model import DataflowJobSpec

pytestmark = pytest.mark.spark


def unique_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def read_events(job_name: str) -> list[str]:
    path = Path(events_path(job_name))
    try:
        return path.read_text().splitlines()
    finally:
        path.unlink(missing_ok=True)


LIFECYCLE_CHAIN = {
    "pipeline": [
        {"name": "source", "type": "collection", "args": {"elements": [1, 2, 3]}},
        {"name": "first", "type": "map", "inputs": ["source"],
         "function": "spark_fns:LifecycleRecorder"},
        {"name": "second", "type": "map", "inputs": ["first"],
         "function": "spark_fns:LifecycleRecorder"},
        {"name": "third", "type": "filter", "inputs": ["second"],
         "function": "spark_fns:LifecycleRecorder"},
        {"name": "out", "type": "collect", "inputs": ["third"]},
    ],
}


def test_chain_opens_tail_first_and_closes_head_first(run: Any) -> None:
    name = unique_name("lifecycle")
    result = run(LIFECYCLE_CHAIN, name)
    assert result.job_status is JobStatus.FINISHED, result.error
    assert len(result.vertices) == 1  # one chain, one task
    assert result.collected["out"] == [1, 2, 3]
    assert read_events(name) == ["open third 0", "open second 0", "open first 0",
                                 "close first 0", "close second 0", "close third 0"]


def test_chain_sets_up_tail_first_and_finishes_head_first() -> None:
    """The full Flink life cycle, observed in-process on the same StreamTask code."""
    spec = DataflowJobSpec.model_validate({
        "pipeline": [
            {"name": "source", "type": "collection", "args": {"elements": [1, 2]}},
            {"name": "double", "type": "map", "inputs": ["source"], "function": "square"},
            {"name": "split", "type": "filter", "inputs": ["double"], "function": "non_empty"},
            {"name": "a", "type": "collect", "inputs": ["split"]},
            {"name": "b", "type": "discard", "inputs": ["double"]},
        ],
    })
    plan = plan_job(compile_job(spec, "order"))
    (vertex,) = plan.vertices.values()
    events: list[tuple[str, str]] = []
    task = StreamTask(vertex.descriptor, 0, 0, lambda phase, op: events.append((phase, op)))
    list(task.invoke([]))
    phases = {p: [op for q, op in events if q == p] for p in ("setup", "open", "finish", "close")}
    # Post-order over the chain tree (source -> double -> (split -> a, b)).
    assert phases["setup"] == ["a", "split", "b", "double", "source"]
    assert phases["open"] == phases["setup"]
    assert phases["finish"] == ["source", "double", "b", "split", "a"]
    assert phases["close"] == phases["finish"]
    assert task.metrics(0).operators == (("source", 0, 2), ("double", 2, 2), ("split", 2, 2),
                                        ("a", 2, 0), ("b", 2, 0))


def copy_chain(object_reuse: bool) -> dict[str, Any]:
    return {
        "objectReuse": object_reuse,
        "pipeline": [
            {"name": "source", "type": "collection", "args": {"elements": [1, 2, 3, 4]}},
            {"name": "emit", "type": "map", "inputs": ["source"],
             "function": "spark_fns:RememberOutput"},
            {"name": "mutate", "type": "map", "inputs": ["emit"], "function": "spark_fns:mutate"},
            {"name": "out", "type": "collect", "inputs": ["mutate"]},
        ],
    }


def test_chained_operators_get_copies_without_object_reuse(run: Any) -> None:
    result = run(copy_chain(object_reuse=False))
    assert [r["previous_mutated"] for r in result.collected["out"]] == [False] * 4


def test_chained_operators_share_objects_with_object_reuse(run: Any) -> None:
    result = run(copy_chain(object_reuse=True))
    assert [r["previous_mutated"] for r in result.collected["out"]] == [False, True, True, True]


def test_rich_function_sees_flinks_runtime_context(run: Any) -> None:
    name = unique_name("context")
    spec = {
        "parallelism": 3, "maxParallelism": 64,
        "pipeline": [
            {"name": "source", "type": "sequence", "args": {"from": 1, "to": 30}},
            {"name": "probe", "type": "flat_map", "inputs": ["source"],
             "function": "spark_fns:ContextSnapshot"},
            {"name": "out", "type": "collect", "inputs": ["probe"]},
        ],
    }
    result = run(spec, name)
    task_name = result.vertices[0].name
    assert task_name == "Source: Sequence Source -> Flat Map -> Sink: Collect Sink"
    assert sorted(result.collected["out"], key=lambda c: c["index"]) == [
        {"index": i, "parallelism": 3, "max": 64, "attempt": 0, "task": task_name, "job": name,
         "operator": "probe"} for i in range(3)]


def test_union_gives_subtask_i_every_inputs_partition_i(run: Any) -> None:
    left, right, other = list(range(0, 12)), list(range(100, 112)), list(range(200, 209))
    spec = {
        "parallelism": 3,
        "pipeline": [
            {"name": "left", "type": "sequence", "args": {"from": 0, "to": 11}},
            {"name": "right", "type": "sequence", "args": {"from": 100, "to": 111}},
            {"name": "other", "type": "collection", "parallelism": 1,
             "args": {"elements": other}},
            {"name": "all", "type": "union", "inputs": ["left", "right", "other"]},
            {"name": "tag", "type": "map", "inputs": ["all"], "function": "spark_fns:TagSubtask"},
            {"name": "out", "type": "collect", "inputs": ["tag"]},
        ],
    }
    result = run(spec)
    assert result.job_status is JobStatus.FINISHED, result.error
    out = [tuple(r) for r in result.collected["out"]]
    assert sorted(v for _, v in out) == sorted(left + right + other)
    producer = {v: i for first, last in ((0, 11), (100, 111))
                for i, (start, end) in enumerate(sequence_splits(first, last, 3))
                for v in range(start, end)}
    # Forward inputs (equal parallelism) keep their index; 'other' is rebalanced.
    assert all(s == producer[v] for s, v in out if v < 200)
    assert Counter(s for s, v in out if v >= 200) == {0: 3, 1: 3, 2: 3}
    tag_vertex = result.vertex("Map -> Sink: Collect Sink")
    assert tag_vertex.records_in == len(out)


def test_a_vertex_with_two_consumers_is_computed_once(run: Any) -> None:
    name = unique_name("twice")
    elements = [["a", 1], ["b", 2], ["a", 3], ["c", 4], ["b", 5], ["a", 6]]
    spec = {
        "parallelism": 2,
        "pipeline": [
            {"name": "source", "type": "collection", "args": {"elements": elements}},
            {"name": "count", "type": "map", "inputs": ["source"],
             "function": "spark_fns:CountCalls", "startNewChain": True},
            {"name": "sums", "type": "sum", "inputs": [{"from": "count", "keyBy": 0}],
             "args": {"field": 1}},
            {"name": "sums_out", "type": "collect", "inputs": ["sums"]},
            {"name": "all", "type": "collect", "inputs": [{"from": "count",
                                                             "partitioning": "rebalance"}],
             "parallelism": 3},
            {"name": "firsts", "type": "collect", "inputs": ["count"]},
        ],
    }
    result = run(spec, name)
    assert result.job_status is JobStatus.FINISHED, result.error
    assert sorted(map(tuple, result.collected["sums_out"])) == [("a", 10), ("b", 7), ("c", 4)]
    assert sorted(map(tuple, result.collected["all"])) == sorted(map(tuple, elements))
    assert sorted(map(tuple, result.collected["firsts"])) == sorted(map(tuple, elements))
    # One close per subtask: each subtask of 'count' ran exactly once, over its own split.
    assert sorted(read_events(name)) == ["0 0 3", "1 0 3"]
    assert result.operator_metrics()["count"] == (6, 6)


def test_failing_function_reports_operator_subtask_and_exception(run: Any) -> None:
    spec = {
        "parallelism": 2,
        "pipeline": [
            {"name": "source", "type": "sequence", "args": {"from": 1, "to": 4}},
            {"name": "boom", "type": "map", "inputs": ["source"],
             "function": "spark_fns:fail_on_three"},
            {"name": "out", "type": "collect", "inputs": ["boom"]},
        ],
    }
    result = run(spec)
    assert result.job_status is JobStatus.FAILED
    failure = result.failure
    assert failure is not None
    assert (failure.operator, failure.subtask_index, failure.exception_type, failure.message) == (
        "boom", 1, "ValueError", "bad record 3")
    assert "fail_on_three" in failure.traceback
    assert result.error is not None
    assert "'boom'" in result.error and "subtask 1" in result.error
    assert "ValueError: bad record 3" in result.error
    assert result.collected == {}
    vertex = result.vertices[0]
    assert vertex.subtasks[1].state is ExecutionState.FAILED
    assert vertex.state is ExecutionState.FAILED
    document = result.status.to_json()
    assert document["jobStatus"] == "FAILED"
    assert document["error"] == result.error
    assert document["failure"]["operator"] == "boom"
    assert document["failure"]["subtaskIndex"] == 1


def test_forward_edge_between_tasks_reads_the_persisted_partition(run: Any) -> None:
    spec = {
        "parallelism": 2,
        "pipeline": [
            {"name": "source", "type": "sequence", "args": {"from": 1, "to": 10}},
            {"name": "first", "type": "map", "inputs": ["source"],
             "function": "spark_fns:TagSubtask"},
            {"name": "second", "type": "map", "inputs": ["first"],
             "function": "spark_fns:TagSubtask", "startNewChain": True},
            {"name": "out", "type": "collect", "inputs": ["second"]},
        ],
    }
    result = run(spec)
    assert [v.name for v in result.vertices] == ["Source: Sequence Source -> Map",
                                                  "Map -> Sink: Collect Sink"]
    out = [(a, b, v) for a, (b, v) in result.collected["out"]]
    assert sorted(v for _, _, v in out) == list(range(1, 11))
    assert all(a == b == (0 if v <= 5 else 1) for a, b, v in out)
    assert all(s.state is ExecutionState.FINISHED for v in result.vertices for s in v.subtasks)


def test_dangling_operator_still_runs(run: Any) -> None:
    spec = {
        "pipeline": [
            {"name": "source", "type": "sequence", "args": {"from": 1, "to": 5}},
            {"name": "unused", "type": "map", "inputs": ["source"], "function": "square",
             "startNewChain": True},
            {"name": "out", "type": "collect", "inputs": ["source"]},
        ],
    }
    result = run(spec)
    assert result.job_status is JobStatus.FINISHED, result.error
    assert result.collected["out"] == [1, 2, 3, 4, 5]
    assert result.operator_metrics()["unused"] == (5, 5)


def _in_process(pipeline: list[dict[str, Any]], **spec: Any) -> StreamTask:
    plan = plan_job(compile_job(DataflowJobSpec.model_validate({**spec, "pipeline": pipeline}),
                                "fused"))
    (vertex,) = plan.vertices.values()
    return StreamTask(vertex.descriptor, 0, 0)


def test_a_run_of_maps_and_filters_is_fused_and_counts_per_operator() -> None:
    task = _in_process([
        {"name": "source", "type": "sequence", "args": {"from": 1, "to": 10}},
        {"name": "square", "type": "map", "inputs": ["source"], "function": "square"},
        {"name": "even", "type": "filter", "inputs": ["square"], "function": "is_even"},
        {"name": "same", "type": "map", "inputs": ["even"], "function": "identity"},
        {"name": "out", "type": "discard", "inputs": ["same"]},
    ])
    list(task.invoke([]))
    square = next(op for op in task.chain.all_operators if op.name == "square")
    assert square.process_element.__code__.co_filename == "<fused run of 3 operators>"
    assert task.metrics(0).operators == (("source", 0, 10), ("square", 10, 10),
                                        ("even", 10, 5), ("same", 5, 5), ("out", 5, 0))


def test_a_failure_inside_a_fused_run_names_its_operator(run: Any) -> None:
    result = run({"pipeline": [
        {"name": "source", "type": "sequence", "args": {"from": 1, "to": 4}},
        {"name": "before", "type": "map", "inputs": ["source"], "function": "identity"},
        {"name": "boom", "type": "map", "inputs": ["before"],
         "function": "spark_fns:fail_on_three"},
        {"name": "after", "type": "filter", "inputs": ["boom"], "function": "non_empty"},
        {"name": "out", "type": "collect", "inputs": ["after"]},
    ]})
    assert result.job_status is JobStatus.FAILED
    assert result.failure is not None and result.failure.operator == "boom"
    assert "fail_on_three" in result.failure.traceback
