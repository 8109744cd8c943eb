"""Keyed operators: sum/min/max/reduce per mode, and process with keyed value state."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from dataflow_engine.graph.states import JobStatus

pytestmark = pytest.mark.spark

RECORDS = [["a", 5, "x"], ["b", 2, "y"], ["a", 1, "z"], ["c", 7, "w"], ["b", 9, "v"],
           ["a", 3, "u"], ["c", 7, "t"], ["a", 8, "s"]]


def keyed(kind: str, mode: str, *, field: Any = 1, function: str | None = None,
          records: list[Any] | None = None, key: Any = 0) -> dict[str, Any]:
    operator: dict[str, Any] = {"name": "agg", "type": kind,
                                "inputs": [{"from": "source", "keyBy": key}]}
    if function:
        operator["function"] = function
    else:
        operator["args"] = {"field": field}
    return {
        "parallelism": 2,
        "runtimeMode": mode,
        "pipeline": [
            {"name": "source", "type": "collection", "args": {"elements": records or RECORDS}},
            operator,
            {"name": "out", "type": "collect", "inputs": ["agg"]},
        ],
    }


def results(run: Any, spec: dict[str, Any]) -> list[Any]:
    result = run(spec)
    assert result.job_status is JobStatus.FINISHED, result.error
    return [tuple(r) if isinstance(r, list) else r for r in result.collected["out"]]


@pytest.mark.parametrize(("kind", "expected"), [
    ("sum", {"a": 17, "b": 11, "c": 14}),
    ("min", {"a": 1, "b": 2, "c": 7}),
    ("max", {"a": 8, "b": 9, "c": 7}),
])
def test_batch_aggregations_emit_the_final_value_with_the_first_records_fields(
        run: Any, kind: str, expected: dict[str, int]) -> None:
    out = results(run, keyed(kind, "BATCH"))
    assert {k: v for k, v, _ in out} == expected
    assert len(out) == 3
    # Like Flink's sum/min/max (not minBy): other fields come from the key's first record,
    # which is the first record of the key in some producer subtask.
    firsts = {"a": {"x", "z"}, "b": {"y", "v"}, "c": {"w", "t"}}
    assert all(other in firsts[k] for k, _, other in out)


@pytest.mark.parametrize(("kind", "expected"), [
    ("sum", {"a": 17, "b": 11, "c": 14}),
    ("min", {"a": 1, "b": 2, "c": 7}),
    ("max", {"a": 8, "b": 9, "c": 7}),
])
def test_streaming_aggregations_emit_a_rolling_value_per_record(
        run: Any, kind: str, expected: dict[str, int]) -> None:
    out = results(run, keyed(kind, "STREAMING"))
    assert Counter(k for k, _, _ in out) == Counter(k for k, _, _ in RECORDS)
    # A key lives in one subtask and the collect sink keeps its order: the last value emitted
    # for a key is the aggregate of all its records.
    last = {k: v for k, v, _ in out}
    assert last == expected


def test_mapping_records_aggregate_by_field_name(run: Any) -> None:
    records = [{"user": u, "clicks": c} for u, c in [("ann", 1), ("bob", 4), ("ann", 2)]]
    out = results(run, keyed("sum", "BATCH", field="clicks", key="user", records=records))
    assert sorted(out, key=lambda r: r["user"]) == [{"user": "ann", "clicks": 3},
                                                     {"user": "bob", "clicks": 4}]


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_reduce(run: Any, mode: str) -> None:
    sentence = ["the", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog"]
    words = [[w, len(w)] for w in sentence]
    out = results(run, keyed("reduce", mode, function="spark_fns:longest", records=words,
                             key="spark_fns:first_letter"))
    finals: dict[str, tuple[str, int]] = {}
    for word, length in out:
        letter = word[0]
        finals[letter] = max(finals.get(letter, ("", 0)), (word, length), key=lambda p: p[1])
    assert finals == {"t": ("the", 3), "q": ("quick", 5), "b": ("brown", 5), "f": ("fox", 3),
                      "j": ("jumps", 5), "o": ("over", 4), "l": ("lazy", 4), "d": ("dog", 3)}
    if mode == "BATCH":
        assert len(out) == len(finals)
    else:
        assert len(out) == len(words)


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_process_function_with_keyed_value_state(run: Any, mode: str) -> None:
    words = ["a", "b", "a", "c", "a", "b"]
    spec = {
        "parallelism": 2, "runtimeMode": mode,
        "pipeline": [
            {"name": "source", "type": "collection", "args": {"elements": words}},
            {"name": "count", "type": "process",
             "inputs": [{"from": "source", "keyBy": "spark_fns:first_letter"}],
             "function": "spark_fns:RunningCount"},
            {"name": "out", "type": "collect", "inputs": ["count"]},
        ],
    }
    out = results(run, spec)
    assert Counter(out) == Counter([("a", 1), ("a", 2), ("a", 3), ("b", 1), ("b", 2), ("c", 1)])


def test_process_function_class(run: Any) -> None:
    records = [["k1", 1], ["k1", 1], ["k2", 1], ["k1", 2], ["k2", 1]]
    spec = {
        "pipeline": [
            {"name": "source", "type": "collection", "args": {"elements": records}},
            {"name": "distinct", "type": "process", "inputs": [{"from": "source", "keyBy": 0}],
             "function": "spark_fns:DistinctPerKey"},
            {"name": "out", "type": "collect", "inputs": ["distinct"]},
        ],
    }
    assert sorted(results(run, spec)) == [("k1", 1), ("k1", 2), ("k2", 1)]


def test_keyed_state_expires_after_its_time_to_live(run: Any) -> None:
    records = [["a", 1, False], ["b", 10, False], ["a", 2, False], ["b", 11, True],
               ["a", 3, True]]
    spec = {
        "parallelism": 1, "runtimeMode": "STREAMING",
        "pipeline": [
            {"name": "source", "type": "collection", "args": {"elements": records}},
            {"name": "brief", "type": "process", "function": "spark_fns:RememberBriefly",
             "inputs": [{"from": "source", "keyBy": 0}]},
            {"name": "out", "type": "collect", "inputs": ["brief"]},
        ],
    }
    out = results(run, spec)
    # Without the wait the previous value is there; after 300 ms (TTL 100 ms) it is gone.
    assert out == [("a", 1, None), ("b", 10, None), ("a", 2, 1), ("b", 11, None),
                   ("a", 3, None)]


def test_keyed_state_survives_across_input_batches(run: Any) -> None:
    # 3 keys x 4,000 records: each key's records arrive in many frames (1,024 records each)
    # and from two producer subtasks; the running count ends at exactly 4,000 per key.
    words = [letter for _ in range(4000) for letter in "xyz"]
    spec = {
        "parallelism": 2, "runtimeMode": "STREAMING",
        "pipeline": [
            {"name": "source", "type": "collection", "args": {"elements": words}},
            {"name": "spread", "type": "map", "function": "identity",
             "inputs": [{"from": "source", "partitioning": "rebalance"}]},
            {"name": "count", "type": "process", "function": "spark_fns:RunningCount",
             "inputs": [{"from": "spread", "keyBy": "spark_fns:first_letter"}]},
            {"name": "out", "type": "collect", "inputs": ["count"]},
        ],
    }
    out = results(run, spec)
    final = {key: max(n for k, n in out if k == key) for key in "xyz"}
    assert final == {"x": 4000, "y": 4000, "z": 4000}
    assert len(out) == 12000 and len(set(out)) == 12000
