"""PyFlink's function base classes (``pyflink.datastream.functions``).

Subclassing them is optional: the engine calls methods by name, so any object with
``map``/``process_element``/... works. The base ``open``/``close`` do nothing and are marked
so the runtime does not count a function as rich (with set-up work of its own) because of them.
Kinds not supported yet (async functions, legacy sources and sinks, custom partitioners) are
refused on use.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

from dataflow_engine.api._unsupported import refused
from dataflow_engine.runtime.functions.context import RuntimeContext
from dataflow_engine.runtime.functions.process_context import (
    KeyedProcessContext,
    ProcessContext,
    TimeDomain,
    TimerService,
)
from dataflow_engine.runtime.functions.process_context import (
    OnTimerContext as _OnTimerContext,
)
from dataflow_engine.runtime.streamoperators.window_operator import WindowProcessContext

_F = TypeVar("_F", bound=Callable[..., Any])
# PyFlink's window and broadcast functions are generic in these, and programs subscript them
# (``ProcessWindowFunction[tuple, tuple, str, TimeWindow]``); the engine reads no types from it.
IN = TypeVar("IN")
OUT = TypeVar("OUT")
KEY = TypeVar("KEY")
IN1 = TypeVar("IN1")
IN2 = TypeVar("IN2")
W = TypeVar("W")


def _default_hook(method: _F) -> _F:
    method.is_default_hook = True  # type: ignore[attr-defined]
    return method


class Function:
    @_default_hook
    def open(self, runtime_context: RuntimeContext) -> None:
        """Called once per subtask before the first record."""

    @_default_hook
    def close(self) -> None:
        """Called once per subtask after the last record."""


class MapFunction(Function):
    def map(self, value: Any) -> Any:
        raise NotImplementedError


class FlatMapFunction(Function):
    def flat_map(self, value: Any) -> Iterable[Any]:
        raise NotImplementedError


class FilterFunction(Function):
    def filter(self, value: Any) -> bool:
        raise NotImplementedError


class ReduceFunction(Function):
    def reduce(self, value1: Any, value2: Any) -> Any:
        raise NotImplementedError


class KeySelector(Function):
    def get_key(self, value: Any) -> Any:
        raise NotImplementedError


class AggregateFunction(Function):
    def create_accumulator(self) -> Any:
        raise NotImplementedError

    def add(self, value: Any, accumulator: Any) -> Any:
        raise NotImplementedError

    def get_result(self, accumulator: Any) -> Any:
        raise NotImplementedError

    def merge(self, acc_a: Any, acc_b: Any) -> Any:
        raise NotImplementedError


class ProcessFunction(Function):
    Context = ProcessContext

    def process_element(self, value: Any, ctx: ProcessContext) -> Iterable[Any] | None:
        raise NotImplementedError


class KeyedProcessFunction(Function):
    Context = KeyedProcessContext
    OnTimerContext = _OnTimerContext

    def process_element(self, value: Any, ctx: KeyedProcessContext) -> Iterable[Any] | None:
        raise NotImplementedError

    def on_timer(self, timestamp: int, ctx: _OnTimerContext) -> Iterable[Any] | None:
        """Called when a timer registered through ``ctx.timer_service()`` fires."""
        return None


class CoMapFunction(Function):
    def map1(self, value: Any) -> Any:
        raise NotImplementedError

    def map2(self, value: Any) -> Any:
        raise NotImplementedError


class CoFlatMapFunction(Function):
    def flat_map1(self, value: Any) -> Iterable[Any]:
        raise NotImplementedError

    def flat_map2(self, value: Any) -> Iterable[Any]:
        raise NotImplementedError


class CoProcessFunction(Function):
    Context = ProcessContext

    def process_element1(self, value: Any, ctx: ProcessContext) -> Iterable[Any] | None:
        raise NotImplementedError

    def process_element2(self, value: Any, ctx: ProcessContext) -> Iterable[Any] | None:
        raise NotImplementedError


class KeyedCoProcessFunction(Function):
    Context = KeyedProcessContext
    OnTimerContext = _OnTimerContext

    def process_element1(self, value: Any, ctx: KeyedProcessContext) -> Iterable[Any] | None:
        raise NotImplementedError

    def process_element2(self, value: Any, ctx: KeyedProcessContext) -> Iterable[Any] | None:
        raise NotImplementedError

    def on_timer(self, timestamp: int, ctx: _OnTimerContext) -> Iterable[Any] | None:
        return None


class JoinFunction(Function):
    def join(self, first: Any, second: Any) -> Any:
        raise NotImplementedError


class CoGroupFunction(Function):
    def co_group(self, first: Iterable[Any], second: Iterable[Any]) -> Iterable[Any]:
        raise NotImplementedError


class ProcessJoinFunction(Function):
    """``process_element(left, right, ctx)`` for each pair an interval join finds;
    ``ctx.get_left_timestamp()``, ``get_right_timestamp()``, ``get_timestamp()``."""

    def process_element(self, left: Any, right: Any, ctx: Any) -> Iterable[Any] | None:
        raise NotImplementedError


class BaseBroadcastProcessFunction(Function):
    """What the broadcast side of both broadcast process functions does:
    ``process_broadcast_element(value, ctx)``, which may change the broadcast state."""

    def process_broadcast_element(self, value: Any, ctx: Any) -> Iterable[Any] | None:
        raise NotImplementedError


class BroadcastProcessFunction(BaseBroadcastProcessFunction, Generic[IN1, IN2, OUT]):
    """``process_element(value, ctx)`` (``ctx.get_broadcast_state(d)`` read-only) and
    ``process_broadcast_element(value, ctx)`` (may change it)."""

    def process_element(self, value: Any, ctx: Any) -> Iterable[Any] | None:
        raise NotImplementedError


class KeyedBroadcastProcessFunction(BroadcastProcessFunction[IN1, IN2, OUT],
                                    Generic[KEY, IN1, IN2, OUT]):
    """Also keyed state and timers for input 1, ``ctx.apply_to_keyed_state(d, f)`` on the
    broadcast side, and ``on_timer``."""

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Any] | None:
        return None


class WindowContext(ABC, Generic[W]):
    """What a process window function's ``context`` offers (PyFlink's
    ``ProcessWindowFunction.Context``): the window, the times, and state per window and per
    key. The runtime's context is one (a virtual subclass)."""

    @abstractmethod
    def window(self) -> W: ...

    @abstractmethod
    def current_processing_time(self) -> int: ...

    @abstractmethod
    def current_watermark(self) -> int: ...

    @abstractmethod
    def window_state(self) -> Any: ...

    @abstractmethod
    def global_state(self) -> Any: ...

    @abstractmethod
    def output(self, output_tag: Any, value: Any) -> None: ...


