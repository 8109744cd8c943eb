"""What travels on an event-time stream besides records: watermarks and watermark statuses.

On an exchange that carries event time (see :attr:`OutputConfig.event_time`) a record travels as
``(timestamp, payload)`` and these elements travel between records, each naming the input
channel (producer subtask) it comes from, so the consumer's valve can hold one watermark per
channel. Streams without event time carry neither, and pay nothing for them.
"""

from __future__ import annotations

from dataflow_engine.runtime.time.durations import MAX_TIMESTAMP, MIN_TIMESTAMP


class Watermark:
    """Flink's Watermark: no more records with a timestamp <= ``timestamp`` will follow."""

    __slots__ = ("channel", "timestamp")

    def __init__(self, timestamp: int, channel: int = 0) -> None:
        self.timestamp = timestamp
        self.channel = channel

    def __reduce__(self) -> tuple[type[Watermark], tuple[int, int]]:
        return Watermark, (self.timestamp, self.channel)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Watermark) and other.timestamp == self.timestamp
                and other.channel == self.channel)

    def __hash__(self) -> int:
        return hash((self.timestamp, self.channel))

    def __repr__(self) -> str:
        return f"Watermark(timestamp={self.timestamp}, channel={self.channel})"


class WatermarkStatus:
    """Flink's WatermarkStatus: an IDLE channel is left out of its consumer's minimum."""

    __slots__ = ("channel", "idle")

    def __init__(self, idle: bool, channel: int = 0) -> None:
        self.idle = idle
        self.channel = channel

    def __reduce__(self) -> tuple[type[WatermarkStatus], tuple[bool, int]]:
        return WatermarkStatus, (self.idle, self.channel)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, WatermarkStatus) and other.idle == self.idle
                and other.channel == self.channel)

    def __hash__(self) -> int:
        return hash((self.idle, self.channel))

    def __repr__(self) -> str:
        return f"WatermarkStatus({'IDLE' if self.idle else 'ACTIVE'}, channel={self.channel})"


class ElementTimestamp:
    """The timestamp of the record a subtask is processing (Flink's ``StreamRecord`` field).

    Records inside a chain are plain values, so their timestamp is kept beside them: one cell
    per subtask, set where a timestamp enters (an event-time input, an assigner, a window or a
    timer firing) and read where one is needed (``ctx.timestamp()``, windows, event-time
    outputs). ``None`` is Flink's "no timestamp". An operator that changes it restores the old
    value after emitting, so sibling outputs of an upstream operator see the original.
    """

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value: int | None = None


__all__ = ["MAX_TIMESTAMP", "MIN_TIMESTAMP", "ElementTimestamp", "Watermark", "WatermarkStatus"]
