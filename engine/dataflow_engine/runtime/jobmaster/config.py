"""Runner configuration and result."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dataflow_engine.graph.states import JobStatus
from dataflow_engine.rest.status import DriverStatusDocument, VertexInfo
from dataflow_engine.runtime.checkpoint.savepoints import SavepointRequests
from dataflow_engine.runtime.tasks.failures import TaskFailure

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass
class RunnerConfig:
    #: Any Spark master: ``local[*]``, ``spark://…``, ``k8s://…``.
    master: str = "local[*]"
    spark_conf: dict[str, str] = field(default_factory=dict)
    #: Spark settings in a file (``spark-defaults.conf``'s format), read by Spark's launcher
    #: as spark-submit's ``--properties-file``: the operator's, whose keys the runner's own
    #: defaults do not override. None: ``$SPARK_CONF_DIR/spark-defaults.conf``, as Spark reads.
    properties_file: Path | None = None
    #: Serve the status document on this port (0: a free port); None: no HTTP server.
    status_port: int | None = None
    #: Where it listens: loopback unless the driver runs in a pod (its POST actions, such as
    #: savepoints, are for whoever reaches the port).
    status_host: str = "127.0.0.1"
    #: What the status server's POST actions require in their X-Dataflow-Token header
    #: (None: nothing; ``dataflow run`` takes it from DATAFLOW_STATUS_TOKEN).
    status_token: str | None = None
    #: Also write the status document here (replaced atomically on each update).
    status_file: Path | None = None
    #: Show progress on stderr: a live display (when stderr is a terminal) and a summary table.
    progress: bool = False
    #: Force the live display on or off (None: only on a terminal); the summary is always shown.
    progress_live: bool | None = None
    #: Reuse this session (and leave it running) instead of creating one.
    spark_session: SparkSession | None = None
    app_name: str | None = None
    log_level: str = "WARN"
    #: Keep serving the final status document this long after the job ends (seconds).
    status_linger: float = 0.0
    #: Seconds between status polls.
    poll_interval: float = 0.5
    #: Relay print-sink output to the driver's stdout; None: only with a local master.
    relay_print: bool | None = None
    #: .py/.zip/.egg files (or directories of them) and https URLs added with Spark's
    #: addPyFile before the job starts: the user code of the job's functions.
    py_files: list[str] = field(default_factory=list)
    #: Set it to cancel the job (it ends CANCELED): a continuous job at the next epoch
    #: boundary, a run to the end of its input by cancelling its Spark jobs.
    stop: threading.Event = field(default_factory=threading.Event)
    #: The job's id (32 hex digits, as Flink's JobID prints); None: a new random one.
    job_id: str | None = None
    #: Called with every status document the run publishes (from the run's threads).
    status_listener: Callable[[DriverStatusDocument], None] | None = None
    #: Where a continuous job starts: ``latest`` (the newest checkpoint in its storage, if
    #: any), ``none`` (from scratch), or a checkpoint or savepoint directory.
    restore: str = "latest"
    #: Restore even if the checkpoint has state of operators the job no longer has (Flink's
    #: ``--allowNonRestoredState``): that state is dropped.
    allow_non_restored_state: bool = False
    #: An id for this deployment of the job, stamped on its checkpoints: a driver restarted
    #: with the same id resumes from its own newest checkpoint instead of ``restore``.
    deployment: str = ""
    #: Savepoints asked for while the job runs (the status server's ``POST /savepoints``).
    savepoints: SavepointRequests = field(default_factory=SavepointRequests)


class JobExecutionError(RuntimeError):
    def __init__(self, result: JobExecutionResult) -> None:
        self.result = result
        super().__init__(result.error or f"job {result.job_name} is {result.job_status}")


@dataclass(frozen=True)
class JobID:
    """Flink's JobID: what ``get_job_id()`` returns; it prints as its 32 hex digits."""

    hex: str

    def __str__(self) -> str:
        return self.hex


@dataclass(frozen=True)
class JobExecutionResult:
    job_name: str
    job_id: str
    job_status: JobStatus
    #: Records of each collect sink, by operator name, in (subtask, arrival) order.
    collected: dict[str, list[Any]]
    net_runtime_ms: int
    #: The final status document.
    status: DriverStatusDocument
    failure: TaskFailure | None = None
    error: str | None = None
    #: The port the status server listened on, if any.
    status_port: int | None = None

    @property
    def vertices(self) -> tuple[VertexInfo, ...]:
        return self.status.vertices

    def vertex(self, name_or_id: str) -> VertexInfo:
        for vertex in self.vertices:
            if name_or_id in (vertex.id, vertex.name):
                return vertex
        raise KeyError(name_or_id)

    def operator_metrics(self) -> dict[str, tuple[int, int]]:
        """``numRecordsIn`` and ``numRecordsOut`` of every operator, summed over subtasks."""
        return {op.name: (op.records_in, op.records_out)
                for vertex in self.vertices for op in vertex.operators}

    def get_job_id(self) -> JobID:
        return JobID(self.job_id)

    def get_net_runtime(self) -> int:
        """Milliseconds the job ran."""
        return self.net_runtime_ms

    def get_accumulator_result(self, accumulator_name: str) -> Any:
        """None: a job has no accumulators (Flink's are Java objects)."""
        return None

    def get_all_accumulator_results(self) -> dict[str, Any]:
        return {}

    def __str__(self) -> str:
        """As Flink's JobExecutionResult prints (PyFlink's ``str(result)``)."""
        ended = "finished" if self.job_status is JobStatus.FINISHED else self.job_status.lower()
        return (f"Program execution finished\nJob with JobID {self.job_id} has {ended}.\n"
                f"Job Runtime: {self.net_runtime_ms} ms")

    def check(self) -> JobExecutionResult:
        """Raises :class:`JobExecutionError` unless the job FINISHED."""
        if self.job_status is not JobStatus.FINISHED:
            raise JobExecutionError(self)
        return self
