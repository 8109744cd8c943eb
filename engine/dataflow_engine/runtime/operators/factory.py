"""Which StreamOperator runs each operator type."""

from __future__ import annotations

from dataflow_engine.runtime.functions.context import TaskInfo
from dataflow_engine.runtime.operators.stream_operators import (
    CollectionSource,
    CollectSinkOperator,
    DiscardingSinkOperator,
    FileSinkOperator,
    KeyedProcessOperator,
    PrintSinkOperator,
    ProcessOperator,
    SequenceSource,
    StreamFilter,
    StreamFlatMap,
    StreamGroupedAggregation,
    StreamGroupedReduce,
    StreamMap,
    StreamOperator,
    TextFileSource,
    _KeyedOperator,
)
from dataflow_engine.runtime.operators.timestamps import TimestampsAndWatermarksOperator
from dataflow_engine.runtime.operators.window_operator import AllWindowOperator, WindowOperator
from dataflow_engine.runtime.tasks.descriptors import OperatorConfig, PayloadKind
from dataflow_engine.runtime.time.processing_time import TaskTime
from dataflow_engine.spec import OperatorType, RuntimeMode

_SIMPLE: dict[OperatorType, type[StreamOperator]] = {
    OperatorType.COLLECTION: CollectionSource,
    OperatorType.SEQUENCE: SequenceSource,
    OperatorType.TEXT: TextFileSource,
    OperatorType.MAP: StreamMap,
    OperatorType.FLAT_MAP: StreamFlatMap,
    OperatorType.FILTER: StreamFilter,
    OperatorType.TIMESTAMPS: TimestampsAndWatermarksOperator,
    OperatorType.PROCESS: ProcessOperator,
    OperatorType.PRINT: PrintSinkOperator,
    OperatorType.FILE: FileSinkOperator,
    OperatorType.COLLECT: CollectSinkOperator,
    OperatorType.DISCARD: DiscardingSinkOperator,
}
#: Operators of keyed streams (the OperatorConfig says whether a ``process`` is keyed).
_KEYED: dict[OperatorType, type[_KeyedOperator]] = {
    OperatorType.SUM: StreamGroupedAggregation,
    OperatorType.MIN: StreamGroupedAggregation,
    OperatorType.MAX: StreamGroupedAggregation,
    OperatorType.REDUCE: StreamGroupedReduce,
    OperatorType.PROCESS: KeyedProcessOperator,
    OperatorType.WINDOW: WindowOperator,
    OperatorType.WINDOW_ALL: AllWindowOperator,
}


def create_operator(config: OperatorConfig, task: TaskInfo, mode: RuntimeMode,
                    input_payload: PayloadKind, time: TaskTime) -> StreamOperator:
    """The operator, with the subtask's time services attached before it is set up."""
    keyed = _KEYED.get(config.operator_type) if config.keyed else None
    operator = (keyed(config, task, mode, input_payload) if keyed is not None
                else _SIMPLE[config.operator_type](config, task))
    operator.time = time
    return operator
