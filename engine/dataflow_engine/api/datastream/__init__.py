"""``pyflink.datastream`` for this engine: a PyFlink program imports these names from here."""

from dataflow_engine.api._unsupported import refused
from dataflow_engine.api.datastream.connectors import (
    DataGeneratorSource,
    FileSource,
    KafkaSource,
    RateLimiterStrategy,
)
from dataflow_engine.api.datastream.data_stream import (
    BroadcastConnectedStream,
    BroadcastStream,
    ConnectedStreams,
    DataStream,
    DataStreamSink,
    KeyedStream,
)
from dataflow_engine.api.datastream.functions import (
    AggregateFunction,
    AllWindowFunction,
    AsyncFunction,
    AsyncRetryPredicate,
    AsyncRetryStrategy,
    BroadcastProcessFunction,
    CoFlatMapFunction,
    CoGroupFunction,
    CoMapFunction,
    CoProcessFunction,
    FilterFunction,
    FlatMapFunction,
    JoinFunction,
    KeyedBroadcastProcessFunction,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    KeySelector,
    MapFunction,
    Partitioner,
    ProcessAllWindowFunction,
    ProcessFunction,
    ProcessJoinFunction,
    ProcessWindowFunction,
    ReduceFunction,
    RuntimeContext,
    SinkFunction,
    SourceFunction,
    TimeDomain,
    TimerService,
    WindowFunction,
)
from dataflow_engine.api.datastream.window import (
    CountWindow,
    GlobalWindow,
    MergingWindowAssigner,
    TimeWindow,
    Trigger,
    TriggerResult,
    Window,
    WindowAssigner,
)
from dataflow_engine.api.datastream.windowed_stream import AllWindowedStream, WindowedStream
from dataflow_engine.api.environment import CheckpointConfig, StreamExecutionEnvironment
from dataflow_engine.runtime.functions.output_tag import OutputTag
from dataflow_engine.spec.model import CheckpointingMode
from dataflow_engine.spec.model import RuntimeMode as RuntimeExecutionMode

AsyncDataStream = refused("pyflink.datastream.AsyncDataStream")
ExternalizedCheckpointRetention = refused("pyflink.datastream.ExternalizedCheckpointRetention")
StateBackend = refused("pyflink.datastream.StateBackend")
HashMapStateBackend = refused("pyflink.datastream.HashMapStateBackend")
EmbeddedRocksDBStateBackend = refused("pyflink.datastream.EmbeddedRocksDBStateBackend")
CustomStateBackend = refused("pyflink.datastream.CustomStateBackend")
PredefinedOptions = refused("pyflink.datastream.PredefinedOptions")
CheckpointStorage = refused("pyflink.datastream.CheckpointStorage")
JobManagerCheckpointStorage = refused("pyflink.datastream.JobManagerCheckpointStorage")
FileSystemCheckpointStorage = refused("pyflink.datastream.FileSystemCheckpointStorage")
CustomCheckpointStorage = refused("pyflink.datastream.CustomCheckpointStorage")
SlotSharingGroup = refused("pyflink.datastream.SlotSharingGroup")
MemorySize = refused("pyflink.datastream.MemorySize")

__all__ = [
    "AggregateFunction",
    "AllWindowFunction",
    "AllWindowedStream",
    "AsyncDataStream",
    "AsyncFunction",
    "AsyncRetryPredicate",
    "AsyncRetryStrategy",
    "BroadcastConnectedStream",
    "BroadcastProcessFunction",
    "BroadcastStream",
    "CheckpointConfig",
    "CheckpointStorage",
    "CheckpointingMode",
    "CoFlatMapFunction",
    "CoGroupFunction",
    "CoMapFunction",
    "CoProcessFunction",
    "ConnectedStreams",
    "CountWindow",
    "CustomCheckpointStorage",
    "CustomStateBackend",
    "DataGeneratorSource",
    "DataStream",
    "DataStreamSink",
    "EmbeddedRocksDBStateBackend",
    "ExternalizedCheckpointRetention",
    "FileSource",
    "FileSystemCheckpointStorage",
    "FilterFunction",
    "FlatMapFunction",
    "GlobalWindow",
    "HashMapStateBackend",
    "JobManagerCheckpointStorage",
    "JoinFunction",
    "KafkaSource",
    "KeySelector",
    "KeyedBroadcastProcessFunction",
    "KeyedCoProcessFunction",
    "KeyedProcessFunction",
    "KeyedStream",
    "MapFunction",
    "MemorySize",
    "MergingWindowAssigner",
    "OutputTag",
    "Partitioner",
    "PredefinedOptions",
    "ProcessAllWindowFunction",
    "ProcessFunction",
    "ProcessJoinFunction",
    "ProcessWindowFunction",
    "RateLimiterStrategy",
    "ReduceFunction",
    "RuntimeContext",
    "RuntimeExecutionMode",
    "SinkFunction",
    "SlotSharingGroup",
    "SourceFunction",
    "StateBackend",
    "StreamExecutionEnvironment",
    "TimeDomain",
    "TimeWindow",
    "TimerService",
    "Trigger",
    "TriggerResult",
    "Window",
    "WindowAssigner",
    "WindowFunction",
    "WindowedStream",
]
