"""Fused runs with a timestamp assigner in them: the record's timestamp is set for the steps
after the assigner and restored when the run returns, also when a filter drops the record;
the run's loop over many records does for each what the run does for one."""

from __future__ import annotations

from typing import Any

import pytest

from dataflow_engine.runtime.tasks.fusion import FusedStep, fuse
from dataflow_engine.runtime.tasks.outputs import Counter
from dataflow_engine.runtime.time.durations import MIN_TIMESTAMP
from dataflow_engine.runtime.time.elements import ElementTimestamp
from dataflow_engine.runtime.time.watermark_generators import BoundedOutOfOrdernessWatermarks

pytestmark = pytest.mark.unit


def _failure(error: BaseException) -> BaseException:
    return RuntimeError(f"step failed: {error}")


@pytest.mark.parametrize("in_a_loop", [False, True], ids=["one", "loop"])
def test_a_stamp_step_sets_the_timestamp_for_what_follows_and_restores_it(
        in_a_loop: bool) -> None:
    cell, generator = ElementTimestamp(), BoundedOutOfOrdernessWatermarks(0)
    seen: list[tuple[Any, int | None]] = []
    counters = [Counter() for _ in range(3)]
    assigner_saw: list[int] = []

    def assign(value: Any, record_timestamp: int) -> int:
        assigner_saw.append(record_timestamp)
        return int(value[1])

    steps = [
        FusedStep("stamp", assign, _failure, False, counters[0], cell, generator),
        FusedStep("filter", lambda value: value[0] != "drop", _failure, False, counters[1]),
        FusedStep("map", lambda value: (value[0].upper(), value[1]), _failure, True,
                  counters[2]),
    ]
    run = fuse(steps, (lambda value: seen.append((value, cell.value)), False))
    shared = run.counters
    cell.value = 7  # the timestamp the record came with
    records = [("a", 100), ("drop", 300), ("b", 200)]
    if in_a_loop:
        run.process_all(iter(records))
        assert cell.value == 7
    for record in ([] if in_a_loop else records):
        run.process_element(record)
        assert cell.value == 7  # restored, also after the filter dropped a record
    assert seen == [(("A", 100), 100), (("B", 200), 200)]
    assert assigner_saw == [7, 7, 7]
    assert generator.max_timestamp == 300  # every record counts for the watermark
    # The stamp passes on what it receives; the filter starts a new count.
    assert shared[0] is shared[1] and shared[2] is not shared[1]
    assert (shared[0].count, shared[2].count) == (3, 2)


def test_a_failing_assigner_restores_the_timestamp_and_names_its_step() -> None:
    cell, generator = ElementTimestamp(), BoundedOutOfOrdernessWatermarks(0)
    counter = Counter()
    steps = [FusedStep("stamp", lambda value, ts: value["missing"], _failure, False, counter,
                       cell, generator)]
    run = fuse(steps, (lambda value: None, False))
    with pytest.raises(RuntimeError, match="step failed"):
        run.process_element({})
    assert cell.value is None
    assert generator.max_timestamp == MIN_TIMESTAMP + 1
    with pytest.raises(RuntimeError, match="step failed"):  # the loop stops at the failure
        run.process_all([{"missing": 1}, {}, {"missing": 3}])
    assert cell.value is None and counter.count == 3 and generator.max_timestamp == 1


def test_a_batch_stamp_step_has_no_generator_and_still_stamps() -> None:
    """BATCH mode generates no watermarks: the fused stamp only sets the timestamp."""
    cell = ElementTimestamp()
    seen: list[tuple[Any, int | None]] = []
    steps = [FusedStep("map", lambda value: (value, value * 10), _failure, False, Counter()),
             FusedStep("stamp", lambda value, ts: value[1], _failure, False, Counter(), cell)]
    run = fuse(steps, (lambda value: seen.append((value, cell.value)), False))
    run.process_element(4)
    run.process_element(2)
    assert seen == [((4, 40), 40), ((2, 20), 20)]
    assert cell.value is None
