"""Page views per page and minute, and sessions per user: event-time windows written as a
PyFlink program would write them (replace ``dataflow_engine.api.`` by ``pyflink.`` in the
imports and it is one).

``dataflow run examples/page_views.py`` runs it; ``job().to_manifest("page-views")`` writes the
same job as a DataflowJob, since every function here is importable by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from dataflow_engine.api.common import Duration, Time, WatermarkStrategy
from dataflow_engine.api.common.watermark_strategy import TimestampAssigner
from dataflow_engine.api.datastream import (
    AggregateFunction,
    ProcessWindowFunction,
    RuntimeExecutionMode,
    StreamExecutionEnvironment,
)
from dataflow_engine.api.datastream.window import (
    EventTimeSessionWindows,
    TumblingEventTimeWindows,
)

#: (user, page, epoch milliseconds)
VIEWS = [("ann", "/home", 1_000), ("bob", "/home", 2_000), ("ann", "/docs", 20_000),
         ("ann", "/docs", 61_000), ("bob", "/docs", 59_000), ("cid", "/home", 125_000),
         ("bob", "/home", 130_000), ("ann", "/home", 40_000)]


class ViewTime(TimestampAssigner):
    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return int(value[2])


class CountViews(AggregateFunction):
    def create_accumulator(self) -> int:
        return 0

    def add(self, value: Any, accumulator: int) -> int:
        return accumulator + 1

    def get_result(self, accumulator: int) -> int:
        return accumulator

    def merge(self, acc_a: int, acc_b: int) -> int:
        return acc_a + acc_b


class PerMinute(ProcessWindowFunction):
    def process(self, key: Any, context: Any, elements: Iterable[int]) -> Iterator[Any]:
        for count in elements:
            yield "views", key, context.window().start // 60_000, count


class Session(ProcessWindowFunction):
    def process(self, key: Any, context: Any, elements: Iterable[Any]) -> Iterator[Any]:
        pages = [view[1] for view in sorted(elements, key=lambda view: view[2])]
        window = context.window()
        yield "session", key, (window.end - window.start) // 1000, pages


def page(view: Any) -> str:
    return str(view[1])


def user(view: Any) -> str:
    return str(view[0])


def job() -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    env.set_parallelism(2)
    views = env.from_collection(VIEWS).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(30))
        .with_timestamp_assigner(ViewTime()))
    (views.key_by(page)
        .window(TumblingEventTimeWindows.of(Time.minutes(1)))
        .aggregate(CountViews(), window_function=PerMinute())
        .print("views"))
    (views.key_by(user)
        .window(EventTimeSessionWindows.with_gap(Time.seconds(30)))
        .process(Session())
        .print("sessions"))
    return env


if __name__ == "__main__":
    job().execute("page-views")
