"""Two-input operators on Spark (``connect``): records of each input reach their own method,
keyed state and timers are shared by both inputs of a key, and the operator's watermark is
the minimum of its inputs'."""

from __future__ import annotations

from typing import Any

import pytest
import spark_fns

from dataflow_engine.api import CollectSink
from dataflow_engine.api.common import WatermarkStrategy
from dataflow_engine.api.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from dataflow_engine.compiler.manifest import load_manifest_text
from dataflow_engine.graph.job_graph import InvokableKind
from dataflow_engine.graph.states import JobStatus
from dataflow_engine.runtime import RunnerConfig, run_job

pytestmark = pytest.mark.spark


def _env(mode: Any = RuntimeExecutionMode.STREAMING) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(mode)
    env.set_parallelism(2)
    env.get_config().set_auto_watermark_interval(0)
    return env


def _execute(spark: Any, env: StreamExecutionEnvironment) -> dict[str, list[Any]]:
    spec = load_manifest_text(env.to_manifest("connected")).spec
    assert spec == env.build_spec()
    result = run_job(env.compile("connected"), RunnerConfig(spark_session=spark))
    assert result.job_status is JobStatus.FINISHED, result.error
    return {name: sorted((tuple(r) if isinstance(r, list) else r for r in records), key=str)
            for name, records in result.collected.items()}


def test_co_map_and_co_flat_map(spark: Any) -> None:
    env = _env()
    left, right = env.from_collection(["x", "y"]), env.from_sequence(1, 3)
    left.connect(right).map(spark_fns.TagInputs()).sink_to(CollectSink()).name("mapped")
    left.connect(right).flat_map(spark_fns.RepeatRight()).sink_to(CollectSink()).name("flat")
    compiled = env.compile("connected")
    heads = {v.head.operator_name: v.invokable for v in compiled.job_graph.vertices}
    assert heads["Co-Map"] is InvokableKind.TWO_INPUT_STREAM_TASK
    assert heads["Co-Flat Map"] is InvokableKind.TWO_INPUT_STREAM_TASK
    out = _execute(spark, env)
    assert out["mapped"] == [("left", "x"), ("left", "y"), ("right", 1), ("right", 2),
                             ("right", 3)]
    assert sorted(map(str, out["flat"])) == ["1", "2", "2", "3", "3", "3", "x", "y"]


@pytest.mark.parametrize("mode", [RuntimeExecutionMode.STREAMING, RuntimeExecutionMode.BATCH])
def test_keyed_co_process_shares_state_and_timers_across_inputs(spark: Any, mode: Any) -> None:
    env = _env(mode)
    strategy = WatermarkStrategy.for_generator(spark_fns.PunctuatedByField2)
    stamp = strategy.with_timestamp_assigner(spark_fns.TimestampOfField1)
    # (order id | currency, event time, watermark flag, amount | rate)
    orders = env.from_collection([["o1", 10, False, 5, "eur"], ["o2", 20, False, 7, "usd"],
                                  ["o3", 500, True, 2, "gbp"], ["o4", 600, False, 3, "eur"]])
    rates = env.from_collection([["eur", 50, False, 2], ["usd", 400, True, 10]])
    orders = orders.assign_timestamps_and_watermarks(stamp)
    rates = rates.assign_timestamps_and_watermarks(stamp)
    enriched = (orders.connect(rates).key_by(spark_fns.currency_of_order, 0)
                .process(spark_fns.EnrichWithLatestRate()))
    enriched.sink_to(CollectSink()).name("enriched")
    enriched.get_side_output(spark_fns.UNMATCHED).sink_to(CollectSink()).name("unmatched")
    names = [v.name for v in env.compile("c").job_graph.vertices]
    assert any(name.startswith("Co-Keyed-Process") for name in names), names
    out = _execute(spark, env)
    if mode is RuntimeExecutionMode.BATCH:
        # Nothing fires before the end of input: every order meets its rate, in any order.
        assert out["enriched"] == [("o1", 10), ("o2", 70), ("o4", 6)]
        assert out["unmatched"] == ["o3"]
    else:
        # o1 and o4 meet the eur rate (o1 waiting for it or not); o2 meets usd only if the
        # rate arrives before the watermark passes 120 on the timer, which depends on the
        # arrival order of the two inputs; o3's currency never gets a rate.
        assert ("o1", 10) in out["enriched"] and ("o4", 6) in out["enriched"]
        assert "o3" in out["unmatched"]
        assert (("o2", 70) in out["enriched"]) != ("o2" in out["unmatched"])


@pytest.mark.parametrize("parallelism", [1, 3])
def test_keyed_broadcast_state(spark: Any, parallelism: int) -> None:
    env = _env()
    env.set_parallelism(parallelism)
    events = env.from_collection([["cpu", 95], ["disk", 40], ["cpu", 50], ["mem", 99],
                                  ["disk", 85]])
    thresholds = env.from_collection([["cpu", 90], ["disk", 80]])
    alerts = (events.key_by(0).connect(thresholds.broadcast(spark_fns.THRESHOLDS))
              .process(spark_fns.Alerts()))
    alerts.sink_to(CollectSink()).name("alerts")
    graph = env.compile("broadcast").stream_graph
    node = next(n for n in graph.nodes.values() if n.operator_type.value == "broadcast_process")
    assert node.operator_name == "Co-Process-Broadcast-Keyed"
    assert sorted(e.partitioner.value for e in node.in_edges) == ["BROADCAST", "HASH"]
    out = _execute(spark, env)
    # mem has no threshold: it never alerts, whatever arrives first.
    assert out["alerts"] == [("alert", "cpu", 95), ("alert", "disk", 85)]


def test_the_non_broadcast_side_cannot_change_broadcast_state(spark: Any) -> None:
    env = _env()
    events, rules = env.from_collection([1]), env.from_collection([2])
    events.connect(rules.broadcast(spark_fns.THRESHOLDS)).process(
        spark_fns.WritesBroadcastState()).sink_to(CollectSink()).name("out")
    result = run_job(env.compile("read-only"), RunnerConfig(spark_session=spark))
    assert result.job_status is JobStatus.FAILED
    assert "broadcast state 'thresholds' is read-only here" in (result.error or "")
