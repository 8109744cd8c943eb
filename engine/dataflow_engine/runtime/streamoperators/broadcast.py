"""Flink's CoBroadcastWithNonKeyedOperator and CoBroadcastWithKeyedOperator: a stream
connected to a broadcast stream, running PyFlink's (Keyed)BroadcastProcessFunction.

Input 1 calls ``process_element(value, ctx)``, where ``ctx.get_broadcast_state(descriptor)``
is read-only; input 2 (every subtask gets every broadcast element) calls
``process_broadcast_element(value, ctx)``, which may change it and, when keyed,
``ctx.apply_to_keyed_state(descriptor, function)`` over every key of this subtask.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from dataflow_engine.runtime.checkpoint.snapshots import OperatorSnapshot, RestoredState
from dataflow_engine.runtime.functions.process_context import (
    KeyedProcessContext,
    NonKeyedTimerService,
    OnTimerContext,
    ProcessContext,
    TimerService,
)
from dataflow_engine.runtime.state.backend import HeapKeyedStateBackend
from dataflow_engine.runtime.state.broadcast_state import BroadcastState, BroadcastStateStore
from dataflow_engine.runtime.streamoperators.co_operators import _second_method, two_input_processor
from dataflow_engine.runtime.streamoperators.stream_operators import (
    AbstractUdfStreamOperator,
    KeyedProcessOperator,
    results_emitter,
)
from dataflow_engine.runtime.tasks.failures import OperatorFailure
from dataflow_engine.runtime.tasks.outputs import Collect, CollectAll, Output
from dataflow_engine.runtime.time.elements import ElementTimestamp


class ReadOnlyContext(ProcessContext):
    """``BroadcastProcessFunction.ReadOnlyContext``."""

    __slots__ = ("store",)

    def __init__(self, cell: ElementTimestamp, timer_service: NonKeyedTimerService,
                 store: BroadcastStateStore) -> None:
        super().__init__(cell, timer_service)
        self.store = store

    def get_broadcast_state(self, state_descriptor: Any) -> BroadcastState:
        return self.store.read_only(state_descriptor)


class BroadcastContext(ReadOnlyContext):
    """``BroadcastProcessFunction.Context``: the broadcast side may change the state."""

    __slots__ = ()

    def get_broadcast_state(self, state_descriptor: Any) -> BroadcastState:
        return self.store.writable(state_descriptor)


class KeyedBroadcastContext(BroadcastContext):
    """``KeyedBroadcastProcessFunction.Context`` of the broadcast side: writable broadcast
    state, and every key's state of this subtask (there is no current key)."""

    __slots__ = ("backend",)

    def __init__(self, cell: ElementTimestamp, timer_service: NonKeyedTimerService,
                 store: BroadcastStateStore, backend: HeapKeyedStateBackend) -> None:
        super().__init__(cell, timer_service, store)
        self.backend = backend

    def apply_to_keyed_state(self, state_descriptor: Any,
                             function: Callable[[Any, Any], None]) -> None:
        self.backend.apply_to_all_keys(state_descriptor, function)


class KeyedReadOnlyContext(KeyedProcessContext):
    """``KeyedBroadcastProcessFunction.ReadOnlyContext``: the key, timers, and the broadcast
    state to read."""

    __slots__ = ("store",)

    def __init__(self, cell: ElementTimestamp, timer_service: TimerService,
                 store: BroadcastStateStore) -> None:
        super().__init__(cell, timer_service)
        self.store = store

    def get_broadcast_state(self, state_descriptor: Any) -> BroadcastState:
        return self.store.read_only(state_descriptor)


class KeyedOnTimerContext(OnTimerContext):
    __slots__ = ("store",)

    def __init__(self, cell: ElementTimestamp, timer_service: TimerService,
                 store: BroadcastStateStore) -> None:
        super().__init__(cell, timer_service)
        self.store = store

    def get_broadcast_state(self, state_descriptor: Any) -> BroadcastState:
        return self.store.read_only(state_descriptor)


class BroadcastProcessOperator(AbstractUdfStreamOperator):
    METHOD = "process_element"

    def setup(self, output: Output) -> None:
        super().setup(output)
        self.second = _second_method(self, "process_broadcast_element")
        self.store = BroadcastStateStore(self.config.args["broadcastStates"])

    def create_processor(self, collect: Collect, collect_all: CollectAll) -> Collect:
        service = self.time.processing_time
        timer_service = NonKeyedTimerService(service.get_current_processing_time,
                                             lambda: self.current_watermark)
        reading = ReadOnlyContext(self.time.timestamp, timer_service, self.store)
        writing = BroadcastContext(self.time.timestamp, timer_service, self.store)
        return two_input_processor(self, self.udf.call, self.second,
                                   results_emitter(collect, self.emit_side_output),
                                   (reading,), (writing,))

    def initialize_state(self, state: RestoredState) -> None:
        super().initialize_state(state)
        restore_broadcast_state(self.store, state)

    def snapshot_state(self) -> OperatorSnapshot:
        return dataclasses.replace(super().snapshot_state(), operator=self.store.snapshot())


def restore_broadcast_state(store: BroadcastStateStore, state: RestoredState) -> None:
    """Every subtask holds the same broadcast state; a rescaled subtask ``i`` takes old
    subtask ``i % old parallelism``'s copy, as Flink does."""
    if state.operator:
        copy = state.operator[state.subtask_index % len(state.operator)]
        if copy is not None:
            store.restore(copy)


class KeyedBroadcastProcessOperator(KeyedProcessOperator):
    """Input 1 keyed (``(key, value)``), input 2 the broadcast stream (plain records)."""

    def setup(self, output: Output) -> None:
        super().setup(output)
        self.second = _second_method(self, "process_broadcast_element")
        self.store = BroadcastStateStore(self.config.args["broadcastStates"])
        timer_service = self.context.timer_service()
        self.context = KeyedReadOnlyContext(self.time.timestamp, timer_service, self.store)
        self.timer_context = KeyedOnTimerContext(self.time.timestamp, timer_service, self.store)
        self.broadcast_context = KeyedBroadcastContext(
            self.time.timestamp, NonKeyedTimerService(
                self.time.processing_time.get_current_processing_time,
                lambda: self.timers.current_watermark), self.store, self.backend)

    def create_processor(self, collect: Collect, collect_all: CollectAll) -> Collect:
        first, second, counter, failure = self.udf.call, self.second, self.records_in, self.failure
        ctx, broadcast_ctx = self.context, self.broadcast_context
        backend: HeapKeyedStateBackend = self.backend
        emit = self.emit_results = results_emitter(collect, self.emit_side_output)

        def process_element(item: Any) -> None:
            counter.count += 1
            number, payload = item
            try:
                if number == 1:
                    key, value = payload
                    ctx.current_key = backend.current_key = key
                    result = first(value, ctx)
                else:
                    result = second(payload, broadcast_ctx)
                if result is not None:
                    emit(result)
            except OperatorFailure:
                raise
            except Exception as error:
                raise failure(error) from error

        return process_element

    def initialize_state(self, state: RestoredState) -> None:
        super().initialize_state(state)
        restore_broadcast_state(self.store, state)

    def snapshot_state(self) -> OperatorSnapshot:
        return dataclasses.replace(super().snapshot_state(), operator=self.store.snapshot())
