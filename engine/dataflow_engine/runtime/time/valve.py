"""Flink's StatusWatermarkValve: one input's watermark is the minimum over its active channels.

A channel's watermark only rises (a lower one is ignored). An idle channel is excluded from
the minimum; when every channel is idle the input is idle, and an input that becomes active
again does not move the watermark backwards. When the last active channel goes idle while it
held the minimum, no channel will advance any more, so the watermark moves to the highest of
all channels (Flink flushes them the same way).
"""

from __future__ import annotations

from collections.abc import Iterable

from dataflow_engine.runtime.time.durations import MIN_TIMESTAMP

#: A valve's channel watermarks, idle channels and current watermark.
ValveState = tuple[dict[int, int], frozenset[int], int]


class StatusWatermarkValve:
    def __init__(self, channels: Iterable[int]) -> None:
        self.watermarks = dict.fromkeys(channels, MIN_TIMESTAMP)
        self.idle: set[int] = set()
        #: The last watermark let through (the input's current watermark).
        self.current = MIN_TIMESTAMP

    def snapshot(self) -> ValveState:
        return dict(self.watermarks), frozenset(self.idle), self.current

    def restore(self, state: ValveState) -> None:
        """Carries the channels' watermarks over from the previous epoch (same channels)."""
        watermarks, idle, self.current = state
        self.watermarks.update((c, w) for c, w in watermarks.items() if c in self.watermarks)
        self.idle = {c for c in idle if c in self.watermarks}

    @property
    def is_idle(self) -> bool:
        return bool(self.watermarks) and len(self.idle) == len(self.watermarks)

    def input_watermark(self, timestamp: int, channel: int) -> int | None:
        """The input's new watermark if it advanced, else None."""
        if timestamp > self.watermarks[channel]:
            self.watermarks[channel] = timestamp
        self.idle.discard(channel)
        return self._advance()

    def input_status(self, idle: bool, channel: int) -> int | None:
        """Marks a channel idle or active; returns the watermark if that advanced it."""
        if not idle:
            self.idle.discard(channel)
            return self._advance()
        if channel in self.idle:
            return None
        self.idle.add(channel)
        if not self.is_idle:
            return self._advance()
        highest = max(self.watermarks.values())
        if self.watermarks[channel] > self.current or highest <= self.current:
            return None
        self.current = highest
        return highest

    def _advance(self) -> int | None:
        active = [w for c, w in self.watermarks.items() if c not in self.idle]
        if not active:
            return None
        low = min(active)
        if low > self.current:
            self.current = low
            return low
        return None


class CombinedWatermark:
    """A two-input operator's watermark: the minimum of its inputs' watermarks, leaving out an
    idle input (Flink's combined watermark of processWatermark1/2)."""

    def __init__(self, valves: dict[int, StatusWatermarkValve]) -> None:
        self.valves = valves
        self.current = MIN_TIMESTAMP

    def advance(self) -> int | None:
        """The combined watermark if it advanced, else None."""
        active = [v.current for v in self.valves.values() if not v.is_idle]
        if not active:
            return None
        low = min(active)
        if low > self.current:
            self.current = low
            return low
        return None
