"""The Spark runtime: runs a compiled plan with Flink's task semantics (see ``docs/runtime.md``).

Importing this package does not import pyspark; :func:`run_job` does.
"""

from dataflow_engine.runtime.functions.context import RuntimeContext
from dataflow_engine.runtime.functions.process_context import KeyedProcessContext
from dataflow_engine.runtime.jobmaster.config import (
    JobExecutionError,
    JobExecutionResult,
    RunnerConfig,
)
from dataflow_engine.runtime.jobmaster.runner import run_job

__all__ = [
    "JobExecutionError",
    "JobExecutionResult",
    "KeyedProcessContext",
    "RunnerConfig",
    "RuntimeContext",
    "run_job",
]
