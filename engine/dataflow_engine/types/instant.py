"""Java's ``Instant`` as PyFlink has it: what ``Types.INSTANT`` values are."""

from __future__ import annotations

from dataclasses import dataclass


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
