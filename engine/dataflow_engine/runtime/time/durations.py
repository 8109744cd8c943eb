"""Times and durations are integer milliseconds inside the engine, as in Flink."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

#: Flink's ``Long.MIN_VALUE`` watermark: nothing is known yet about event time.
MIN_TIMESTAMP = -(1 << 63)
#: Flink's ``Long.MAX_VALUE`` watermark: the end of event time (a bounded input has ended).
MAX_TIMESTAMP = (1 << 63) - 1


@runtime_checkable
class SupportsMilliseconds(Protocol):
    """PyFlink's ``Time`` and ``Duration`` (and this project's copies of them)."""

    def to_milliseconds(self) -> int: ...


def to_millis(value: object, what: str) -> int:
    """Milliseconds of an ``int`` or of a ``Time``/``Duration``; ``what`` names the argument."""
    if isinstance(value, SupportsMilliseconds):
        value = value.to_milliseconds()
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be milliseconds (int) or a Time/Duration, "
                        f"not {type(value).__name__}")
    return value
