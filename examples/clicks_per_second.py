"""A continuous job: generated clicks counted per page in one-second event-time windows,
checkpointed, written by a file sink that publishes each window once.

Run it with ``dataflow run examples/clicks_per_second.py`` (it generates 20,000 clicks at
4,000 per second, in epochs of one second, then ends). Kill it part-way and run it again: it
resumes from its last checkpoint in ``/tmp/clicks/checkpoints``, and ``/tmp/clicks/out``
ends up with every window exactly once. Without ``count`` the source is unbounded and the job
runs until it is stopped.
"""

from __future__ import annotations

from typing import Any

from dataflow_engine.api.common import Duration, Time, WatermarkStrategy
from dataflow_engine.api.datastream import (
    DataGeneratorSource,
    RateLimiterStrategy,
    RuntimeExecutionMode,
    StreamExecutionEnvironment,
)
from dataflow_engine.api.datastream.window import TumblingEventTimeWindows
from dataflow_engine.api.sinks import FileSink

PAGES = ("home", "search", "cart", "checkout")


def click(index: int) -> tuple[str, int, int]:
    """GeneratorFunction: click ``index`` is ``(page, event time in ms, 1)``, 4 per ms."""
    return PAGES[index * 7 % len(PAGES)], index // 4, 1


def add_clicks(a: Any, b: Any) -> Any:
    return a[0], max(a[1], b[1]), a[2] + b[2]


def job() -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    env.set_parallelism(2)
    env.enable_checkpointing(2000).get_checkpoint_config().set_checkpoint_storage_dir(
        "/tmp/clicks/checkpoints")
    strategy = (WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(200))
                .with_timestamp_assigner(lambda event, _: event[1]))
    clicks = DataGeneratorSource(click, 20_000, RateLimiterStrategy.per_second(4000))
    (env.from_source(clicks, strategy, "clicks")
        .key_by(lambda event: event[0])
        .window(TumblingEventTimeWindows.of(Time.seconds(1)))
        .reduce(add_clicks)
        .sink_to(FileSink("/tmp/clicks/out", "json")))
    return env


if __name__ == "__main__":
    job().execute("clicks-per-second")
