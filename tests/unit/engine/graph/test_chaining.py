"""Flink's chaining rule: the seeds' WordCount, and each condition breaking a chain on its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from graph_specs import chains, compiled, op, source

from dataflow_engine.compiler.compile import compile_job
from dataflow_engine.compiler.manifest import load_manifest
from dataflow_engine.graph.job_graph import DistributionPattern, InvokableKind, ResultPartitionType
from dataflow_engine.graph.stream_graph import ChainingStrategy, PartitionerKind

pytestmark = pytest.mark.unit
EXAMPLES = Path(__file__).parents[4] / "examples"


def test_seed_wordcount_chains() -> None:
    job = load_manifest(EXAMPLES / "wordcount.yaml")
    plan = compile_job(job.spec, job.metadata.name)
    vertices = plan.job_graph.vertices
    assert [v.name for v in vertices] == [
        "Source: Collection Source",
        "Flat Map",
        "Keyed Aggregation -> Filter -> Sink: Print to Std. Out",
    ]
    assert [v.parallelism for v in vertices] == [1, 2, 2]
    assert [v.invokable for v in vertices] == [
        InvokableKind.SOURCE_STREAM_TASK,
        InvokableKind.ONE_INPUT_STREAM_TASK,
        InvokableKind.ONE_INPUT_STREAM_TASK,
    ]
    edges = plan.job_graph.edges
    assert [(e.partitioner, e.distribution_pattern) for e in edges] == [
        (PartitionerKind.REBALANCE, DistributionPattern.ALL_TO_ALL),
        (PartitionerKind.HASH, DistributionPattern.ALL_TO_ALL),
    ]
    # AUTOMATIC with bounded sources runs as BATCH: every exchange blocks.
    assert {e.source.result_type for e in edges} == {ResultPartitionType.BLOCKING}
    assert plan.execution_graph.num_execution_vertices == 5


def test_seed_wordcount_stream_graph() -> None:
    job = load_manifest(EXAMPLES / "wordcount.yaml")
    graph = compile_job(job.spec, job.metadata.name).stream_graph
    assert [n.name for n in graph.nodes.values()] == ["source", "tokenize", "counts",
                                                      "frequent", "out"]
    assert [n.chaining_strategy for n in graph.nodes.values()] == [
        ChainingStrategy.HEAD, *[ChainingStrategy.ALWAYS] * 4]
    assert [e.partitioner for e in graph.edges] == [
        PartitionerKind.REBALANCE, PartitionerKind.HASH, PartitionerKind.FORWARD,
        PartitionerKind.FORWARD]


BASELINE = [source(), op("m", "map", "src"), op("f", "filter", "m"),
            op("out", "discard", "f")]


def _with(name: str, **changes: Any) -> list[dict[str, Any]]:
    return [{**o, **changes} if o["name"] == name else o for o in BASELINE]


def test_baseline_is_one_chain() -> None:
    assert chains(compiled(*BASELINE)) == [["src", "m", "f", "out"]]


@pytest.mark.parametrize(
    ("condition", "pipeline", "settings"),
    [
        ("equal parallelism", _with("f", parallelism=2), {}),
        ("forward partitioner", _with("f", inputs=[{"from": "m", "partitioning": "rescale"}]), {}),
        ("same slot sharing group", _with("f", slotSharingGroup="other"),
         {"slotSharingGroups": [{"name": "other"}]}),
        ("downstream ALWAYS (HEAD)", _with("f", startNewChain=True), {}),
        ("downstream ALWAYS (NEVER)", _with("f", disableChaining=True), {}),
        ("not a batch exchange", _with("f", inputs=[{"from": "m", "exchangeMode": "batch"}]), {}),
    ],
)
def test_each_condition_alone_breaks_the_chain(
    condition: str, pipeline: list[dict[str, Any]], settings: dict[str, Any]
) -> None:
    groups = chains(compiled(*pipeline, **settings))
    # f may pull `out` along with it (it is chainable to f), but never chains to m.
    assert groups[0] == ["src", "m"], condition
    assert groups[1][0] == "f", condition


def test_upstream_never_breaks_both_sides() -> None:
    assert chains(compiled(*_with("m", disableChaining=True))) == [["src"], ["m"], ["f", "out"]]


def test_global_chaining_switch() -> None:
    assert chains(compiled(*BASELINE, chaining=False)) == [["src"], ["m"], ["f"], ["out"]]


def test_in_degree_one() -> None:
    plan = compiled(
        source("a"), source("b"), op("u", "union", "a", "b"), op("m", "map", "u"),
        op("out", "discard", "m"))
    assert chains(plan) == [["a"], ["b"], ["m", "out"]]
    m = plan.stream_graph.node("m")
    assert [plan.stream_graph.nodes[e.source_id].name for e in m.in_edges] == ["a", "b"]
    assert plan.job_graph.vertex_of("m").invokable is InvokableKind.ONE_INPUT_STREAM_TASK
    assert len(plan.job_graph.vertex_of("m").inputs) == 2


def test_source_with_start_new_chain_keeps_downstream() -> None:
    # A HEAD upstream chains to an ALWAYS downstream.
    assert chains(compiled(*_with("src", startNewChain=True))) == [["src", "m", "f", "out"]]


def test_operator_with_two_chained_outputs() -> None:
    plan = compiled(source(), op("m", "map", "src"), op("a", "filter", "m"),
                    op("b", "map", "m"), op("o1", "discard", "a"), op("o2", "print", "b"))
    assert chains(plan) == [["src", "m", "a", "o1", "b", "o2"]]
    assert plan.job_graph.vertices[0].name == (
        "Source: Sequence Source -> Map -> (Filter -> Sink: Discarding Sink, "
        "Map -> Sink: Print to Std. Out)")
    assert len(plan.job_graph.vertices[0].chained_edges) == 5


def test_union_folds_into_edges_and_consumer_partitioning_wins() -> None:
    plan = compiled(
        source("a"), source("b", parallelism=3),
        op("u", "union", {"from": "a", "partitioning": "shuffle"}, "b"),
        op("k", "sum", {"from": "u", "keyBy": 0}), op("out", "discard", "k"))
    graph = plan.stream_graph
    assert "u" not in [n.name for n in graph.nodes.values()]
    assert [e.partitioner for e in graph.node("k").in_edges] == [PartitionerKind.HASH] * 2

    plan = compiled(
        source("a"), source("b", parallelism=3),
        op("u", "union", {"from": "a", "partitioning": "shuffle"}, "b"),
        op("m", "map", "u"), op("out", "discard", "m"))
    kinds = [e.partitioner for e in plan.stream_graph.node("m").in_edges]
    assert kinds == [PartitionerKind.SHUFFLE, PartitionerKind.REBALANCE]


def test_nested_unions() -> None:
    plan = compiled(
        source("a"), source("b"), source("c"), op("u1", "union", "a", "b"),
        op("u2", "union", "u1", "c"), op("m", "map", "u2"), op("out", "discard", "m"))
    sources = [plan.stream_graph.nodes[e.source_id].name
               for e in plan.stream_graph.node("m").in_edges]
    assert sources == ["a", "b", "c"]


def test_broadcast_is_all_to_all() -> None:
    plan = compiled(source(parallelism=2), op("m", "map", {"from": "src", "partitioning":
                                                            "broadcast"}, parallelism=3),
                    op("out", "discard", "m", parallelism=3))
    edge = plan.job_graph.edges[0]
    assert (edge.partitioner, edge.distribution_pattern) == (
        PartitionerKind.BROADCAST, DistributionPattern.ALL_TO_ALL)
    assert chains(plan) == [["src"], ["m", "out"]]


def test_slot_sharing_group_is_inherited_when_inputs_agree() -> None:
    plan = compiled(
        source("a", slotSharingGroup="g"), source("b", slotSharingGroup="g"),
        source("c"), op("u", "union", "a", "b"), op("m", "map", "u"),
        op("u2", "union", "m", "c"), op("n", "map", "u2"), op("out", "discard", "n"),
        slotSharingGroups=[{"name": "g"}])
    graph = plan.stream_graph
    assert graph.node("m").slot_sharing_group == "g"
    assert graph.node("n").slot_sharing_group == "default"


def test_streaming_mode_is_pipelined() -> None:
    plan = compiled(source(), op("m", "map", "src", parallelism=2),
                    op("out", "discard", "m", parallelism=2), runtimeMode="STREAMING")
    assert plan.job_graph.edges[0].source.result_type is ResultPartitionType.PIPELINED_BOUNDED
    assert len(plan.execution_graph.pipelined_regions()) == 1


def test_collection_source_is_non_parallel_whatever_the_default() -> None:
    # Flink's fromData/fromCollection: parallelism 1, so with a default of 2 the edge to the
    # sink is a REBALANCE into a vertex of its own, not a FORWARD chain.
    collection = {"name": "src", "type": "collection", "args": {"elements": [1, 2, 3]}}
    plan = compiled(collection, op("out", "print", "src"), parallelism=2)
    assert chains(plan) == [["src"], ["out"]]
    assert plan.stream_graph.node("src").parallelism == 1
    assert plan.stream_graph.edges[0].partitioner is PartitionerKind.REBALANCE


def test_collection_source_above_parallelism_one_is_an_error_naming_it() -> None:
    from dataflow_engine.compiler.validation import parse_spec
    from dataflow_engine.errors import SpecError

    collection = {"name": "src", "type": "collection", "args": {"elements": [1]},
                  "parallelism": 2}
    with pytest.raises(SpecError) as error:
        parse_spec({"pipeline": [collection, op("out", "print", "src")]})
    assert [p.path for p in error.value.problems] == ["spec.pipeline[0].parallelism"]
    assert "'src' is a non-parallel source" in str(error.value)


def test_batch_exchange_is_ignored_in_streaming_as_in_flink() -> None:
    plan = compiled(source(parallelism=2),
                    op("m", "map", {"from": "src", "exchangeMode": "batch"}, parallelism=2),
                    op("r", "map", {"from": "m", "exchangeMode": "batch",
                                    "partitioning": "rebalance"}, parallelism=2),
                    op("out", "discard", "r", parallelism=2), runtimeMode="STREAMING")
    # The forward edge still chains; the rebalance stays pipelined.
    assert chains(plan) == [["src", "m"], ["r", "out"]]
    assert plan.job_graph.edges[0].source.result_type is ResultPartitionType.PIPELINED_BOUNDED
    assert plan.stream_graph.notes == [
        "spec.pipeline[1].inputs[0].exchangeMode: batch has no effect in STREAMING mode",
        "spec.pipeline[2].inputs[0].exchangeMode: batch has no effect in STREAMING mode"]


def test_batch_exchange_blocks_in_batch_mode() -> None:
    plan = compiled(source(parallelism=2),
                    op("m", "map", {"from": "src", "exchangeMode": "batch"}, parallelism=2),
                    op("out", "discard", "m", parallelism=2), runtimeMode="BATCH")
    assert chains(plan) == [["src"], ["m", "out"]]
    assert plan.job_graph.edges[0].source.result_type is ResultPartitionType.BLOCKING
    assert plan.stream_graph.notes == []
