"""Importable window functions for the WindowOperator tests (operators load them by name)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from dataflow_engine.runtime.state.descriptors import ValueStateDescriptor


def sum_pairs(a: tuple[str, int], b: tuple[str, int]) -> tuple[str, int]:
    """A plain 2-argument ReduceFunction over ``(name, amount)`` records."""
    return a[0], a[1] + b[1]


def append_amount(a: list[Any], b: list[Any]) -> list[Any]:
    """A ReduceFunction that changes its first argument (allowed, as in Flink)."""
    a.append(b[1])
    return a


class SumValues:
    """PyFlink's ReduceFunction shape: a class with ``reduce(a, b)``."""

    def reduce(self, a: int, b: int) -> int:
        return a + b


class Average:
    """PyFlink's AggregateFunction: the mean, over ``(sum, count)`` accumulators."""

    def create_accumulator(self) -> tuple[int, int]:
        return 0, 0

    def add(self, value: int, accumulator: tuple[int, int]) -> tuple[int, int]:
        return accumulator[0] + value, accumulator[1] + 1

    def get_result(self, accumulator: tuple[int, int]) -> float:
        return accumulator[0] / accumulator[1]

    def merge(self, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
        return a[0] + b[0], a[1] + b[1]


class DescribeWindow:
    """A ProcessWindowFunction over all elements; counts firings per key in global state and
    remembers which windows were cleared."""

    def __init__(self) -> None:
        self.cleared: list[Any] = []

    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterator[Any]:
        fired = context.global_state().get_state(ValueStateDescriptor("fired"))
        count = (fired.value() or 0) + 1
        fired.update(count)
        window = context.window()
        yield key, window.start, window.end, list(elements), count

    def clear(self, context: Any) -> None:
        self.cleared.append(context.window())


class FiringsPerWindow:
    """A ProcessWindowFunction counting its firings of each window in per-window state."""

    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterator[Any]:
        firings = context.window_state().get_state(ValueStateDescriptor("firings"))
        count = (firings.value() or 0) + 1
        firings.update(count)
        yield key, context.window().start, sum(elements), count

    def clear(self, context: Any) -> None:
        context.window_state().get_state(ValueStateDescriptor("firings")).clear()


class WithWindowStart:
    """A ProcessWindowFunction applied to a reduce/aggregate result (PyFlink's
    ``reduce(f, window_function=...)``)."""

    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterator[Any]:
        for element in elements:
            yield key, context.window().start, element


class ListInputs:
    """PyFlink's WindowFunction: ``apply(key, window, inputs)``."""

    def apply(self, key: Any, window: Any, inputs: Iterable[Any]) -> list[Any]:
        return [(key, list(inputs))]
