"""PyFlink's ``Duration`` and ``Time`` (spans of time, kept as integer milliseconds) and
``Instant`` (a point in time, dataflow_engine.types', where the runtime reaches it too)."""

from __future__ import annotations

from dataclasses import dataclass

from dataflow_engine.types.instant import Instant


@dataclass(frozen=True)
class Duration:
    millis: int

    @staticmethod
    def of_days(days: int) -> Duration:
        return Duration(days * 86_400_000)

    @staticmethod
    def of_hours(hours: int) -> Duration:
        return Duration(hours * 3_600_000)

    @staticmethod
    def of_minutes(minutes: int) -> Duration:
        return Duration(minutes * 60_000)

    @staticmethod
    def of_seconds(seconds: int) -> Duration:
        return Duration(seconds * 1000)

    @staticmethod
    def of_millis(millis: int) -> Duration:
        return Duration(millis)

    @staticmethod
    def of_nanos(nanos: int) -> Duration:
        return Duration(nanos // 1_000_000)

    def to_milliseconds(self) -> int:
        return self.millis


@dataclass(frozen=True)
class Time:
    """The older span type windows and state TTL take in PyFlink."""

    millis: int

    @staticmethod
    def milliseconds(milliseconds: int) -> Time:
        return Time(milliseconds)

    @staticmethod
    def seconds(seconds: int) -> Time:
        return Time(seconds * 1000)

    @staticmethod
    def minutes(minutes: int) -> Time:
        return Time(minutes * 60_000)

    @staticmethod
    def hours(hours: int) -> Time:
        return Time(hours * 3_600_000)

    @staticmethod
    def days(days: int) -> Time:
        return Time(days * 86_400_000)

    def to_milliseconds(self) -> int:
        return self.millis


__all__ = ["Duration", "Instant", "Time"]
