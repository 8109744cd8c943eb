"""Event time on Spark: timestamps, watermarks through chains and exchanges, event-time timers
and keyed state, in STREAMING and BATCH mode."""

from __future__ import annotations

from typing import Any

import pytest

from dataflow_engine.graph.states import JobStatus
from dataflow_engine.runtime.time.durations import MAX_TIMESTAMP, MIN_TIMESTAMP

pytestmark = pytest.mark.spark


def _spec(records: list[Any], process: str, *, mode: str = "STREAMING",
          strategy: dict[str, Any] | None = None, parallelism: int = 2,
          exchange: dict[str, Any] | None = None, interval: str = "0ms") -> dict[str, Any]:
    return {
        "parallelism": parallelism, "runtimeMode": mode, "autoWatermarkInterval": interval,
        "pipeline": [
            {"name": "source", "type": "collection", "args": {"elements": records}},
            {"name": "stamp", "type": "timestamps", "inputs": ["source"], "parallelism": 1,
             "function": "spark_fns:TimestampOfField1",
             "watermarkStrategy": strategy or {"type": "forGenerator",
                                               "generator": "spark_fns:PunctuatedByField2"}},
            {"name": "process", "type": "process", "function": process,
             "inputs": [{"from": "stamp", "keyBy": 0, **(exchange or {})}]},
            {"name": "out", "type": "collect", "inputs": ["process"]},
        ],
    }


def _collect(run: Any, spec: dict[str, Any]) -> list[Any]:
    result = run(spec)
    assert result.job_status is JobStatus.FINISHED, result.error
    return [tuple(r) for r in result.collected["out"]]


def test_punctuated_watermarks_reach_a_keyed_operator_behind_its_records(run: Any) -> None:
    records = [["a", 10], ["b", 20, True], ["a", 30], ["a", 40, True], ["b", 50]]
    out = sorted(_collect(run, _spec(records, "spark_fns:TimestampAndWatermark")))
    # A punctuated watermark leaves before the record that caused it (as in Flink), and a
    # keyBy exchange delivers it to every subtask: each record sees the last one before it.
    assert out == [("a", 10, 10, MIN_TIMESTAMP), ("a", 30, 30, 20), ("a", 40, 40, 40),
                   ("b", 20, 20, 20), ("b", 50, 50, 40)]


def test_batch_mode_has_no_watermarks_but_keeps_timestamps(run: Any) -> None:
    records = [["a", 10], ["b", 20, True], ["a", 30, True]]
    out = sorted(_collect(run, _spec(records, "spark_fns:TimestampAndWatermark", mode="BATCH")))
    assert out == [("a", 10, 10, MIN_TIMESTAMP), ("a", 30, 30, MIN_TIMESTAMP),
                   ("b", 20, 20, MIN_TIMESTAMP)]


@pytest.mark.parametrize("mode", ["STREAMING", "BATCH"])
def test_event_time_timers_fire_once_per_key_and_time_with_state(run: Any, mode: str) -> None:
    # Watermarks at 25 and 60 (punctuated); the final watermark fires the rest.
    records = [["a", 1], ["b", 5], ["a", 3], ["a", 20], ["b", 25, True], ["a", 30],
               ["b", 40], ["c", 45], ["a", 60, True], ["c", 70]]
    out = _collect(run, _spec(records, "spark_fns:SumUntilTimer", mode=mode))
    if mode == "STREAMING":
        # The watermark of 25 precedes the record (b, 25) and fires (a, 11) and (b, 15); the
        # one of 60 fires (b, 35), (a, 40) and (c, 55); the final one the rest.
        expected = {("a", 24, 11, 11), ("b", 5, 15, 15), ("b", 65, 35, 35), ("a", 30, 40, 40),
                    ("c", 45, 55, 55), ("a", 60, 70, 70), ("c", 70, 80, 80)}
    else:
        # BATCH: no watermark until the end of input, so each key's first timer fires once,
        # after all of its records.
        expected = {("a", 114, 11, 11), ("b", 70, 15, 15), ("c", 115, 55, 55)}
    assert len(out) == len(expected)
    assert set(out) == expected
    if mode == "STREAMING":
        # Timers of one subtask fire in timestamp order; the (a, 11) and (b, 15) timers fire
        # at the watermark of 25, before any record after it.
        by_key: dict[str, list[int]] = {}
        for key, _, timer, _ in out:
            by_key.setdefault(key, []).append(timer)
        assert all(times == sorted(times) for times in by_key.values())


