"""In BATCH mode a processing-time timer fires when the subtask's input ends, as every timer
does there, not when the wall clock passes it in the middle of the input."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from graph_specs import compiled, op

from dataflow_engine.api.datastream.functions import KeyedProcessFunction, RuntimeContext
from dataflow_engine.api.datastream.state import ValueStateDescriptor
from dataflow_engine.runtime.spark.spark_plan import plan_job
from dataflow_engine.runtime.taskmanager.stream_task import StreamTask
from dataflow_engine.runtime.tasks.frames import decode_batch

pytestmark = pytest.mark.unit

RECORDS = 1000


class CountUntilDue(KeyedProcessFunction):
    """Counts its key's records; a timer due at once when the first arrives yields the count."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element(self, value: Any, ctx: Any) -> None:
        count = self.count.value() or 0
        if count == 0:
            service = ctx.timer_service()
            service.register_processing_time_timer(service.current_processing_time())
        self.count.update(count + 1)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[Any]:
        yield ctx.get_current_key(), self.count.value()


@pytest.mark.parametrize(("mode", "counts"), [
    ("BATCH", [RECORDS]),
    # In STREAMING the timer is due as soon as it is registered: it fires long before the end.
    ("STREAMING", None)])
def test_a_processing_time_timer_of_a_batch_job_fires_at_the_end_of_its_input(
        mode: str, counts: list[int] | None) -> None:
    plan = plan_job(compiled(
        {"name": "src", "type": "collection", "args": {"elements": [["a", 1]]}},
        op("count", "process", {"from": "src", "keyBy": 0}, function=f"{__name__}:CountUntilDue"),
        op("out", "collect", "count"), runtimeMode=mode))
    consumer = next(v.descriptor for v in plan.vertices.values()
                    if v.vertex.head.name == "count")
    task = StreamTask(consumer, 0, 0)
    frames = list(task.invoke([[("a", ("a", index)) for index in range(RECORDS)]]))
    fired = [count for data in frames[1::2] for _, count in decode_batch(data)]
    if counts is not None:
        assert fired == counts
    else:
        assert len(fired) == 1 and fired[0] < RECORDS
