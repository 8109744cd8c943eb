"""Each channel selector routes like Flink's; a rich map records the subtask it ran in."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import pytest

from dataflow_engine.graph.states import JobStatus
from dataflow_engine.runtime.state.key_groups import assign_key_to_parallel_operator
from dataflow_engine.runtime.streamoperators.sources import sequence_splits

pytestmark = pytest.mark.spark


def routed(source_parallelism: int, elements: list[Any], target_parallelism: int,
           edge: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """source -> (edge) -> tag (TagSubtask) -> collect; the tag runs in its own task.

    A collection source is non-parallel, as in Flink: several producers need numbers, read by
    a parallel sequence source."""
    if source_parallelism == 1:
        source = {"name": "source", "type": "collection", "parallelism": 1,
                  "args": {"elements": elements}}
    else:
        assert elements == list(range(len(elements))), "a parallel source reads 0..n-1"
        source = {"name": "source", "type": "sequence", "parallelism": source_parallelism,
                  "args": {"from": 0, "to": len(elements) - 1}}
    return {
        "parallelism": target_parallelism,
        "pipeline": [
            source,
            {"name": "tag", "type": "map", "inputs": [{"from": "source", **edge}],
             "function": "spark_fns:TagSubtask", "disableChaining": True, **extra},
            {"name": "out", "type": "collect", "inputs": ["tag"]},
        ],
    }


def producer_of(elements: list[int], parallelism: int) -> dict[int, int]:
    """The producing subtask of each number of a parallel sequence source."""
    return {e: i for i, (start, end) in enumerate(sequence_splits(0, len(elements) - 1,
                                                                  parallelism))
            for e in range(start, end)}


def run_ok(run: Any, spec: dict[str, Any]) -> list[tuple[int, Any]]:
    result = run(spec)
    assert result.job_status is JobStatus.FINISHED, result.error
    return [tuple(r) for r in result.collected["out"]]


def test_forward_keeps_the_subtask_index_without_a_shuffle(run: Any) -> None:
    elements = list(range(30))
    out = run_ok(run, routed(3, elements, 3, {"partitioning": "forward"}))
    producer = producer_of(elements, 3)
    assert sorted(v for _, v in out) == elements
    assert all(subtask == producer[v] for subtask, v in out)


def test_rebalance_is_round_robin_from_a_random_start(run: Any) -> None:
    elements = list(range(30))
    out = run_ok(run, routed(1, elements, 3, {"partitioning": "rebalance"}))
    subtask_of = {v: s for s, v in out}
    assert sorted(subtask_of) == elements
    start = subtask_of[0]
    assert all(subtask_of[v] == (start + v) % 3 for v in elements)
    assert Counter(subtask_of.values()) == {0: 10, 1: 10, 2: 10}


def test_rescale_round_robins_within_each_producers_consumer_range(run: Any) -> None:
    elements = list(range(40))
    out = run_ok(run, routed(2, elements, 4, {"partitioning": "rescale"}))
    producer = producer_of(elements, 2)
    by_producer: dict[int, list[int]] = defaultdict(list)
    for v in elements:
        by_producer[producer[v]].append(v)
    subtask_of = {v: s for s, v in out}
    for p, values in by_producer.items():
        # Producer p feeds consumers [2p, 2p + 2), starting at channel 0 (Flink's -1 start).
        assert [subtask_of[v] for v in values] == [2 * p + (j % 2) for j in range(len(values))]


def test_rescale_to_fewer_consumers_merges_neighbouring_producers(run: Any) -> None:
    elements = list(range(40))
    out = run_ok(run, routed(4, elements, 2, {"partitioning": "rescale"}))
    producer = producer_of(elements, 4)
    assert all(subtask == producer[v] // 2 for subtask, v in out)


def test_shuffle_sends_each_record_once_to_a_random_subtask(run: Any) -> None:
    elements = list(range(300))
    out = run_ok(run, routed(1, elements, 3, {"partitioning": "shuffle"}))
    assert sorted(v for _, v in out) == elements
    counts = Counter(s for s, _ in out)
    assert set(counts) == {0, 1, 2} and min(counts.values()) > 50


def test_broadcast_sends_every_record_to_every_subtask(run: Any) -> None:
    elements = ["a", "b", "c", "d"]
    out = run_ok(run, routed(1, elements, 3, {"partitioning": "broadcast"}))
    assert sorted(out) == sorted((s, e) for s in range(3) for e in elements)


def test_global_sends_everything_to_subtask_0(run: Any) -> None:
    elements = list(range(20))
    out = run_ok(run, routed(2, elements, 3, {"partitioning": "global"}))
    assert sorted(v for _, v in out) == elements
    assert {s for s, _ in out} == {0}


@pytest.mark.parametrize("max_parallelism", [128, 7])
def test_key_by_routes_by_key_group(run: Any, max_parallelism: int) -> None:
    words = [f"word{i % 23}" for i in range(200)]
    elements = [[w, i] for i, w in enumerate(words)]
    out = run_ok(run, routed(1, elements, 3, {"keyBy": 0}, maxParallelism=max_parallelism))
    assert len(out) == len(elements)
    for subtask, (word, _) in out:
        assert subtask == assign_key_to_parallel_operator(word, max_parallelism, 3)
    assert len({s for s, _ in out}) == 3


def test_key_by_function_reference(run: Any) -> None:
    words = ["apple", "avocado", "banana", "blueberry", "cherry", "cranberry"] * 5
    out = run_ok(run, routed(1, words, 3, {"keyBy": "spark_fns:first_letter"}))
    for subtask, word in out:
        assert subtask == assign_key_to_parallel_operator(word[0], 128, 3)
