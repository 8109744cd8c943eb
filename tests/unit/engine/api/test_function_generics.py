"""PyFlink programs subscript the window and broadcast functions as generics, in base classes
and in annotations that Python evaluates when the class is defined (the shipped windowing
examples do both); here that works, and changes nothing the engine calls."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from dataflow_engine.api.datastream import (
    AllWindowFunction,
    BroadcastProcessFunction,
    KeyedBroadcastProcessFunction,
    ProcessAllWindowFunction,
    ProcessWindowFunction,
    WindowFunction,
)
from dataflow_engine.api.datastream.window import CountWindow, TimeWindow
from dataflow_engine.runtime.streamoperators.window_operator import WindowProcessContext

pytestmark = pytest.mark.unit


class CountWithWindow(ProcessWindowFunction[tuple, tuple, str, TimeWindow]):
    # Evaluated now, without `from __future__ import annotations` in a program's module.
    def process(self, key: str,
                context: ProcessWindowFunction.Context[TimeWindow],
                elements: Iterable[tuple]) -> Iterable[tuple]:
        window = context.window()
        return [(key, window.start, window.end, len(list(elements)))]


class SumPerCountWindow(WindowFunction[tuple, tuple, str, CountWindow]):
    def apply(self, key: str, window: CountWindow, inputs: Iterable[tuple]) -> Iterable[tuple]:
        return [(key, sum(value for _, value in inputs))]


def test_subscripted_window_functions_are_the_engines_function_classes() -> None:
    assert issubclass(CountWithWindow, ProcessWindowFunction)
    assert issubclass(SumPerCountWindow, WindowFunction)
    assert list(SumPerCountWindow().apply("hi", CountWindow(0), [("hi", 1), ("hi", 3)])) == [
        ("hi", 4)]
    for generic, parameters in ((ProcessAllWindowFunction, 3), (AllWindowFunction, 3),
                                (BroadcastProcessFunction, 3),
                                (KeyedBroadcastProcessFunction, 4)):
        assert len(generic.__parameters__) == parameters
        assert generic[(object,) * parameters] is not None


def test_the_runtimes_window_context_is_a_process_window_functions_context() -> None:
    assert ProcessWindowFunction.Context is ProcessAllWindowFunction.Context
    assert issubclass(WindowProcessContext, ProcessWindowFunction.Context)
    assert ProcessWindowFunction.Context[TimeWindow] is not None
    with pytest.raises(TypeError):
        ProcessWindowFunction.Context()  # abstract: only the runtime makes one


def test_a_window_functions_clear_and_open_are_the_defaults() -> None:
    function = CountWithWindow()
    assert function.clear(None) is None
    assert getattr(type(function).open, "is_default_hook", False)
