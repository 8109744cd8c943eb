"""Watermarks per source split, as Flink's KafkaSource makes them (its SourceOperator's
WatermarkOutputMultiplexer): one generator per partition the subtask reads, and the subtask's
watermark is the lowest of its partitions' that are not idle. A partition that lags behind
another of the same subtask, across epochs, then holds the watermark back instead of having
its records arrive late.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from dataflow_engine.runtime.time.durations import MIN_TIMESTAMP
from dataflow_engine.runtime.time.elements import Watermark
from dataflow_engine.runtime.time.watermark_generators import (
    WatermarkGenerator,
    WatermarkOutput,
    WatermarksWithIdleness,
)

Clock = Callable[[], int]
#: Makes a split's generator from the strategy, given the task's processing-time clock.
GeneratorFactory = Callable[[Clock], WatermarkGenerator]


@dataclass
class SourceSplits:
    """What a split-aware source tells the watermark generation chained right after it."""

    #: Node ids of the timestamps operators chained directly after the source.
    consumers: frozenset[int]
    #: The splits the source reads in this epoch (its partitions, with or without records).
    assigned: frozenset[Hashable] = frozenset()
    #: The split of the record being emitted.
    current: Hashable | None = None


class SplitOutput:
    """One split's WatermarkOutput: remembers its watermark and idleness for the combination."""

    def __init__(self) -> None:
        self.watermark = MIN_TIMESTAMP
        self.idle = False

    def emit_watermark(self, watermark: Watermark) -> None:
        self.watermark = max(self.watermark, watermark.timestamp)
        self.idle = False

    def mark_idle(self) -> None:
        self.idle = True

    def mark_active(self) -> None:
        self.idle = False


@dataclass
class SplitWatermarks:
    """A WatermarkGenerator of generators, one per assigned split. Snapshotted with its
    splits' generators; :meth:`bind` gives a restored one the task's clock and splits."""

    factory: GeneratorFactory
    clock: Clock
    splits: SourceSplits
    generators: dict[Hashable, tuple[WatermarkGenerator, SplitOutput]] = field(
        default_factory=dict)
    #: Used while no split is assigned: the subtask's own generator (idle with idleness).
    unassigned: WatermarkGenerator | None = None
    #: Whether the combination last marked the subtask's output idle.
    idle: bool = False

    def __post_init__(self) -> None:
        if self.unassigned is None:
            self.unassigned = self.factory(self.clock)

    def _split(self, split: Hashable) -> tuple[WatermarkGenerator, SplitOutput]:
        found = self.generators.get(split)
        if found is None:
            found = self.generators[split] = (self.factory(self.clock), SplitOutput())
        return found

    def on_event(self, event: Any, event_timestamp: int, output: WatermarkOutput) -> None:
        generator, split_output = self._split(self.splits.current)
        before = (split_output.watermark, split_output.idle)
        generator.on_event(event, event_timestamp, split_output)
        # A punctuated generator emitted, or an idle split has a record again: the subtask
        # must be active before the record leaves, or downstream counts it on an idle channel.
        if (split_output.watermark, split_output.idle) != before:
            self._combine(output)

    def on_periodic_emit(self, output: WatermarkOutput) -> None:
        assigned = self.splits.assigned
        for split in [s for s in self.generators if s not in assigned]:
            del self.generators[split]  # finished, or assigned to another subtask
        if not assigned:
            assert self.unassigned is not None
            self.unassigned.on_periodic_emit(output)
            return
        for split in assigned:
            generator, split_output = self._split(split)
            generator.on_periodic_emit(split_output)
        self._combine(output)

    def _combine(self, output: WatermarkOutput) -> None:
        """The lowest watermark of the assigned splits that are not idle (one that has none
        yet holds it back); idle when all are, active again as soon as one is."""
        active = [o.watermark for _, o in map(self._split, self.splits.assigned) if not o.idle]
        if not active:
            self.idle = True
            output.mark_idle()
            return
        if self.idle:
            self.idle = False
            output.mark_active()
        if min(active) > MIN_TIMESTAMP:
            output.emit_watermark(Watermark(min(active)))

    def bind(self, clock: Clock, splits: SourceSplits) -> None:
        self.clock, self.splits = clock, splits
        for generator in [g for g, _ in self.generators.values()] + [self.unassigned]:
            if isinstance(generator, WatermarksWithIdleness):
                generator.clock = clock

    def __getstate__(self) -> dict[str, Any]:
        """Without the task's clock and splits (the restoring operator binds its own)."""
        return {key: value for key, value in self.__dict__.items()
                if key not in ("clock", "splits")}
