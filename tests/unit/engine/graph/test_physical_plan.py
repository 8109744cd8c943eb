"""Slots per slot sharing group, executors sized per group, and each task's partitions and gates."""

from __future__ import annotations

from decimal import Decimal

import pytest
from graph_specs import compiled, op, source

from dataflow_engine.graph.deployment import input_gates, result_partitions
from dataflow_engine.spec.quantity import (
    format_cpu,
    format_memory,
    memory_mebibytes,
    parse_quantity,
)

pytestmark = pytest.mark.unit


def test_slots_and_executors_per_group() -> None:
    plan = compiled(
        source(parallelism=2),
        op("m", "map", "src", parallelism=5),
        op("heavy", "map", "m", parallelism=3, slotSharingGroup="gpu"),
        op("out", "discard", "heavy", parallelism=3),
        slotsPerExecutor=2,
        slotSharingGroups=[{"name": "default", "cpu": "500m", "memory": "768Mi"},
                           {"name": "gpu", "cpu": "2", "memory": "4Gi"}],
    )
    slots = plan.slot_plan
    # out inherits gpu from its input; the default group's widest vertex has 5 subtasks.
    assert slots.slots == {"default": 5, "gpu": 3}
    assert slots.total_slots == 8
    executors = {e.slot_sharing_group: e for e in slots.executors}
    assert (executors["default"].count, executors["default"].cpu,
            executors["default"].memory) == (3, "1", "1536Mi")
    assert (executors["gpu"].count, executors["gpu"].cpu, executors["gpu"].memory) == (
        2, "4", "8Gi")


def test_partitions_and_gates_of_each_task() -> None:
    plan = compiled(source(parallelism=3), op("m", "map", "src", parallelism=4),
                    op("r", "map", {"from": "m", "partitioning": "rescale"}, parallelism=2),
                    op("out", "discard", "r", parallelism=2))
    graph = plan.execution_graph
    src, m, r = (ejv.task_vertices for ejv in graph.job_vertices.values())
    assert [p.num_subpartitions for p in result_partitions(src[0])] == [4]
    assert [g.num_channels for g in input_gates(m[3])] == [3]
    assert [p.num_subpartitions for p in result_partitions(m[0])] == [1]
    assert [(g.num_channels, g.producer_range) for g in input_gates(r[1])] == [(2, (2, 4))]
    assert result_partitions(r[0]) == []


@pytest.mark.parametrize(("text", "value"), [
    ("500m", Decimal("0.5")), ("2", Decimal(2)), ("1Gi", Decimal(2**30)),
    ("1.5G", Decimal("1.5e9")), ("128Mi", Decimal(128 * 2**20))])
def test_quantities(text: str, value: Decimal) -> None:
    assert parse_quantity(text) == value


def test_quantity_formatting() -> None:
    assert format_cpu(Decimal("1.5")) == "1500m"
    assert format_cpu(Decimal(4)) == "4"
    assert format_memory(Decimal(3 * 2**29)) == "1536Mi"
    assert memory_mebibytes(Decimal(2**30 + 1)) == 1025
    with pytest.raises(ValueError, match="not a Kubernetes quantity"):
        parse_quantity("1 GB")


def test_a_fan_out_shares_one_shuffle_and_anything_else_is_persisted() -> None:
    """A producer whose consumers read only it gives each a range of one shuffle's partitions
    (no persisting); a consumer that also reads another producer makes it persisted again."""
    from dataflow_engine.runtime.spark.spark_plan import plan_job

    fan_out = (source(parallelism=2),
               op("wide", "map", {"from": "src", "partitioning": "rebalance"}, parallelism=3),
               op("keyed", "reduce", {"from": "src", "keyBy": "api_fns:first_letter"},
                  parallelism=4),
               op("out-wide", "discard", "wide", parallelism=3),
               op("out-keyed", "discard", "keyed", parallelism=4))
    plan = plan_job(compiled(*fan_out))
    producer = next(vp for vp in plan.vertices.values() if vp.vertex.operators[0].name == "src")
    assert (producer.shared_shuffle, producer.materialized) == (3 + 4, False)
    bases = {ds.consumer.target.operators[0].name: producer.port_offsets[ds.id]
             for ds in producer.vertex.produced_data_sets if ds.consumer is not None}
    assert sorted(bases.values()) == [0, 3]  # each consumer's subtasks in a range of their own
    ranges = {o.consumer_name: o.tag_offset for o in producer.descriptor.outputs}
    assert ranges == bases

    mixed = plan_job(compiled(
        source(parallelism=2), source("other", parallelism=2),
        op("wide", "map", {"from": "src", "partitioning": "rebalance"}, parallelism=3),
        op("both", "union", {"from": "src", "partitioning": "rebalance"},
           {"from": "other", "partitioning": "rebalance"}),
        op("after", "map", "both", parallelism=3),
        op("out-wide", "discard", "wide", parallelism=3),
        op("out-after", "discard", "after", parallelism=3)))
    producer = next(vp for vp in mixed.vertices.values() if vp.vertex.operators[0].name == "src")
    assert (producer.shared_shuffle, producer.materialized) == (0, True)
