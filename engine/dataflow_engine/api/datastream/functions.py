"""PyFlink's function base classes (``pyflink.datastream.functions``).

Subclassing them is optional: the engine calls methods by name, so any object with
``map``/``process_element``/... works. The base ``open``/``close`` do nothing and are marked
so the runtime does not count a function as rich (with set-up work of its own) because of them.
Kinds not supported yet (async functions, legacy sources and sinks, custom partitioners) are
refused on use.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

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

_F = TypeVar("_F", bound=Callable[..., Any])


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


class BroadcastProcessFunction(BaseBroadcastProcessFunction):
    """``process_element(value, ctx)`` (``ctx.get_broadcast_state(d)`` read-only) and
    ``process_broadcast_element(value, ctx)`` (may change it)."""

    def process_element(self, value: Any, ctx: Any) -> Iterable[Any] | None:
        raise NotImplementedError


class KeyedBroadcastProcessFunction(BroadcastProcessFunction):
    """Also keyed state and timers for input 1, ``ctx.apply_to_keyed_state(d, f)`` on the
    broadcast side, and ``on_timer``."""

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Any] | None:
        return None


class ProcessWindowFunction(Function):
    """``process(key, context, elements)``: ``context.window()``, ``current_watermark()``,
    ``window_state()``, ``global_state()``."""

    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
        raise NotImplementedError

    def clear(self, context: Any) -> None:
        """Called when the window is dropped: clear its window_state() here."""


class ProcessAllWindowFunction(Function):
    def process(self, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
        raise NotImplementedError

    def clear(self, context: Any) -> None:
        """Called when the window is dropped."""


class WindowFunction(Function):
    def apply(self, key: Any, window: Any, inputs: Iterable[Any]) -> Iterable[Any]:
        raise NotImplementedError


class AllWindowFunction(Function):
    def apply(self, window: Any, inputs: Iterable[Any]) -> Iterable[Any]:
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