def test_bounded_out_of_orderness_with_periodic_watermarks(run: Any) -> None:
    records = [["a", 100], ["a", 90], ["a", 130]]
    strategy = {"type": "forBoundedOutOfOrderness", "maxOutOfOrderness": "20ms"}
    out = _collect(run, _spec(records, "spark_fns:TimestampAndWatermark", strategy=strategy,
                              interval="200ms"))
    # The final periodic emit happens when the assigner finishes, after the final watermark:
    # every record sees at most a watermark below its timestamp minus 20 ms.
    assert [r[:3] for r in sorted(out)] == [("a", 90, 90), ("a", 100, 100), ("a", 130, 130)]
    for *_, watermark in out:
        assert watermark == MIN_TIMESTAMP or watermark <= 130 - 20 - 1
        assert watermark != MAX_TIMESTAMP


def test_watermarks_cross_a_rebalance_and_a_union(run: Any) -> None:
    records_a = [["a", 10, True], ["a", 30, True]]
    records_b = [["b", 15, True], ["b", 35, True]]
    spec = {
        "parallelism": 2, "runtimeMode": "STREAMING", "autoWatermarkInterval": "0ms",
        "pipeline": [
            {"name": "left", "type": "collection", "args": {"elements": records_a}},
            {"name": "right", "type": "collection", "args": {"elements": records_b}},
            *({"name": f"stamp-{side}", "type": "timestamps", "inputs": [side],
               "function": "spark_fns:TimestampOfField1", "parallelism": 1,
               "watermarkStrategy": {"type": "forGenerator",
                                     "generator": "spark_fns:PunctuatedByField2"}}
              for side in ("left", "right")),
            {"name": "both", "type": "union", "inputs": ["stamp-left", "stamp-right"]},
            {"name": "spread", "type": "map", "function": "identity",
             "inputs": [{"from": "both", "partitioning": "rebalance"}]},
            {"name": "process", "type": "process",
             "function": "spark_fns:TimestampAndWatermark",
             "inputs": [{"from": "spread", "keyBy": 0}]},
            {"name": "out", "type": "collect", "inputs": ["process"]},
        ],
    }
    out = _collect(run, spec)
    assert sorted(r[:3] for r in out) == [("a", 10, 10), ("a", 30, 30), ("b", 15, 15),
                                          ("b", 35, 35)]
    # A consumer's watermark is the minimum over all of its input channels: it never passes a
    # record's own stream, and an ended stream (final watermark) no longer holds it back.
    for _, _, timestamp, watermark in out:
        assert watermark <= timestamp
        assert watermark in (MIN_TIMESTAMP, 10, 15, 30, 35)


def test_watermarks_are_not_counted_as_records(run: Any) -> None:
    records = [["a", 10, True], ["b", 20, True], ["a", 30, True]]
    result = run(_spec(records, "spark_fns:TimestampAndWatermark"))
    assert result.job_status is JobStatus.FINISHED, result.error
    metrics = result.operator_metrics()
    assert metrics["stamp"] == (3, 3)
    assert metrics["process"] == (3, 3)


def test_a_process_function_on_a_non_keyed_stream(run: Any) -> None:
    records = [["a", 10, False, 1], ["b", 20, False, 2], ["c", 30, False, 3]]
    spec = _spec(records, "spark_fns:Tag")
    spec["pipeline"][2]["inputs"] = ["stamp"]  # no keyBy: Flink's ProcessOperator
    spec["pipeline"].append({"name": "odd", "type": "collect",
                             "inputs": [{"from": "process", "sideOutput": "odd"}]})
    result = run(spec)
    assert result.job_status is JobStatus.FINISHED, result.error
    assert sorted(tuple(r) for r in result.collected["out"]) == [("a", 10), ("b", 20),
                                                                ("c", 30)]
    assert sorted(result.collected["odd"]) == [1, 3]
    assert "Process" in {v.name.split(" ->")[0] for v in result.vertices}


def test_timers_need_a_keyed_stream(run: Any) -> None:
    spec = _spec([["a", 10]], "spark_fns:TimerWithoutKey")
    spec["pipeline"][2]["inputs"] = ["stamp"]
    result = run(spec)
    assert result.job_status is JobStatus.FAILED
    assert "Setting timers is only supported on a keyed stream" in (result.error or "")
    assert "operator 'process'" in (result.error or "")


def test_a_broadcast_exchange_carries_timestamps_to_every_subtask(run: Any) -> None:
    records = [["a", 10, False, 1], ["b", 20, False, 2]]
    spec = _spec(records, "spark_fns:Tag", parallelism=3)
    spec["pipeline"][2]["inputs"] = [{"from": "stamp", "partitioning": "broadcast"}]
    result = run(spec)
    assert result.job_status is JobStatus.FINISHED, result.error
    assert sorted(tuple(r) for r in result.collected["out"]) == (
        [("a", 10)] * 3 + [("b", 20)] * 3)