WindowContext.register(WindowProcessContext)


class ProcessWindowFunction(Function, Generic[IN, OUT, KEY, W]):
    """``process(key, context, elements)``: ``context.window()``, ``current_watermark()``,
    ``window_state()``, ``global_state()``."""

    Context = WindowContext

    def process(self, key: KEY, context: WindowContext[W], elements: Iterable[IN]
                ) -> Iterable[OUT]:
        raise NotImplementedError

    def clear(self, context: WindowContext[W]) -> None:
        """Called when the window is dropped: clear its window_state() here."""


class ProcessAllWindowFunction(Function, Generic[IN, OUT, W]):
    Context = WindowContext

    def process(self, context: WindowContext[W], elements: Iterable[IN]) -> Iterable[OUT]:
        raise NotImplementedError

    def clear(self, context: WindowContext[W]) -> None:
        """Called when the window is dropped."""


class WindowFunction(Function, Generic[IN, OUT, KEY, W]):
    def apply(self, key: KEY, window: W, inputs: Iterable[IN]) -> Iterable[OUT]:
        raise NotImplementedError


class AllWindowFunction(Function, Generic[IN, OUT, W]):
    def apply(self, window: W, inputs: Iterable[IN]) -> Iterable[OUT]:
        raise NotImplementedError


Partitioner = refused("pyflink.datastream.functions.Partitioner")
SourceFunction = refused("pyflink.datastream.functions.SourceFunction")
SinkFunction = refused("pyflink.datastream.functions.SinkFunction")
AsyncFunction = refused("pyflink.datastream.functions.AsyncFunction")
AsyncFunctionDescriptor = refused("pyflink.datastream.functions.AsyncFunctionDescriptor")
AsyncRetryPredicate = refused("pyflink.datastream.functions.AsyncRetryPredicate")
AsyncRetryStrategy = refused("pyflink.datastream.functions.AsyncRetryStrategy")

__all__ = [
    "AggregateFunction",
    "AllWindowFunction",
    "AsyncFunction",
    "AsyncFunctionDescriptor",
    "AsyncRetryPredicate",
    "AsyncRetryStrategy",
    "BaseBroadcastProcessFunction",
    "BroadcastProcessFunction",
    "CoFlatMapFunction",
    "CoGroupFunction",
    "CoMapFunction",
    "CoProcessFunction",
    "FilterFunction",
    "FlatMapFunction",
    "Function",
    "JoinFunction",
    "KeySelector",
    "KeyedBroadcastProcessFunction",
    "KeyedCoProcessFunction",
    "KeyedProcessFunction",
    "MapFunction",
    "Partitioner",
    "ProcessAllWindowFunction",
    "ProcessFunction",
    "ProcessJoinFunction",
    "ProcessWindowFunction",
    "ReduceFunction",
    "RuntimeContext",
    "SinkFunction",
    "SourceFunction",
    "TimeDomain",
    "TimerService",
    "WindowFunction",
]
