"""The Python API: PyFlink's DataStream names, building a DataflowJob spec.

Defining a job imports neither Spark nor Kubernetes; only ``execute()`` loads the runtime.
"""

from dataflow_engine.api.common.execution_config import ExecutionConfig
from dataflow_engine.api.datastream.data_stream import DataStream, DataStreamSink, KeyedStream
from dataflow_engine.api.environment import DEFAULT_JOB_NAME, StreamExecutionEnvironment
from dataflow_engine.api.function_refs import (
    UnshippableFunctionError,
    function_reference,
    key_selector_reference,
)
from dataflow_engine.api.sinks import (
    CollectSink,
    DeliveryGuarantee,
    DiscardingSink,
    FileSink,
    KafkaSink,
    Sink,
)
from dataflow_engine.spec.model import RuntimeMode

#: PyFlink's name for the runtime mode enum.
RuntimeExecutionMode = RuntimeMode

__all__ = [
    "DEFAULT_JOB_NAME",
    "CollectSink",
    "DataStream",
    "DataStreamSink",
    "DeliveryGuarantee",
    "DiscardingSink",
    "ExecutionConfig",
    "FileSink",
    "KafkaSink",
    "KeyedStream",
    "RuntimeExecutionMode",
    "RuntimeMode",
    "Sink",
    "StreamExecutionEnvironment",
    "UnshippableFunctionError",
    "function_reference",
    "key_selector_reference",
]
