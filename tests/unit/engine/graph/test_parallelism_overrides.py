"""Parallelism overrides by JobVertex id (Flink's pipeline.jobvertex-parallelism-overrides):
applied after chaining, so chains and ids stay, and every layer below follows."""

from __future__ import annotations

import pytest
from graph_specs import chains, compiled, op, source

from dataflow_engine.errors import SpecError
from dataflow_engine.graph.stream_graph import PartitionerKind

pytestmark = pytest.mark.unit
PIPELINE = (source(parallelism=2), op("m", "map", "src", parallelism=2),
            op("k", "sum", {"from": "m", "keyBy": 0}, parallelism=2),
            op("out", "discard", "k", parallelism=2))


def _vertex_ids() -> dict[str, str]:
    return {v.head.name: v.id for v in compiled(*PIPELINE).job_graph.vertices}


def test_an_override_sets_a_chains_parallelism_and_keeps_its_id_and_chains() -> None:
    ids = _vertex_ids()
    job = compiled(*PIPELINE, parallelismOverrides={ids["k"]: 5})
    vertices = {v.head.name: v for v in job.job_graph.vertices}
    assert {name: v.id for name, v in vertices.items()} == ids
    assert chains(job) == chains(compiled(*PIPELINE))
    assert vertices["k"].parallelism == 5 and vertices["src"].parallelism == 2
    assert {n.parallelism for n in vertices["k"].operators} == {5}  # "out" is chained in
    assert job.execution_graph.num_execution_vertices == 2 + 5
    assert sum(job.slot_plan.slots.values()) == 5  # the widest vertex of the group


def test_a_forward_exchange_overridden_apart_becomes_a_rebalance() -> None:
    unchained = (source(parallelism=2), op("m", "map", "src", parallelism=2,
                                           disableChaining=True), op("out", "discard", "m"))
    ids = {v.head.name: v.id for v in compiled(*unchained, parallelism=2).job_graph.vertices}
    assert compiled(*unchained, parallelism=2).job_graph.vertices[1].inputs[0].partitioner \
        is PartitionerKind.FORWARD
    job = compiled(*unchained, parallelism=2, parallelismOverrides={ids["m"]: 3})
    edge = job.job_graph.vertices[1].inputs[0]
    assert edge.partitioner is PartitionerKind.REBALANCE
    assert edge.distribution_pattern.value == "ALL_TO_ALL"


def test_an_unknown_vertex_or_one_above_its_key_groups_is_named() -> None:
    ids = _vertex_ids()
    with pytest.raises(SpecError) as raised:
        compiled(*PIPELINE, maxParallelism=8,
                 parallelismOverrides={"0" * 32: 2, ids["k"]: 9})
    problems = {p.path: p.message for p in raised.value.problems}
    assert "no JobVertex of this id" in problems[f"spec.parallelismOverrides.{'0' * 32}"]
    assert "above the vertex's maxParallelism 8" in problems[
        f"spec.parallelismOverrides.{ids['k']}"]
