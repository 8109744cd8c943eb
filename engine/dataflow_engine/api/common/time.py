"""PyFlink's ``Duration`` and ``Time`` (spans of time, kept as integer milliseconds) and
``Instant`` (a point in time)."""

from __future__ import annotations

from dataclasses import dataclass


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


@dataclass(frozen=True, repr=False)
class Instant:
    """A point in time as Java's ``Instant`` holds it: seconds since the epoch and the
    nanoseconds (0 to 999,999,999) after them; what ``Types.INSTANT`` values are in PyFlink."""

    seconds: int
    nanos: int

    @staticmethod
    def of_epoch_milli(epoch_milli: int) -> Instant:
        return Instant(epoch_milli // 1000, epoch_milli % 1000 * 1_000_000)

    def to_epoch_milli(self) -> int:
        return self.seconds * 1000 + self.nanos // 1_000_000

    def __repr__(self) -> str:
        return f"Instant<{self.seconds}, {self.nanos}>"
