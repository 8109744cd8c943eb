"""Random valid pipelines compile, and the graph layers keep their invariants."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dataflow_engine.compiler.compile import compile_job
from dataflow_engine.graph.execution_graph import (
    ExecutionGraph,
    ExecutionVertex,
    PipelinedRegion,
)
from dataflow_engine.graph.job_graph import is_chainable
from dataflow_engine.graph.stream_graph import PartitionerKind
from dataflow_engine.spec.model import DataflowJobSpec

pytestmark = pytest.mark.unit

PARTITIONINGS = [None, "rebalance", "rescale", "shuffle", "broadcast", "global", "forward",
                 "keyBy"]


@st.composite
def pipelines(draw: st.DrawFn) -> dict[str, Any]:
    ops: list[dict[str, Any]] = []
    parallelism: dict[str, int] = {}
    for i in range(draw(st.integers(1, 3))):
        p = draw(st.integers(1, 4))
        ops.append({"name": f"s{i}", "type": "sequence", "args": {"from": 0, "to": 9},
                    "parallelism": p, "slotSharingGroup": draw(st.sampled_from(["default", "g"]))})
        parallelism[f"s{i}"] = p
    for i in range(draw(st.integers(0, 8))):
        name, p = f"t{i}", draw(st.integers(1, 4))
        upstream = draw(st.sampled_from(sorted(parallelism)))
        choice = draw(st.sampled_from(PARTITIONINGS))
        if choice == "forward" and parallelism[upstream] != p:
            choice = None
        edge: dict[str, Any] = {"from": upstream}
        if choice == "keyBy":
            edge["keyBy"] = 0
        elif choice is not None:
            edge["partitioning"] = choice
        kind = "sum" if choice == "keyBy" and draw(st.booleans()) else "map"
        operator: dict[str, Any] = {"name": name, "type": kind, "inputs": [edge],
                                    "parallelism": p,
                                    "startNewChain": draw(st.booleans()),
                                    "disableChaining": draw(st.integers(0, 5)) == 0}
        operator.update({"args": {"field": 1}} if kind == "sum" else {"function": "identity"})
        if draw(st.integers(0, 4)) == 0:
            operator["slotSharingGroup"] = "g"
        if draw(st.integers(0, 3)) == 0 and len(parallelism) > 1:
            union = f"u{i}"
            others = draw(st.lists(st.sampled_from(sorted(parallelism)), min_size=1,
                                   max_size=3))
            ops.append({"name": union, "type": "union", "inputs": [upstream, *others]})
            operator["inputs"] = [{"from": union, **{k: v for k, v in edge.items()
                                                    if k != "from"}}]
            if "partitioning" in edge and edge["partitioning"] == "forward":
                operator["inputs"][0].pop("partitioning")
        ops.append(operator)
        parallelism[name] = p
    consumed = {e if isinstance(e, str) else e["from"] for o in ops for e in o.get("inputs", [])}
    for name in sorted(set(parallelism) - consumed):
        ops.append({"name": f"sink-{name}", "type": "discard", "inputs": [name],
                    "parallelism": parallelism[name]})
    return {"parallelism": 2, "chaining": draw(st.booleans()), "pipeline": ops,
            "runtimeMode": draw(st.sampled_from(["STREAMING", "BATCH"])),
            "slotsPerExecutor": draw(st.integers(1, 3)),
            "slotSharingGroups": [{"name": "default"}, {"name": "g", "cpu": "2"}]}


@settings(max_examples=150, deadline=None)
@given(pipelines())
def test_graph_invariants(data: dict[str, Any]) -> None:
    spec = DataflowJobSpec.model_validate(data)
    job = compile_job(spec, "prop")
    stream, graph = job.stream_graph, job.job_graph

    owners = [n.id for v in graph.vertices for n in v.operators]
    assert sorted(owners) == sorted(stream.nodes), "each StreamNode in exactly one JobVertex"

    chained = {id(e) for v in graph.vertices for e in v.chained_edges}
    for edge in stream.edges:
        up, down = stream.nodes[edge.source_id], stream.nodes[edge.target_id]
        if id(edge) in chained:
            assert edge.partitioner is PartitionerKind.FORWARD
            assert up.parallelism == down.parallelism
            assert up.slot_sharing_group == down.slot_sharing_group
            assert stream.chaining_enabled
        assert (id(edge) in chained) == is_chainable(edge, stream)
    assert len(graph.edges) == len(stream.edges) - len(chained)

    execution = job.execution_graph
    assert execution.num_execution_vertices == sum(v.parallelism for v in graph.vertices)
    assert sum(len(r.vertices) for r in execution.pipelined_regions()) == (
        execution.num_execution_vertices)
    assert _regions(execution.pipelined_regions()) == _regions_by_search(execution)
    for vertex in execution.execution_vertices():
        inputs = vertex.job_vertex.job_vertex.inputs
        for group, edge in zip(vertex.consumed_partition_groups, inputs, strict=True):
            assert 0 <= group.start < group.end <= edge.source.producer.parallelism

    widest: dict[str, int] = {}
    for v in graph.vertices:
        widest[v.slot_sharing_group] = max(widest.get(v.slot_sharing_group, 0), v.parallelism)
    assert job.slot_plan.slots == widest
    assert job.slot_plan.total_slots == sum(widest.values())
    for executors in job.slot_plan.executors:
        assert executors.count * executors.slots_per_executor >= widest[
            executors.slot_sharing_group]


def _regions(regions: list[PipelinedRegion]) -> set[frozenset[tuple[str, int]]]:
    return {frozenset((v.job_vertex.id, v.subtask_index) for v in r.vertices) for r in regions}


def _regions_by_search(graph: ExecutionGraph) -> set[frozenset[tuple[str, int]]]:
    """The regions the slow way: a search over every pipelined producer-consumer pair."""
    neighbours: dict[tuple[str, int], set[tuple[str, int]]] = {}

    def key(vertex: ExecutionVertex) -> tuple[str, int]:
        return vertex.job_vertex.id, vertex.subtask_index

    for vertex in graph.execution_vertices():
        neighbours.setdefault(key(vertex), set())
        for group in vertex.consumed_partition_groups:
            if group.result.result_type.is_pipelined:
                for partition in group.partitions:
                    neighbours[key(vertex)].add(key(partition.producer))
                    neighbours.setdefault(key(partition.producer), set()).add(key(vertex))
    regions, seen = set(), set()
    for start in neighbours:
        if start in seen:
            continue
        region, frontier = {start}, [start]
        while frontier:
            for other in neighbours[frontier.pop()] - region:
                region.add(other)
                frontier.append(other)
        seen |= region
        regions.add(frozenset(region))
    return regions
