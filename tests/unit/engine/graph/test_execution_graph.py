"""ExecutionGraph connections (Flink's pointwise ranges, grouped ALL_TO_ALL), regions, states."""

from __future__ import annotations

import gc

import pytest
from graph_specs import compiled, op, source

from dataflow_engine.graph.execution_graph import ExecutionGraph
from dataflow_engine.graph.states import (
    ExecutionState,
    IllegalStateTransition,
    JobStatus,
)

pytestmark = pytest.mark.unit


def _rescale(producers: int, consumers: int, mode: str = "BATCH") -> ExecutionGraph:
    return compiled(
        source(parallelism=producers),
        op("m", "map", {"from": "src", "partitioning": "rescale"}, parallelism=consumers),
        op("out", "discard", "m", parallelism=consumers),
        runtimeMode=mode,
    ).execution_graph


def _vertices(graph: ExecutionGraph) -> list[list[object]]:
    return [ejv.task_vertices for ejv in graph.job_vertices.values()]  # type: ignore[misc]


def test_rescale_down_consumer_reads_a_range() -> None:
    graph = _rescale(7, 3)
    producers, consumers = _vertices(graph)
    ranges = [(g.start, g.end) for c in consumers for g in c.consumed_partition_groups]
    # Consumer i reads producers [i*S/T, (i+1)*S/T) with S=7, T=3.
    assert ranges == [(0, 2), (2, 4), (4, 7)]
    owners = [p.produced_partitions[0].consumer_vertex_group for p in producers]
    assert [(g.start, g.end) for g in owners] == [
        (0, 1), (0, 1), (1, 2), (1, 2), (2, 3), (2, 3), (2, 3)]


def test_rescale_up_producer_feeds_a_range() -> None:
    graph = _rescale(3, 7)
    producers, consumers = _vertices(graph)
    # Producer p feeds consumers [ceil(p*T/S), ceil((p+1)*T/S)) with S=3, T=7.
    fed = [(p.produced_partitions[0].consumer_vertex_group.start,
            p.produced_partitions[0].consumer_vertex_group.end) for p in producers]
    assert fed == [(0, 3), (3, 5), (5, 7)]
    reads = [[(g.start, g.end) for g in c.consumed_partition_groups] for c in consumers]
    assert reads == [[(0, 1)]] * 3 + [[(1, 2)]] * 2 + [[(2, 3)]] * 2


def test_rescale_equal_parallelism_is_one_to_one() -> None:
    _, consumers = _vertices(_rescale(4, 4))
    assert [[(g.start, g.end) for g in c.consumed_partition_groups] for c in consumers] == [
        [(i, i + 1)] for i in range(4)]


def test_all_to_all_shares_one_group() -> None:
    plan = compiled(source(parallelism=50), op("m", "map", "src", parallelism=40),
                    op("out", "discard", "m", parallelism=40))
    producers, consumers = _vertices(plan.execution_graph)
    groups = {id(g) for c in consumers for g in c.consumed_partition_groups}
    assert len(groups) == 1
    group = consumers[0].consumed_partition_groups[0]
    assert (group.start, group.end) == (0, 50)
    consumer_groups = {id(p.produced_partitions[0].consumer_vertex_group) for p in producers}
    assert len(consumer_groups) == 1


def test_vertex_names_and_counts() -> None:
    plan = compiled(source(parallelism=2), op("out", "print", "src", parallelism=2))
    graph = plan.execution_graph
    assert graph.num_execution_vertices == 2
    assert [ev.name for ev in graph.execution_vertices()] == [
        "Source: Sequence Source -> Sink: Print to Std. Out (1/2)",
        "Source: Sequence Source -> Sink: Print to Std. Out (2/2)",
    ]


def test_pipelined_regions_follow_exchange_types() -> None:
    assert len(_rescale(4, 2, "STREAMING").pipelined_regions()) == 2  # pointwise: 2 islands
    assert len(_rescale(4, 2, "BATCH").pipelined_regions()) == 6  # blocking: one per vertex
    streaming_all_to_all = compiled(
        source(parallelism=3), op("m", "map", "src", parallelism=2),
        op("out", "discard", "m", parallelism=2), runtimeMode="STREAMING").execution_graph
    regions = streaming_all_to_all.pipelined_regions()
    assert len(regions) == 1 and len(regions[0].vertices) == 5


def test_execution_state_machine() -> None:
    vertex = _rescale(1, 1).execution_vertices()[0]
    execution = vertex.current_execution
    for state in (ExecutionState.SCHEDULED, ExecutionState.DEPLOYING,
                  ExecutionState.INITIALIZING, ExecutionState.RUNNING, ExecutionState.FAILED):
        execution.transition_state(state)
    with pytest.raises(IllegalStateTransition):
        execution.transition_state(ExecutionState.RUNNING)
    retry = vertex.create_new_execution()
    assert (retry.attempt_number, retry.state) == (1, ExecutionState.CREATED)
    with pytest.raises(IllegalStateTransition):
        retry.transition_state(ExecutionState.FINISHED)
    with pytest.raises(ValueError, match="still CREATED"):
        vertex.create_new_execution()


def test_job_status_machine() -> None:
    graph = _rescale(1, 1)
    graph.transition_state(JobStatus.RUNNING)
    graph.transition_state(JobStatus.FAILING)
    graph.transition_state(JobStatus.RESTARTING)
    graph.transition_state(JobStatus.RUNNING)
    graph.transition_state(JobStatus.FINISHED)
    with pytest.raises(IllegalStateTransition, match="FINISHED cannot become RUNNING"):
        graph.transition_state(JobStatus.RUNNING)


@pytest.mark.parametrize("enabled", [True, False])
def test_the_build_leaves_the_cyclic_collector_as_it_found_it(enabled: bool) -> None:
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        _rescale(4, 2)
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_subtasks_of_an_all_to_all_input_share_its_group_and_executions_come_when_asked() -> None:
    graph = compiled(source(parallelism=3), op("m", "map", "src", parallelism=5),
                     op("out", "discard", "m", parallelism=5)).execution_graph
    consumers = _vertices(graph)[1]
    assert len({id(c.consumed_partition_groups[0]) for c in consumers}) == 1
    vertex = graph.execution_vertices()[0]
    assert vertex._execution is None
    assert vertex.current_execution is vertex.current_execution
    assert vertex.produced_partitions[0].producer is vertex
