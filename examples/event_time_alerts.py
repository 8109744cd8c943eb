"""Event time, keyed state and an event-time timer, written as a PyFlink program would be.

Each sensor's readings are summed from its first reading for one second of event time; an
event-time timer then emits ``(sensor, total)``. Readings arrive out of order by up to 5 s.
Run it with ``dataflow run examples/event_time_alerts.py``. With ``pyflink.`` in place of
``dataflow_engine.api.`` in the imports, it is a PyFlink program.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from dataflow_engine.api.common import Duration, Types, WatermarkStrategy
from dataflow_engine.api.datastream import (
    KeyedProcessFunction,
    RuntimeContext,
    RuntimeExecutionMode,
    StreamExecutionEnvironment,
)
from dataflow_engine.api.datastream.state import ValueStateDescriptor

#: (sensor, event time in ms, reading)
READINGS = [("s1", 1000, 3), ("s2", 1200, 1), ("s1", 1500, 4), ("s1", 900, 2),
            ("s2", 2100, 5), ("s1", 2500, 7), ("s2", 2300, 6)]


class Alert(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext) -> None:
        self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.LONG()))

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> None:
        if self.total.value() is None:
            ctx.timer_service().register_event_time_timer(ctx.timestamp() + 1000)
        self.total.update((self.total.value() or 0) + value[2])

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext
                 ) -> Iterator[Any]:
        yield ctx.get_current_key(), self.total.value()
        self.total.clear()


def job() -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    env.set_parallelism(2)
    strategy = (WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5))
                .with_timestamp_assigner(lambda event, _: event[1]))
    (env.from_collection(READINGS)
        .assign_timestamps_and_watermarks(strategy)
        .key_by(lambda event: event[0])
        .process(Alert())
        .print())
    return env


if __name__ == "__main__":
    job().execute("event-time-alerts")
