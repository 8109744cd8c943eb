"""PyFlink's ``pyflink.datastream.connectors.number_seq``: NumberSequenceSource, the spec's
``sequence`` operator (what ``env.from_sequence`` builds)."""

from __future__ import annotations

from typing import Any

from dataflow_engine.api.datastream.connectors.base import Source


def check_sequence(start: int, end: int, where: str) -> None:
    """Raises unless ``start`` and ``end`` are ints with ``start <= end``."""
    for what, value in (("start", start), ("end", end)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{where}: {what} must be an int, not {value!r}")
    if end < start:
        raise ValueError(f"{where}: end {end} is less than start {start}")


class NumberSequenceSource(Source):
    """The numbers from ``start`` to ``end``, both inclusive, split across subtasks."""

    def __init__(self, start: int, end: int) -> None:
        check_sequence(start, end, "NumberSequenceSource")
        self.start = start
        self.end = end

    def spec_args(self) -> dict[str, Any]:
        return {"from": self.start, "to": self.end}
