"""Watermarks per source split (a Kafka source's partitions), combined per subtask."""

from __future__ import annotations

import functools
import pickle
from collections.abc import Callable
from typing import Any

import pytest
from test_time_services import Output

from dataflow_engine.runtime.streamoperators.timestamps import create_watermark_generator
from dataflow_engine.runtime.time.elements import Watermark
from dataflow_engine.runtime.time.split_watermarks import SourceSplits, SplitWatermarks
from dataflow_engine.runtime.time.watermark_generators import WatermarkOutput
from dataflow_engine.spec.model import WatermarkStrategySpec

pytestmark = pytest.mark.unit

A, B = ("clicks", 0), ("clicks", 1)


def _bounded(delay: int = 100, idleness: str | None = None) -> Any:
    strategy = {"type": "forBoundedOutOfOrderness", "maxOutOfOrderness": f"{delay}ms"}
    if idleness:
        strategy["idleness"] = idleness
    return functools.partial(create_watermark_generator,
                             WatermarkStrategySpec.model_validate(strategy))


def _generator(factory: Any, *assigned: Any, clock: Callable[[], int] = lambda: 0
               ) -> tuple[SplitWatermarks, SourceSplits]:
    splits = SourceSplits(frozenset({1}), frozenset(assigned))
    return SplitWatermarks(factory, clock, splits), splits


def _event(generator: SplitWatermarks, splits: SourceSplits, split: Any, timestamp: int,
           output: WatermarkOutput) -> None:
    splits.current = split
    generator.on_event(None, timestamp, output)


def test_a_lagging_partition_holds_the_watermark_back_across_epochs() -> None:
    generator, splits = _generator(_bounded(), A, B)
    output = Output()
    _event(generator, splits, A, 1000, output)
    _event(generator, splits, B, 300, output)
    generator.on_periodic_emit(output)
    _event(generator, splits, A, 9000, output)  # a later epoch: B has nothing new
    generator.on_periodic_emit(output)
    _event(generator, splits, B, 4000, output)
    generator.on_periodic_emit(output)
    assert output.events == [300 - 101, 300 - 101, 4000 - 101]


def test_a_partition_without_records_holds_it_until_it_is_idle() -> None:
    now = [0]
    generator, splits = _generator(_bounded(idleness="1s"), A, B, clock=lambda: now[0])
    output = Output()
    _event(generator, splits, A, 5000, output)
    generator.on_periodic_emit(output)
    assert output.events == []  # B has no watermark yet
    now[0] = 1500
    _event(generator, splits, A, 6000, output)
    generator.on_periodic_emit(output)
    assert output.events == [6000 - 101]  # B idle: A alone decides
    now[0] = 3000
    generator.on_periodic_emit(output)
    assert output.events[-1] == "idle"  # both idle: so is the subtask


def test_a_record_of_an_idle_split_makes_the_subtask_active_before_it_leaves() -> None:
    now = [0]
    generator, splits = _generator(_bounded(idleness="1s"), A, B, clock=lambda: now[0])
    output = Output()
    _event(generator, splits, A, 5000, output)
    _event(generator, splits, B, 4000, output)
    now[0] = 2000
    generator.on_periodic_emit(output)
    assert output.events == ["idle"]
    _event(generator, splits, B, 4500, output)  # B has a record: active, A still idle
    assert output.events == ["idle", "active"]
    _event(generator, splits, B, 4600, output)  # no change in status: nothing more
    generator.on_periodic_emit(output)
    assert output.events == ["idle", "active", 4600 - 101]


def test_a_split_that_leaves_no_longer_counts_and_no_split_is_the_subtasks_own() -> None:
    generator, splits = _generator(_bounded(), A, B)
    output = Output()
    _event(generator, splits, A, 5000, output)
    _event(generator, splits, B, 100, output)
    splits.assigned = frozenset({A})  # B finished, or went to another subtask
    generator.on_periodic_emit(output)
    assert output.events == [5000 - 101]
    assert set(generator.generators) == {A}
    now = [0]
    idle, _ = _generator(_bounded(idleness="1s"), clock=lambda: now[0])
    now[0] = 2000
    idle.on_periodic_emit(output)
    assert output.events[-1] == "idle"


def test_a_punctuated_split_watermark_is_combined_at_once() -> None:
    class EveryEvent:
        def on_event(self, event: Any, timestamp: int, out: WatermarkOutput) -> None:
            out.emit_watermark(Watermark(timestamp))

        def on_periodic_emit(self, out: WatermarkOutput) -> None:
            """Punctuated only."""

    generator, splits = _generator(lambda clock: EveryEvent(), A, B)
    output = Output()
    _event(generator, splits, A, 50, output)
    assert output.events == []  # B has none yet
    _event(generator, splits, B, 70, output)
    _event(generator, splits, A, 90, output)
    assert output.events == [50, 70]


def test_it_is_snapshotted_without_the_tasks_clock_and_splits() -> None:
    generator, splits = _generator(_bounded(idleness="5s"), A, B)
    output = Output()
    _event(generator, splits, A, 1000, output)
    _event(generator, splits, B, 2000, output)
    copy = pickle.loads(pickle.dumps(generator))
    assert not hasattr(copy, "clock") and not hasattr(copy, "splits")
    later = SourceSplits(frozenset({1}), frozenset({A, B}))
    copy.bind(lambda: 0, later)
    copy.on_periodic_emit(output)
    assert output.events == [1000 - 101]
