"""Joins on Spark with exact expected output: the interval join (Flink's IntervalJoinOperator)
and the window join (a coGroup over a union, keyed and windowed, as Flink builds it); keys on
one side only produce nothing, and the result does not depend on mode or parallelism."""

from __future__ import annotations

from typing import Any

import pytest
import spark_fns

from dataflow_engine.api import CollectSink
from dataflow_engine.api.common import Time, WatermarkStrategy
from dataflow_engine.api.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from dataflow_engine.api.datastream.window import TumblingEventTimeWindows
from dataflow_engine.compiler.manifest import load_manifest_text
from dataflow_engine.graph.states import JobStatus
from dataflow_engine.runtime import RunnerConfig, run_job

pytestmark = pytest.mark.spark

# (key, event time, watermark flag, amount)
LEFT = [("a", 1000, False, 1), ("a", 5000, False, 2), ("b", 2000, False, 3),
        ("c", 3000, False, 4)]
RIGHT = [("a", 800, False, 10), ("a", 2500, False, 20), ("a", 9000, False, 30),
         ("b", 4500, False, 40), ("d", 3000, False, 50)]


def _streams(mode: Any, parallelism: int) -> tuple[StreamExecutionEnvironment, Any, Any]:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(mode)
    env.set_parallelism(parallelism)
    env.get_config().set_auto_watermark_interval(0)
    strategy = WatermarkStrategy.for_generator(spark_fns.PunctuatedByField2)
    stamp = strategy.with_timestamp_assigner(spark_fns.TimestampOfField1)
    left = env.from_collection([list(r) for r in LEFT]).assign_timestamps_and_watermarks(stamp)
    right = env.from_collection([list(r) for r in RIGHT]).assign_timestamps_and_watermarks(
        stamp)
    return env, left, right


def _collect(spark: Any, env: StreamExecutionEnvironment, stream: Any) -> list[Any]:
    stream.sink_to(CollectSink()).name("out")
    spec = load_manifest_text(env.to_manifest("joined")).spec
    assert spec == env.build_spec()
    result = run_job(env.compile("joined"), RunnerConfig(spark_session=spark))
    assert result.job_status is JobStatus.FINISHED, result.error
    return sorted(tuple(r) for r in result.collected["out"])


@pytest.mark.parametrize("mode", [RuntimeExecutionMode.STREAMING, RuntimeExecutionMode.BATCH])
@pytest.mark.parametrize("parallelism", [1, 3])
def test_interval_join(spark: Any, mode: Any, parallelism: int) -> None:
    env, left, right = _streams(mode, parallelism)
    joined = (left.key_by(0).interval_join(right.key_by(0))
              .between(Time.seconds(-1), Time.milliseconds(2500))
              .process(spark_fns.PairUp()))
    # a@1000 meets a@800 and a@2500; a@5000 meets nothing in [4000, 7500]; b@2000 meets
    # b@4500 (2500 later, the inclusive upper bound); c and d have no partner.
    assert _collect(spark, env, joined) == [("a", 1, 10, 1000), ("a", 1, 20, 2500),
                                            ("b", 3, 40, 4500)]


def test_exclusive_bounds(spark: Any) -> None:
    env, left, right = _streams(RuntimeExecutionMode.STREAMING, 2)
    joined = (left.key_by(0).interval_join(right.key_by(0))
              .between(Time.milliseconds(-200), Time.milliseconds(2500))
              .lower_bound_exclusive().upper_bound_exclusive()
              .process(spark_fns.PairUp()))
    # a@800 is exactly 200 before a@1000 and b@4500 exactly 2500 after b@2000: both excluded.
    assert _collect(spark, env, joined) == [("a", 1, 20, 2500)]


@pytest.mark.parametrize("mode", [RuntimeExecutionMode.STREAMING, RuntimeExecutionMode.BATCH])
@pytest.mark.parametrize("parallelism", [1, 2])
def test_window_join_is_an_inner_join_per_key_and_window(spark: Any, mode: Any,
                                                         parallelism: int) -> None:
    env, left, right = _streams(mode, parallelism)
    joined = (left.join(right).where(0).equal_to(0)
              .window(TumblingEventTimeWindows.of(Time.seconds(5)))
              .apply(spark_fns.Pair()))
    # Window [0, 5000): a has 1 | 10, 20; b has 3 | 40. a@5000 and a@9000 share [5000,
    # 10000); c and d are on one side only.
    assert _collect(spark, env, joined) == [("a", 1, 10), ("a", 1, 20), ("a", 2, 30),
                                            ("b", 3, 40)]


def test_co_group_sees_keys_of_one_side_too(spark: Any) -> None:
    env, left, right = _streams(RuntimeExecutionMode.STREAMING, 2)
    grouped = (left.co_group(right).where(0).equal_to(0)
               .window(TumblingEventTimeWindows.of(Time.seconds(5)))
               .apply(spark_fns.CountSides()))
    out = _collect(spark, env, grouped)
    assert sorted(out, key=str) == sorted([
        ("a", [1], [10, 20]), ("a", [2], [30]), ("b", [3], [40]), ("c", [4], []),
        ("d", [], [50])], key=str)
