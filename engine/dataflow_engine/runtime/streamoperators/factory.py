"""Which StreamOperator runs each operator type."""

from __future__ import annotations

from dataflow_engine.runtime.functions.context import TaskInfo
from dataflow_engine.runtime.streamoperators.broadcast import (
    BroadcastProcessOperator,
    KeyedBroadcastProcessOperator,
)
from dataflow_engine.runtime.streamoperators.co_operators import (
    CoProcessOperator,
    CoStreamFlatMap,
    CoStreamMap,
    KeyedCoProcessOperator,
)
from dataflow_engine.runtime.streamoperators.joins import IntervalJoinOperator
from dataflow_engine.runtime.streamoperators.kafka import KafkaSource
from dataflow_engine.runtime.streamoperators.kafka_sink import KafkaSinkOperator
from dataflow_engine.runtime.streamoperators.stream_operators import (
    CollectionSource,
    CollectSinkOperator,
    DatagenSource,
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
from dataflow_engine.runtime.streamoperators.timestamps import TimestampsAndWatermarksOperator
from dataflow_engine.runtime.streamoperators.window_operator import (
    AllWindowOperator,
    WindowJoinOperator,
    WindowOperator,
)
from dataflow_engine.runtime.tasks.descriptors import OperatorConfig, PayloadKind
from dataflow_engine.runtime.time.processing_time import TaskTime
from dataflow_engine.spec.model import OperatorType, RuntimeMode

_SIMPLE: dict[OperatorType, type[StreamOperator]] = {
    OperatorType.COLLECTION: CollectionSource,
    OperatorType.SEQUENCE: SequenceSource,
    OperatorType.TEXT: TextFileSource,
    OperatorType.DATAGEN: DatagenSource,
    OperatorType.KAFKA: KafkaSource,
    OperatorType.MAP: StreamMap,
    OperatorType.FLAT_MAP: StreamFlatMap,
    OperatorType.FILTER: StreamFilter,
    OperatorType.TIMESTAMPS: TimestampsAndWatermarksOperator,
    OperatorType.CO_MAP: CoStreamMap,
    OperatorType.CO_FLAT_MAP: CoStreamFlatMap,
    OperatorType.PRINT: PrintSinkOperator,
    OperatorType.FILE: FileSinkOperator,
    OperatorType.KAFKA_SINK: KafkaSinkOperator,
    OperatorType.COLLECT: CollectSinkOperator,
    OperatorType.DISCARD: DiscardingSinkOperator,
}
#: What ``process`` and ``co_process`` run without keyBy (Flink's ProcessOperator and
#: CoProcessOperator).
_UNKEYED: dict[OperatorType, type[StreamOperator]] = {
    OperatorType.PROCESS: ProcessOperator,
    OperatorType.CO_PROCESS: CoProcessOperator,
    OperatorType.BROADCAST_PROCESS: BroadcastProcessOperator,
}
#: Operators with keyed state (window_all's key is a constant; a ``process`` is one of them
#: after keyBy, see ``OperatorConfig.keyed``).
_STATEFUL: dict[OperatorType, type[_KeyedOperator]] = {
    OperatorType.SUM: StreamGroupedAggregation,
    OperatorType.MIN: StreamGroupedAggregation,
    OperatorType.MAX: StreamGroupedAggregation,
    OperatorType.REDUCE: StreamGroupedReduce,
    OperatorType.PROCESS: KeyedProcessOperator,
    OperatorType.CO_PROCESS: KeyedCoProcessOperator,
    OperatorType.INTERVAL_JOIN: IntervalJoinOperator,
    OperatorType.BROADCAST_PROCESS: KeyedBroadcastProcessOperator,
    OperatorType.WINDOW: WindowOperator,
    OperatorType.WINDOW_ALL: AllWindowOperator,
    OperatorType.WINDOW_JOIN: WindowJoinOperator,
}


def create_operator(config: OperatorConfig, task: TaskInfo, mode: RuntimeMode,
                    input_payload: PayloadKind, time: TaskTime) -> StreamOperator:
    """The operator, with the subtask's time services attached before it is set up."""
    stateful = _STATEFUL.get(config.operator_type)
    operator: StreamOperator
    if config.operator_type in _UNKEYED and not config.keyed:
        operator = _UNKEYED[config.operator_type](config, task)
    elif stateful is not None:
        operator = stateful(config, task, mode, input_payload)
    else:
        operator = _SIMPLE[config.operator_type](config, task)
    operator.time = time
    return operator
