"""Which RecordWriter an output gets: what travels on it decides (see ``PayloadKind``)."""

from __future__ import annotations

from dataflow_engine.runtime.functions.context import TaskInfo
from dataflow_engine.runtime.tasks.columnar_writer import ColumnarRecordWriter, writes_columns
from dataflow_engine.runtime.tasks.descriptors import OutputConfig, PayloadKind
from dataflow_engine.runtime.tasks.record_writer import CombiningRecordWriter, RecordWriter
from dataflow_engine.runtime.tasks.window_combiner import WindowCombiningRecordWriter
from dataflow_engine.runtime.time.elements import ElementTimestamp


def create_record_writer(config: OutputConfig, task: TaskInfo, pending: list[bytes],
                         batch_size: int, timestamp: ElementTimestamp) -> RecordWriter:
    if config.payload is PayloadKind.PARTIAL:
        return CombiningRecordWriter(config, task, pending, batch_size)
    if config.payload is PayloadKind.WINDOW_PARTIAL:
        return WindowCombiningRecordWriter(config, task, pending, batch_size, timestamp)
    if writes_columns(config):
        return ColumnarRecordWriter(config, task, pending, batch_size, timestamp)
    return RecordWriter(config, task, pending, batch_size, timestamp)
