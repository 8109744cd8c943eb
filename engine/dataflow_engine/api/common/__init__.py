"""``pyflink.common`` for this engine: a PyFlink program imports these names from here."""

from dataflow_engine.api._unsupported import refused
from dataflow_engine.api.common.execution_config import ExecutionConfig
from dataflow_engine.api.common.input_dependency_constraint import InputDependencyConstraint
from dataflow_engine.api.common.job_client import CompletableFuture, JobClient
from dataflow_engine.api.common.serialization import (
    ByteArraySchema,
    DeserializationSchema,
    Encoder,
    SerializationSchema,
    SimpleStringSchema,
)
from dataflow_engine.api.common.time import Duration, Instant, Time
from dataflow_engine.api.common.typeinfo import TypeInformation, Types
from dataflow_engine.api.common.types import Row, RowKind
from dataflow_engine.api.common.watermark_strategy import (
    AssignerWithPeriodicWatermarksWrapper,
    TimestampAssigner,
    WatermarkStrategy,
)
from dataflow_engine.graph.states import JobStatus
from dataflow_engine.runtime.jobmaster.config import JobExecutionResult, JobID
from dataflow_engine.runtime.time.elements import Watermark

Configuration = refused("pyflink.common.Configuration")
ConfigOption = refused("pyflink.common.ConfigOption")
ConfigOptions = refused("pyflink.common.ConfigOptions")
TypeSerializer = refused("pyflink.common.TypeSerializer")
RestartStrategies = refused("pyflink.common.RestartStrategies")
RestartStrategyConfiguration = refused("pyflink.common.RestartStrategyConfiguration")

__all__ = [
    "AssignerWithPeriodicWatermarksWrapper",
    "ByteArraySchema",
    "CompletableFuture",
    "ConfigOption",
    "ConfigOptions",
    "Configuration",
    "DeserializationSchema",
    "Duration",
    "Encoder",
    "ExecutionConfig",
    "InputDependencyConstraint",
    "Instant",
    "JobClient",
    "JobExecutionResult",
    "JobID",
    "JobStatus",
    "RestartStrategies",
    "RestartStrategyConfiguration",
    "Row",
    "RowKind",
    "SerializationSchema",
    "SimpleStringSchema",
    "Time",
    "TimestampAssigner",
    "TypeInformation",
    "TypeSerializer",
    "Types",
    "Watermark",
    "WatermarkStrategy",
]
