"""Importable top-level functions for the API tests (the API ships functions by name)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from dataflow_engine.api.common import Row, Watermark


def double(value: int) -> int:
    return value * 2


def explode(value: str) -> Iterator[str]:
    yield from value


def positive(value: int) -> bool:
    return value > 0


def first_letter(value: str) -> str:
    return value[:1]


def keep_latest(a: Any, b: Any) -> Any:
    return b


class Tokenizer:
    """A class is as importable as a function."""

    def __call__(self, value: str) -> list[str]:
        return value.split()

    def method(self, value: str) -> list[str]:
        return value.split()


class Splitter:
    """An instance with state of its own travels by value."""

    def __init__(self, separator: str) -> None:
        self.separator = separator

    def __call__(self, value: str) -> list[str]:
        return value.split(self.separator)


def make_closure() -> Any:
    def inner(value: int) -> int:
        return value

    return inner


def event_time_of(value: Any, record_timestamp: int) -> int:
    """A TimestampAssigner as a function of (value, record_timestamp)."""
    return int(value[1])


class EveryRecordWatermark:
    """A punctuated WatermarkGenerator."""

    def on_event(self, event: Any, event_timestamp: int, output: Any) -> None:
        output.emit_watermark(Watermark(event_timestamp))

    def on_periodic_emit(self, output: Any) -> None:
        pass


def add_pairs(a: Any, b: Any) -> Any:
    return (a[0], a[1] + b[1])


class Contents:
    """A ProcessWindowFunction."""

    def process(self, key: Any, context: Any, elements: Any) -> Any:
        yield key, list(elements)


class Both:
    """A CoMapFunction."""

    def map1(self, value: Any) -> Any:
        return value

    def map2(self, value: Any) -> Any:
        return value


class PairJoin:
    """A JoinFunction and a ProcessJoinFunction."""

    def join(self, first: Any, second: Any) -> Any:
        return first, second

    def process_element(self, left: Any, right: Any, ctx: Any) -> Any:
        yield left, right


class WatermarkSeen:
    """A KeyedProcessFunction: ``(key, ctx.timestamp(), current watermark)`` per record."""

    def process_element(self, value: Any, ctx: Any) -> Any:
        yield ctx.get_current_key(), ctx.timestamp(), ctx.timer_service().current_watermark()


def indexed_event(index: int) -> tuple[int, int]:
    """A datagen GeneratorFunction: ``(key, event time)`` of record ``index``."""
    return index % 3, index * 10


def as_row(value: Any) -> Row:
    """A Row of the record's fields (what a map with a ROW output type returns)."""
    return Row(*value)


def nest(value: Any) -> tuple[Any, Row]:
    """A tuple holding a Row: Java prints the row inside with its own toString."""
    return value[0], Row(x=value[1])


def noisy(value: Any) -> Any:
    """Prints what it maps (user code printing, as PyFlink programs do)."""
    print("saw", value)
    return value


class FailsOnB:
    """A KeyedProcessFunction that emits each value, and raises on key ``"b"``."""

    def process_element(self, value: Any, ctx: Any) -> Any:
        if ctx.get_current_key() == "b":
            raise ValueError("no b")
        yield value
