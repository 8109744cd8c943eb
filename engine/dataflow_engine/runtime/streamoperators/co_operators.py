"""Flink's two-input operators (``connect``): CoStreamMap, CoStreamFlatMap, CoProcessOperator
and KeyedCoProcessOperator.

A two-input head receives ``(input, record)`` with input 1 or 2 (its StreamTask merges the two
inputs, as Flink's StreamTwoInputProcessor does); the function's ``...1``/``...2`` method runs
for each. Watermarks arrive already combined (the minimum of both inputs).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dataflow_engine.runtime.functions.process_context import NonKeyedTimerService, ProcessContext
from dataflow_engine.runtime.streamoperators.stream_operators import (
    AbstractUdfStreamOperator,
    KeyedProcessOperator,
    results_emitter,
)
from dataflow_engine.runtime.tasks.failures import OperatorFailure
from dataflow_engine.runtime.tasks.outputs import Collect, CollectAll, Output, input_copier


def _second_method(operator: AbstractUdfStreamOperator, name: str) -> Callable[..., Any]:
    method = getattr(operator.udf.instance, name, None)
    if not callable(method):
        raise operator.failure(TypeError(
            f"{operator.config.function} has no method {name!r}: a two-input function defines "
            f"one method per input ({operator.METHOD} and {name})"))
    return method  # type: ignore[no-any-return]


def two_input_processor(operator: AbstractUdfStreamOperator, first: Callable[..., Any],
                        second: Callable[..., Any], emit: Callable[[Any], None],
                        context1: tuple[Any, ...] = (), context2: tuple[Any, ...] = (),
                        emits_none: bool = False) -> Collect:
    """``process_element`` of a two-input operator: ``(input, value)`` goes to ``first`` or
    ``second`` (with the input's context arguments) and the result to ``emit`` (a None result
    only when ``emits_none``: a map's result is a record, a process function's an iterable)."""
    counter, failure = operator.records_in, operator.failure
    copying, atomic, copy = input_copier(operator.copy_input)

    def process_element(item: Any) -> None:
        counter.count += 1
        number, value = item
        if copying and type(value) not in atomic:
            value = copy(value)
        try:
            result = first(value, *context1) if number == 1 else second(value, *context2)
            if result is not None or emits_none:
                emit(result)
        except OperatorFailure:
            raise
        except Exception as error:
            raise failure(error) from error

    return process_element


class _TwoInputUdfOperator(AbstractUdfStreamOperator):
    SECOND: str = ""

    def setup(self, output: Output) -> None:
        super().setup(output)
        self.second = _second_method(self, self.SECOND)


class CoStreamMap(_TwoInputUdfOperator):
    METHOD, SECOND = "map1", "map2"

    def create_processor(self, collect: Collect, collect_all: CollectAll) -> Collect:
        return two_input_processor(self, self.udf.call, self.second, collect, emits_none=True)


class CoStreamFlatMap(_TwoInputUdfOperator):
    METHOD, SECOND = "flat_map1", "flat_map2"

    def create_processor(self, collect: Collect, collect_all: CollectAll) -> Collect:
        return two_input_processor(self, self.udf.call, self.second, collect_all)


class CoProcessOperator(_TwoInputUdfOperator):
    """PyFlink's CoProcessFunction on connected non-keyed streams."""

    METHOD, SECOND = "process_element1", "process_element2"

    def create_processor(self, collect: Collect, collect_all: CollectAll) -> Collect:
        service = self.time.processing_time
        ctx = ProcessContext(self.time.timestamp, NonKeyedTimerService(
            service.get_current_processing_time, lambda: self.current_watermark))
        return two_input_processor(self, self.udf.call, self.second,
                                   results_emitter(collect, self.emit_side_output),
                                   (ctx,), (ctx,))


class KeyedCoProcessOperator(KeyedProcessOperator):
    """PyFlink's KeyedCoProcessFunction on connected keyed streams: keyed state and timers
    shared by both inputs of a key, ``on_timer`` as in a KeyedProcessFunction."""

    METHOD = "process_element1"

    def setup(self, output: Output) -> None:
        super().setup(output)
        self.second = _second_method(self, "process_element2")

    def create_processor(self, collect: Collect, collect_all: CollectAll) -> Collect:
        first, second, counter, failure = self.udf.call, self.second, self.records_in, self.failure
        ctx, backend = self.context, self.backend
        emit = self.emit_results = results_emitter(collect, self.emit_side_output)

        def process_element(item: Any) -> None:
            counter.count += 1
            number, (key, value) = item
            ctx.current_key = backend.current_key = key
            try:
                result = first(value, ctx) if number == 1 else second(value, ctx)
                if result is not None:
                    emit(result)
            except OperatorFailure:
                raise
            except Exception as error:
                raise failure(error) from error

        return process_element
