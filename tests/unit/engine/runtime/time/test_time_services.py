"""Watermark valves, generators, and the timer and processing-time services, driven directly."""

from __future__ import annotations

from typing import Any

import pytest

from dataflow_engine.runtime.state.timer_service import InternalTimer, InternalTimerService
from dataflow_engine.runtime.time.durations import MAX_TIMESTAMP, MIN_TIMESTAMP
from dataflow_engine.runtime.time.elements import Watermark
from dataflow_engine.runtime.time.processing_time import ProcessingTimeService
from dataflow_engine.runtime.time.valve import CombinedWatermark, StatusWatermarkValve
from dataflow_engine.runtime.time.watermark_generators import (
    BoundedOutOfOrdernessWatermarks,
    WatermarkEmitter,
    WatermarksWithIdleness,
)

pytestmark = pytest.mark.unit


def test_a_valve_moves_on_at_the_minimum_of_its_channels() -> None:
    valve = StatusWatermarkValve([0, 1, 2])
    assert valve.input_watermark(10, 0) is None
    assert valve.input_watermark(5, 1) is None
    assert valve.input_watermark(7, 2) == 5
    assert valve.input_watermark(3, 1) is None  # a channel never goes back
    assert valve.input_watermark(20, 1) == 7
    assert valve.current == 7


def test_an_idle_channel_does_not_hold_the_watermark_back() -> None:
    valve = StatusWatermarkValve([0, 1])
    valve.input_watermark(10, 0)
    assert valve.input_status(True, 1) == 10  # the idle one was the minimum
    assert not valve.is_idle
    assert valve.input_status(True, 0) is None
    assert valve.is_idle
    # Active again with an old watermark: the input's watermark does not move backwards.
    assert valve.input_watermark(4, 1) is None
    assert valve.current == 10


def test_when_every_channel_is_idle_the_highest_watermark_is_flushed() -> None:
    """The channel holding the minimum goes idle last: no channel will advance any more, so
    the input moves to the highest channel's watermark (Flink's valve does the same)."""
    valve = StatusWatermarkValve([0, 1, 2])
    valve.input_watermark(30, 0)
    valve.input_watermark(20, 2)
    assert valve.input_status(True, 0) is None  # channel 1 (MIN) still holds it back
    assert valve.input_status(True, 2) is None
    assert valve.input_status(True, 1) == 30
    assert valve.is_idle and valve.current == 30
    assert valve.input_status(True, 1) is None  # already idle
    late = StatusWatermarkValve([0, 1])
    late.input_watermark(10, 0)
    late.input_watermark(4, 1)
    assert late.input_status(True, 1) == 10
    assert late.input_status(True, 0) is None  # nothing higher to flush


def test_a_two_input_watermark_is_the_minimum_of_active_inputs() -> None:
    first, second = StatusWatermarkValve([0]), StatusWatermarkValve([1])
    combined = CombinedWatermark({1: first, 2: second})
    first.input_watermark(50, 0)
    assert combined.advance() is None  # input 2 is still at MIN
    second.input_watermark(30, 1)
    assert combined.advance() == 30
    second.input_status(True, 1)
    assert combined.advance() == 50  # input 2 idle: input 1 alone decides


class Output:
    def __init__(self) -> None:
        self.events: list[Any] = []

    def emit_watermark(self, watermark: Watermark) -> None:
        self.events.append(watermark.timestamp)

    def mark_idle(self) -> None:
        self.events.append("idle")

    def mark_active(self) -> None:
        self.events.append("active")


def test_bounded_out_of_orderness_lags_the_highest_timestamp() -> None:
    generator, output = BoundedOutOfOrdernessWatermarks(100), Output()
    generator.on_periodic_emit(output)
    assert output.events == [MIN_TIMESTAMP]
    for timestamp in (1000, 700, 1200, 900):
        generator.on_event(None, timestamp, output)
    generator.on_periodic_emit(output)
    assert output.events[-1] == 1200 - 100 - 1


