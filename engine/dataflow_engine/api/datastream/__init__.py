"""``pyflink.datastream`` for this engine: a PyFlink program imports these names from here."""

from dataflow_engine.api.datastream.data_stream import (
    ConnectedStreams,
    DataStream,
    DataStreamSink,
    KeyedStream,
)
from dataflow_engine.api.datastream.functions import (
    AggregateFunction,
    AllWindowFunction,
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    FilterFunction,
    FlatMapFunction,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    KeySelector,
    MapFunction,
    ProcessAllWindowFunction,
    ProcessFunction,
    ProcessWindowFunction,
    ReduceFunction,
    RuntimeContext,
    TimeDomain,
    TimerService,
    WindowFunction,
)
from dataflow_engine.api.datastream.windowed_stream import AllWindowedStream, WindowedStream
from dataflow_engine.api.environment import StreamExecutionEnvironment
from dataflow_engine.runtime.functions.output_tag import OutputTag
from dataflow_engine.spec import RuntimeMode as RuntimeExecutionMode

__all__ = [
    "AggregateFunction",
    "AllWindowFunction",
    "AllWindowedStream",
    "CoFlatMapFunction",
    "CoMapFunction",
    "CoProcessFunction",
    "ConnectedStreams",
    "DataStream",
    "DataStreamSink",
    "FilterFunction",
    "FlatMapFunction",
    "KeySelector",
    "KeyedCoProcessFunction",
    "KeyedProcessFunction",
    "KeyedStream",
    "MapFunction",
    "OutputTag",
    "ProcessAllWindowFunction",
    "ProcessFunction",
    "ProcessWindowFunction",
    "ReduceFunction",
    "RuntimeContext",
    "RuntimeExecutionMode",
    "StreamExecutionEnvironment",
    "TimeDomain",
    "TimerService",
    "WindowFunction",
    "WindowedStream",
]
