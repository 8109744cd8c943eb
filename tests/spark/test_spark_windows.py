"""Windows on Spark, built with the Python API as a PyFlink program builds them and run from
the manifest it writes: tumbling, sliding, session and count windows, reduce, aggregate and
process, allowed lateness, window_all, BATCH and STREAMING, with exact expected output.

Records are ``(key, event time, watermark flag, amount)``; a record whose flag is true carries
a punctuated watermark at its time (it leaves before the record, as in Flink)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
import spark_fns

from dataflow_engine.api import CollectSink
from dataflow_engine.api.common import Time, WatermarkStrategy
from dataflow_engine.api.datastream import (
    DataStream,
    OutputTag,
    RuntimeExecutionMode,
    StreamExecutionEnvironment,
)
from dataflow_engine.api.datastream.window import (
    EventTimeSessionWindows,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from dataflow_engine.compiler.compile import compile_job
from dataflow_engine.compiler.manifest import load_manifest_text
from dataflow_engine.graph.states import JobStatus
from dataflow_engine.runtime import RunnerConfig, run_job
from dataflow_engine.spec.model import OperatorType

pytestmark = pytest.mark.spark

STREAMING, BATCH = RuntimeExecutionMode.STREAMING, RuntimeExecutionMode.BATCH


def events(records: Iterable[Any], mode: Any = STREAMING, parallelism: int = 2
           ) -> tuple[StreamExecutionEnvironment, DataStream]:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(mode)
    env.set_parallelism(parallelism)
    env.get_config().set_auto_watermark_interval(0)
    strategy = WatermarkStrategy.for_generator(spark_fns.PunctuatedByField2)
    stamped = env.from_collection([list(r) for r in records]).assign_timestamps_and_watermarks(
        strategy.with_timestamp_assigner(spark_fns.TimestampOfField1))
    return env, stamped


def run(spark: Any, env: StreamExecutionEnvironment, stream: DataStream) -> list[Any]:
    stream.sink_to(CollectSink()).name("out")
    manifest = load_manifest_text(env.to_manifest("windows"))
    assert manifest.spec == env.build_spec()
    result = run_job(compile_job(manifest.spec, "windows"), RunnerConfig(spark_session=spark))
    assert result.job_status is JobStatus.FINISHED, result.error
    return sorted(tuple(r) for r in result.collected["out"])


def totals(out: list[Any]) -> list[tuple[str, int]]:
    return sorted((r[0], r[3]) for r in out)


SALES = [("a", 1000, False, 1), ("b", 1500, False, 2), ("a", 2500, False, 3),
         ("a", 5500, False, 4), ("b", 6000, False, 5), ("a", 4900, False, 10),
         ("a", 12000, False, 6)]


@pytest.mark.parametrize("mode", [STREAMING, BATCH])
@pytest.mark.parametrize("parallelism", [1, 3])
def test_tumbling_reduce_does_not_depend_on_mode_or_parallelism(spark: Any, mode: Any,
                                                                 parallelism: int) -> None:
    env, stamped = events(SALES, mode, parallelism)
    out = run(spark, env, stamped.key_by(0)
              .window(TumblingEventTimeWindows.of(Time.seconds(5)))
              .reduce(spark_fns.add_amounts))
    assert totals(out) == [("a", 4), ("a", 6), ("a", 14), ("b", 2), ("b", 5)]


def test_window_results_carry_the_window_end_as_timestamp(spark: Any) -> None:
    env, stamped = events(SALES)
    windowed = (stamped.key_by(0)
                .window(TumblingEventTimeWindows.of(Time.seconds(5)))
                .aggregate(spark_fns.CountAndSum()))
    out = run(spark, env, windowed.key_by(spark_fns.constant_key)
              .process(spark_fns.TimestampAndWatermark()))
    # TimestampAndWatermark yields (key, value[1], ctx.timestamp(), watermark)
    assert sorted(r[2] for r in out) == [4999, 4999, 9999, 9999, 14999]


def test_late_data_is_dropped_and_allowed_lateness_fires_updates(spark: Any) -> None:
    records = [("a", 1000, False, 1), ("a", 4000, False, 2),
               ("a", 6000, True, 100),     # watermark 6000: window [0, 5000) fires (3)
               ("a", 3000, False, 4),      # late, within 2 s lateness: fires again (7)
               ("a", 8000, True, 200),     # watermark 8000: [0, 5000) is cleaned up
               ("a", 2000, False, 8)]      # too late: dropped
    env, stamped = events(records, parallelism=1)
    out = run(spark, env, stamped.key_by(0)
              .window(TumblingEventTimeWindows.of(Time.seconds(5)))
              .allowed_lateness(2000)
              .process(spark_fns.WindowContents()))
    assert out == [("a", 0, 5000, [1, 2]), ("a", 0, 5000, [1, 2, 4]),
                   ("a", 5000, 10000, [100, 200])]


def test_nothing_is_late_in_batch_mode(spark: Any) -> None:
    records = [("a", 1000, False, 1), ("a", 6000, True, 100), ("a", 2000, False, 8)]
    env, stamped = events(records, BATCH, parallelism=1)
    out = run(spark, env, stamped.key_by(0)
              .window(TumblingEventTimeWindows.of(Time.seconds(5)))
              .process(spark_fns.WindowContents()))
    assert out == [("a", 0, 5000, [1, 8]), ("a", 5000, 10000, [100])]


def test_sliding_windows_overlap(spark: Any) -> None:
    records = [("a", 1000, False, 1), ("a", 6000, False, 2), ("a", 7000, False, 4)]
    env, stamped = events(records)
    out = run(spark, env, stamped.key_by(0)
              .window(SlidingEventTimeWindows.of(Time.seconds(10), Time.seconds(5)))
              .process(spark_fns.WindowContents()))
    assert out == [("a", -5000, 5000, [1]), ("a", 0, 10000, [1, 2, 4]),
                   ("a", 5000, 15000, [2, 4])]


@pytest.mark.parametrize("parallelism", [1, 2])
def test_sessions_merge_when_a_bridging_element_arrives(spark: Any, parallelism: int) -> None:
    records = [("u", 1000, False, 1), ("u", 9000, False, 2), ("u", 5000, False, 4),
               ("v", 1000, False, 8), ("u", 30000, False, 16)]
    env, stamped = events(records, parallelism=parallelism)
    out = run(spark, env, stamped.rebalance().map("identity").key_by(0)
              .window(EventTimeSessionWindows.with_gap(Time.seconds(4)))
              .process(spark_fns.WindowContents()))
    assert out == [("u", 1000, 13000, [1, 2, 4]), ("u", 30000, 34000, [16]),
                   ("v", 1000, 5000, [8])]


def test_count_windows_tumbling_and_sliding(spark: Any) -> None:
    records = [("a", t, False, t) for t in range(1, 8)]
    env, stamped = events(records, parallelism=1)
    keyed = stamped.key_by(0)
    tumbling = keyed.count_window(3).process(spark_fns.Amounts())
    sliding = keyed.count_window(3, 2).reduce(spark_fns.add_amounts)
    tumbling.sink_to(CollectSink()).name("tumbling")
    sliding.sink_to(CollectSink()).name("sliding")
    result = run_job(env.compile("counts"), RunnerConfig(spark_session=spark))
    assert result.job_status is JobStatus.FINISHED, result.error
    # A count window fires every 3 elements; the last, incomplete one never fires.
    assert [r[1] for r in result.collected["tumbling"]] == [[1, 2, 3], [4, 5, 6]]
    # Sliding: every 2 elements, over the last 3.
    assert [r[3] for r in result.collected["sliding"]] == [1 + 2, 2 + 3 + 4, 4 + 5 + 6]


def test_window_all_and_a_window_function_after_aggregate(spark: Any) -> None:
    env, stamped = events(SALES)
    everything = (stamped.window_all(TumblingEventTimeWindows.of(Time.seconds(5)))
                  .process(spark_fns.AllContents()))
    everything.sink_to(CollectSink()).name("all")
    per_key = (stamped.key_by(0)
               .window(TumblingEventTimeWindows.of(Time.seconds(10)))
               .aggregate(spark_fns.CountAndSum(), window_function=spark_fns.WithWindow()))
    per_key.sink_to(CollectSink()).name("keyed")
    result = run_job(env.compile("all"), RunnerConfig(spark_session=spark))
    assert result.job_status is JobStatus.FINISHED, result.error
    assert sorted(tuple(r) for r in result.collected["all"]) == [
        (0, [1, 2, 3, 10]), (5000, [4, 5]), (10000, [6])]
    assert sorted(tuple(r) for r in result.collected["keyed"]) == [
        ("a", 0, (4, 18)), ("a", 10000, (1, 6)), ("b", 0, (2, 7))]


def test_processing_time_windows_fire_at_the_end_of_a_batch_input(spark: Any) -> None:
    env, stamped = events(SALES, BATCH)
    out = run(spark, env, stamped.key_by(0)
              .window(TumblingProcessingTimeWindows.of(Time.hours(1)))
              .reduce(spark_fns.add_amounts))
    # One window per key (unless the run straddles the top of an hour).
    assert sum(r[3] for r in out if r[0] == "a") == 24
    assert sum(r[3] for r in out if r[0] == "b") == 7


def test_late_data_goes_to_its_side_output(spark: Any) -> None:
    records = [("a", 1000, False, 1), ("a", 6000, True, 100), ("a", 2000, False, 8),
               ("b", 1500, False, 3)]
    env, stamped = events(records, parallelism=1)
    late = OutputTag("late")
    windowed = (stamped.key_by(0).window(TumblingEventTimeWindows.of(Time.seconds(5)))
                .side_output_late_data(late).process(spark_fns.WindowContents()))
    windowed.sink_to(CollectSink()).name("on-time")
    windowed.get_side_output(late).map("identity").sink_to(CollectSink()).name("late")
    assert load_manifest_text(env.to_manifest("late")).spec == env.build_spec()
    result = run_job(env.compile("late"), RunnerConfig(spark_session=spark))
    assert result.job_status is JobStatus.FINISHED, result.error
    assert sorted(tuple(r) for r in result.collected["on-time"]) == [
        ("a", 0, 5000, [1]), ("a", 5000, 10000, [100])]
    assert sorted(tuple(r) for r in result.collected["late"]) == [
        ("a", 2000, False, 8), ("b", 1500, False, 3)]


@pytest.mark.parametrize("parallelism", [1, 2])
def test_a_process_function_splits_into_a_side_output(spark: Any, parallelism: int) -> None:
    records = [("a", 1, False, 5), ("b", 2, False, 500), ("a", 3, True, 100),
               ("c", 4, False, 7)]
    env, stamped = events(records, parallelism=parallelism)
    main = stamped.key_by(0).process(spark_fns.SplitLarge())
    main.sink_to(CollectSink()).name("small")
    # The side output goes through an exchange (rebalance) and a chained map.
    main.get_side_output(spark_fns.LARGE).rebalance().map("identity").sink_to(
        CollectSink()).name("large")
    result = run_job(env.compile("split"), RunnerConfig(spark_session=spark))
    assert result.job_status is JobStatus.FINISHED, result.error
    assert sorted(tuple(r) for r in result.collected["small"]) == [("a", 5), ("c", 7)]
    assert sorted(tuple(r) for r in result.collected["large"]) == [("a", 100), ("b", 500)]


# -- BATCH pre-aggregation of window input (PayloadKind.WINDOW_PARTIAL) -------------------------

MANY = [(f"k{i % 7}", (i * 37) % 20_000, False, i) for i in range(600)]


def _starts(time: int, size: int, slide: int) -> list[int]:
    last = time - time % slide
    return list(range(last, time - size, -slide))


def _expected_totals(size: int, slide: int) -> list[tuple[str, int, int, int]]:
    """``(key, window start, count, sum)`` computed here from MANY, not by the engine."""
    windows: dict[tuple[str, int], list[int]] = {}
    for key, time, _, amount in MANY:
        for start in _starts(time, size, slide):
            windows.setdefault((key, start), []).append(amount)
    return sorted((key, start, len(v), sum(v)) for (key, start), v in windows.items())


def _windowed(stamped: DataStream, function: str, size: int, slide: int) -> DataStream:
    keyed = stamped.key_by(0)
    if size == slide:
        windowed = keyed.window(TumblingEventTimeWindows.of(Time.milliseconds(size)))
    else:
        windowed = keyed.window(SlidingEventTimeWindows.of(Time.milliseconds(size),
                                                           Time.milliseconds(slide)))
    if function == "reduce":
        return windowed.reduce(spark_fns.add_amounts, window_function=spark_fns.WithWindow())
    if function == "rich reduce":
        return windowed.reduce(spark_fns.OpenedAddAmounts(),
                               window_function=spark_fns.WithWindow())
    aggregate = (spark_fns.CountAndSum() if function == "aggregate"
                 else spark_fns.CountAndSumWithoutMerge())
    return windowed.aggregate(aggregate, window_function=spark_fns.WithWindow())


def _by_window(out: list[Any], function: str) -> list[tuple[str, int, int, int]]:
    if "reduce" in function:  # (key, start, reduced record): count the amounts another way
        return sorted((key, start, -1, record[3]) for key, start, record in out)
    return sorted((key, start, count, total) for key, start, (count, total) in out)


@pytest.mark.parametrize("function", ["reduce", "aggregate", "rich reduce",
                                      "aggregate without merge"])
@pytest.mark.parametrize(("size", "slide"), [(5000, 5000), (6000, 2000)])
def test_batch_producers_pre_aggregate_window_input(spark: Any, function: str, size: int,
                                                    slide: int) -> None:
    """A BATCH producer reduces its records per key and window (a combiner) where that cannot
    change a result; a rich ReduceFunction's records travel whole, and aggregates are never
    pre-aggregated (their merge may be a stub: Flink calls it only for merging windows). Either
    way the results, the window's numRecordsIn and the STREAMING results (all windows fire at
    the end with the final watermark) are the same."""
    from dataflow_engine.runtime.spark.spark_plan import plan_job
    from dataflow_engine.runtime.tasks.descriptors import PayloadKind

    expected = _expected_totals(size, slide)
    if "reduce" in function:
        expected = sorted((key, start, -1, total) for key, start, _, total in expected)
    outputs = {}
    for mode in (BATCH, STREAMING):
        env, stamped = events(MANY, mode, parallelism=3)
        _windowed(stamped, function, size, slide).sink_to(CollectSink()).name("out")
        manifest = load_manifest_text(env.to_manifest("pre-aggregated"))
        assert manifest.spec == env.build_spec()
        compiled = compile_job(manifest.spec, "pre-aggregated")
        payloads = {output.payload for vertex in plan_job(compiled).vertices.values()
                    for output in vertex.descriptor.outputs}
        assert (PayloadKind.WINDOW_PARTIAL in payloads) == (
            mode is BATCH and "reduce" in function), payloads
        result = run_job(compiled, RunnerConfig(spark_session=spark))
        assert result.job_status is JobStatus.FINISHED, result.error
        outputs[mode] = _by_window([tuple(r) for r in result.collected["out"]], function)
        window = next(node.name for node in compiled.stream_graph.nodes.values()
                      if node.operator_type is OperatorType.WINDOW)
        assert result.operator_metrics()[window][0] == len(MANY)
    assert outputs[BATCH] == outputs[STREAMING] == expected


def test_a_failing_function_in_pre_aggregation_names_the_window(spark: Any) -> None:
    env, stamped = events(MANY, BATCH, parallelism=2)
    (stamped.key_by(0).window(TumblingEventTimeWindows.of(Time.seconds(5)))
     .reduce(spark_fns.add_amounts_refusing_13).name("sums")
     .sink_to(CollectSink()).name("out"))
    result = run_job(env.compile("refused"), RunnerConfig(spark_session=spark))
    assert result.job_status is JobStatus.FAILED
    assert result.error is not None
    assert "window pre-aggregation of 'sums'" in result.error
    assert "amount 13 refused" in result.error