def test_idleness_after_a_quiet_period_of_processing_time() -> None:
    now = [0]
    generator = WatermarksWithIdleness(BoundedOutOfOrdernessWatermarks(0), 1000,
                                       lambda: now[0])
    output = Output()
    generator.on_event(None, 5, output)
    now[0] = 500
    generator.on_periodic_emit(output)
    now[0] = 1500
    generator.on_periodic_emit(output)
    generator.on_event(None, 9, output)
    assert output.events == ["active", 4, "idle", "active"]


def test_the_emitter_only_lets_rising_watermarks_out_and_reactivates() -> None:
    emitted: list[Any] = []
    emitter = WatermarkEmitter(emitted.append, lambda idle: emitted.append(f"idle={idle}"))
    emitter.emit_watermark(Watermark(10))
    emitter.emit_watermark(Watermark(5))
    emitter.mark_idle()
    emitter.mark_idle()
    emitter.emit_watermark(Watermark(12))
    assert emitted == [10, "idle=True", "idle=False", 12]


class Keys:
    def __init__(self) -> None:
        self.current_key: Any = None

    def set_current_key(self, key: Any) -> None:
        self.current_key = key


class Fired:
    def __init__(self, keys: Keys, timers: list[InternalTimerService]) -> None:
        self.keys, self.timers = keys, timers
        self.log: list[Any] = []

    def on_event_time(self, timer: InternalTimer) -> None:
        assert self.keys.current_key == timer.key  # the callback sees the timer's key
        self.log.append(("event", timer.timestamp, timer.key))
        if timer.timestamp == 10:  # a callback may register another timer, due at once
            self.timers[0].register_event_time_timer(None, 15)

    def on_processing_time(self, timer: InternalTimer) -> None:
        self.log.append(("processing", timer.timestamp, timer.key))


def test_event_timers_fire_in_order_once_per_key_and_time() -> None:
    keys, holder = Keys(), []
    fired = Fired(keys, holder)
    service = InternalTimerService(fired, keys, ProcessingTimeService(clock=lambda: 0))
    holder.append(service)
    for key, timestamp in (("b", 30), ("a", 10), ("a", 30), ("b", 30), ("a", 20)):
        keys.set_current_key(key)
        service.register_event_time_timer(None, timestamp)
    keys.set_current_key("a")
    service.delete_event_time_timer(None, 20)
    service.advance_watermark(25)
    assert fired.log == [("event", 10, "a"), ("event", 15, "a")]
    service.advance_watermark(MAX_TIMESTAMP)
    assert fired.log[2:] == [("event", 30, "b"), ("event", 30, "a")]
    assert not service.has_timers()


def test_processing_timers_fire_through_the_task_clock() -> None:
    now = [100]
    clock = ProcessingTimeService(clock=lambda: now[0])
    keys = Keys()
    fired = Fired(keys, [])
    service = InternalTimerService(fired, keys, clock)
    keys.set_current_key("k")
    service.register_processing_time_timer(None, 150)
    service.register_processing_time_timer(None, 120)
    assert clock.next_due == 120
    now[0] = 130
    clock.fire_due()
    assert fired.log == [("processing", 120, "k")]
    assert clock.next_due == 150
    now[0] = 200
    clock.fire_due()
    assert fired.log[-1] == ("processing", 150, "k")
    assert clock.next_due == MAX_TIMESTAMP


def test_timers_snapshot_and_restore_by_key_group() -> None:
    keys = Keys()
    service = InternalTimerService(Fired(keys, []), keys, ProcessingTimeService(lambda: 0))
    for key in range(50):
        keys.set_current_key(key)
        service.register_event_time_timer(None, key)
    snapshot = service.snapshot(128)
    first_half, second_half = range(0, 64), range(64, 128)
    restored = []
    for groups in (first_half, second_half):
        other = InternalTimerService(Fired(keys, []), keys, ProcessingTimeService(lambda: 0))
        other.restore([snapshot], groups)
        restored.append({key for _, key, _ in other.event_timers.live})
    assert restored[0] | restored[1] == set(range(50))
    assert not restored[0] & restored[1]
