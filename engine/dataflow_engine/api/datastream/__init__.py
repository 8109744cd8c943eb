"""``pyflink.datastream`` for this engine: a PyFlink program imports these names from here."""

from dataflow_engine.api.datastream.data_stream import DataStream, DataStreamSink, KeyedStream
from dataflow_engine.api.datastream.functions import (
    AggregateFunction,
    FilterFunction,
    FlatMapFunction,
    KeyedProcessFunction,
    KeySelector,
    MapFunction,
    ReduceFunction,
    RuntimeContext,
    TimeDomain,
    TimerService,
)
from dataflow_engine.api.environment import StreamExecutionEnvironment
from dataflow_engine.spec import RuntimeMode as RuntimeExecutionMode

__all__ = ["AggregateFunction", "DataStream", "DataStreamSink", "FilterFunction",
           "FlatMapFunction", "KeySelector", "KeyedProcessFunction", "KeyedStream",
           "MapFunction", "ReduceFunction", "RuntimeContext", "RuntimeExecutionMode",
           "StreamExecutionEnvironment", "TimeDomain", "TimerService"]
