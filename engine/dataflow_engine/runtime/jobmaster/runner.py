"""``run_job``: executes a compiled plan on a SparkContext and reports like Flink's JobClient.

The run: build the physical plan and its RDDs, then run the plan's actions as Spark jobs in
topological order under one job group, while a poller maps Spark's task states onto the
ExecutionVertices and publishes the status document (HTTP, file, progress display).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dataflow_engine.compiler.compile import CompiledJob
from dataflow_engine.graph.states import ExecutionState, JobStatus
from dataflow_engine.rest.endpoints import RESOURCE_PROFILES_KEY
from dataflow_engine.rest.savepoints import SavepointFailureReason
from dataflow_engine.rest.status import (
    CheckpointStatistics,
    DriverStatusDocument,
    FailureInfo,
    OperatorInfo,
    SubtaskInfo,
    VertexInfo,
)
from dataflow_engine.runtime import secrets
from dataflow_engine.runtime.checkpoint.filesystems import PRIVATE_DIRECTORY_MODE, resolve
from dataflow_engine.runtime.jobmaster.config import JobExecutionResult, RunnerConfig
from dataflow_engine.runtime.jobmaster.driver_launch import prepare_driver_launch
from dataflow_engine.runtime.jobmaster.progress import ProgressDisplay
from dataflow_engine.runtime.jobmaster.rates import RateWindow
from dataflow_engine.runtime.jobmaster.rest_server import (
    StatusServer,
    savepoint_actions,
    write_status_file,
)
from dataflow_engine.runtime.spark.print_relay import PrintRelay
from dataflow_engine.runtime.spark.resource_profiles import (
    pod_shape_conf,
    publish_pod_shapes,
    resource_profiles,
)
from dataflow_engine.runtime.tasks.failures import TaskFailure, find_task_failure
from dataflow_engine.spec.model import Execution, is_local_storage
from dataflow_engine.spec.secret_refs import job_secret_keys

if TYPE_CHECKING:
    from pyspark import SparkContext

    from dataflow_engine.runtime.spark.spark_job import SparkJob
    from dataflow_engine.runtime.spark.spark_status import TaskStates
    from dataflow_engine.runtime.taskmanager.stream_task import SubtaskMetrics

_LOG4J2 = """\
rootLogger.level = {level}
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{yy/MM/dd HH:mm:ss}} %p %c{{1}}: %m%n%ex
logger.native.name = org.apache.hadoop.util.NativeCodeLoader
logger.native.level = error
logger.utils.name = org.apache.spark.util.Utils
logger.utils.level = error
"""
#: Seconds to wait, after the last Spark job, for its final task events to reach the store.
_SETTLE_TIMEOUT = 10.0
#: The file naming the status server's port (``--status-port 0`` picks one), for scripts.
STATUS_PORT_FILE = "status-port"
#: Seconds the status server serves on, at least, after a run whose end came with a
#: savepoint's outcome (a stop-with-savepoint, or requests that failed as the job ended):
#: ``dataflow savepoint --wait`` polls every 0.2 s and would otherwise miss the last document.
_OUTCOME_LINGER = 1.0

_log = logging.getLogger(__name__)


#: PySpark's worker daemon, started by name (``python -m``) in each executor; not imported
#: here, so that the module does not find itself imported already when it starts.
WORKER_DAEMON = "dataflow_engine.runtime.spark.worker_daemon"


def _is_local(master: str) -> bool:
    return master.startswith("local")


#: The context :func:`_spark_context` made for a local master, kept for the process's next
#: runs with the settings it was made with (Spark allows one context per process; a local one
#: holds no cluster resources, and starting one with its Python workers costs seconds).
_kept: tuple[SparkContext, dict[str, str]] | None = None


def _spark_context(config: RunnerConfig, job_name: str,
                   from_secrets: dict[str, str]) -> tuple[SparkContext, bool]:
    """The configured session's context, the process's active one, or a new one; True if the
    run owns it (stops it when it ends). A new one is a bare SparkContext: the engine runs
    RDDs only, and a SparkSession's SQL state costs every driver seconds of start (2.5 s
    measured). A local one is kept for the process's next run, as ``getOrCreate`` would, unless
    that run asks for other settings (its app name aside)."""
    from pyspark import SparkConf, SparkContext

    global _kept
    if config.spark_session is not None:
        return config.spark_session.sparkContext, False
    configured = _spark_defaults_keys(config.properties_file)
    conf = _requested_conf(config, job_name, from_secrets, configured)
    settings = {"spark.master": config.master, **conf}
    settings.pop("spark.app.name", None)
    active = SparkContext._active_spark_context
    if active is not None and _kept is not None and _kept[0] is active and _kept[1] != settings:
        active.stop()  # made by an earlier run for other settings
        active = _kept = None
    if active is not None:
        active.setLogLevel(config.log_level)
        return active, False
    py4j = logging.getLogger("py4j")
    if py4j.level == logging.NOTSET:  # its INFO chatter is ours, not the program's output
        py4j.setLevel(logging.WARNING)
    if _is_local(config.master):
        # Local workers must run this interpreter, not whatever python3 is on PATH.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    fd, log4j_path = tempfile.mkstemp(prefix="dataflow-log4j2-", suffix=".properties")
    with os.fdopen(fd, "w") as f:
        f.write(_LOG4J2.format(level=config.log_level.lower()))
    java_options = {"spark.driver.extraJavaOptions":
                    f"-Dlog4j2.configurationFile=file:{log4j_path}"}
    if "spark.driver.extraJavaOptions" in configured:
        java_options = {}
    if SparkContext._gateway is None:  # the JVM is yet to start (a process has one)
        prepare_driver_launch(config.properties_file)
    try:
        context = SparkContext(master=config.master,
                               conf=SparkConf().setAll([*java_options.items(), *conf.items()]))
    finally:
        os.unlink(log4j_path)  # read once, when the driver JVM started
    context.setLogLevel(config.log_level)
    if not _is_local(config.master):
        return context, True
    _kept = (context, settings)
    return context, False


def _requested_conf(config: RunnerConfig, job_name: str, from_secrets: dict[str, str],
                    configured: set[str]) -> dict[str, str]:
    """The Spark settings a run asks a new context for (``configured``: the keys
    spark-defaults.conf sets)."""
    conf = {
        "spark.app.name": config.app_name or f"dataflow:{job_name}",
        "spark.ui.showConsoleProgress": "false",
        "spark.python.worker.reuse": "true",
        # PySpark's daemon, without the archives that cost every task a rescan of them.
        "spark.python.daemon.module": WORKER_DAEMON,
    }
    if _is_local(config.master):
        conf["spark.ui.enabled"] = "false"  # the status endpoint is ours; no port clashes
    # Our defaults never override spark-defaults.conf (the operator configures Spark there).
    conf = {key: value for key, value in conf.items() if key not in configured}
    conf.update(config.spark_conf)
    conf.update(from_secrets)  # spec.sparkConf's values from Secrets: never in a file
    return conf


def _spark_defaults_keys(properties_file: Path | None = None) -> set[str]:
    """Keys set in ``properties_file``, else in ``spark-defaults.conf`` of ``$SPARK_CONF_DIR``
    (or ``$SPARK_HOME/conf``): what Spark's launcher reads."""
    if properties_file is not None:
        path = str(properties_file)
    else:
        directory = os.environ.get("SPARK_CONF_DIR") or (
            os.path.join(os.environ["SPARK_HOME"], "conf") if "SPARK_HOME" in os.environ
            else None)
        if directory is None:
            return set()
        path = os.path.join(directory, "spark-defaults.conf")
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return set()
    keys = set()
    for line in lines:
        line = line.strip()
        if line and not line.startswith("#"):
            keys.add(line.replace("=", " ", 1).split(None, 1)[0])
    return keys


def _propagate_python_path(sc: SparkContext) -> None:
    """Local workers see the driver's sys.path, so ``module:callable`` imports like here."""
    entries = [os.path.abspath(p or os.getcwd()) for p in sys.path]
    existing = sc.environment.get("PYTHONPATH", "")
    merged = list(dict.fromkeys([*entries, *filter(None, existing.split(os.pathsep))]))
    sc.environment["PYTHONPATH"] = os.pathsep.join(p for p in merged if os.path.exists(p))


def _short_error(error: BaseException) -> str:
    text = str(error).strip()
    lines = [line for line in text.splitlines() if line.strip()]
    return "\n".join(lines[:12]) if lines else type(error).__name__


class _Cancelled(Exception):
    """``config.stop`` was set between two Spark actions of a bounded run."""


class _JobRun:
    def __init__(self, compiled: CompiledJob, config: RunnerConfig) -> None:
        self.compiled = compiled
        self.config = config
        self.job_id = config.job_id or uuid.uuid4().hex
        self.job_status = JobStatus.CREATED
        self.start_time = time.time()
        self.end_time: float | None = None
        self.failure: TaskFailure | None = None
        self.error: str | None = None
        self.states: TaskStates | None = None
        self.metrics: Any = None
        self.spark_master = config.master
        self.app_id = ""
        self._lock = threading.Lock()
        self.publishers: list[Any] = []
        self.collected: dict[str, list[Any]] = {}
        self.job: Any = None
        self.relay: PrintRelay | None = None
        self.resource_profiles: dict[int, str] = {}
        #: A continuous job's metrics summed over its epochs, and its checkpoint statistics.
        self.metric_totals: dict[tuple[str, int], SubtaskMetrics] | None = None
        self.rates = RateWindow()
        self.checkpoint_stats: CheckpointStatistics | None = None
        #: When the totals were last summed (wall clock seconds), as an epoch ended.
        self.metrics_time: float | None = None
        self._stop_polling = threading.Event()
        self._poller: threading.Thread | None = None
        #: Cancels a bounded run's Spark jobs once ``config.stop`` is set (set while it runs).
        self._cancel: Callable[[], None] | None = None

    # -- status -----------------------------------------------------------------------------
    def snapshot(self) -> DriverStatusDocument:
        metrics: dict[Any, Any]
        if self.metric_totals is not None:
            metrics = dict(self.metric_totals)
        else:
            metrics = dict(self.metrics.value) if self.metrics is not None else {}
        terminal_failure = self.job_status in (JobStatus.FAILED, JobStatus.CANCELED)
        running = self.job_status is JobStatus.RUNNING and self.metric_totals is not None
        rates = self.rates.rates()
        backlogs: dict[str, int] = defaultdict(int)
        for partition in (self.checkpoint_stats.kafka_partitions
                          if self.checkpoint_stats is not None else ()):
            backlogs[partition.source] += partition.lag
        vertices = []
        for vertex in self.compiled.job_graph.vertices:
            subtasks = []
            operator_totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
            for index in range(vertex.parallelism):
                state, attempt = (self.states.state_of((vertex.id, index))
                                  if self.states is not None else (ExecutionState.CREATED, 0))
                if terminal_failure and state in (ExecutionState.CREATED,
                                                  ExecutionState.SCHEDULED):
                    state = ExecutionState.CANCELED
                elif running and self.states is not None and self.states.per_epoch and state in (
                        ExecutionState.CREATED, ExecutionState.SCHEDULED,
                        ExecutionState.FINISHED):
                    state = ExecutionState.RUNNING  # from epoch to epoch, as in Flink
                m = metrics.get((vertex.id, index))
                records_in = records_out = busy_ms = 0
                if m is not None:
                    records_in, records_out, busy_ms = m.records_in, m.records_out, m.busy_ms
                    for name, op_in, op_out in m.operators:
                        operator_totals[name][0] += op_in
                        operator_totals[name][1] += op_out
                rate = rates.get((vertex.id, index))
                subtasks.append(SubtaskInfo(
                    index=index, state=state, attempt=attempt, records_in=records_in,
                    records_out=records_out, busy_ms=busy_ms,
                    records_in_per_second=rate.records_in_per_second if rate else 0.0,
                    records_out_per_second=rate.records_out_per_second if rate else 0.0,
                    busy_ratio=rate.busy_ratio if rate else 0.0))
            operators = tuple(
                OperatorInfo(name=node.name, type=node.operator_type.value,
                             records_in=operator_totals[node.name][0],
                             records_out=operator_totals[node.name][1])
                for node in vertex.operators)
            head = vertex.operators[0].name
            vertices.append(VertexInfo(id=vertex.id, name=vertex.name,
                                       parallelism=vertex.parallelism,
                                       max_parallelism=vertex.max_parallelism,
                                       subtasks=tuple(subtasks), operators=operators,
                                       backlog=backlogs.get(head)))
        failure = self.failure
        return DriverStatusDocument(
            job_name=self.compiled.job_name, job_id=self.job_id, job_status=self.job_status,
            runtime_mode=self.compiled.job_graph.runtime_mode.value,
            spark_master=self.spark_master, spark_application_id=self.app_id,
            start_time=_millis(self.start_time),
            end_time=_millis(self.end_time) if self.end_time is not None else None,
            update_time=_millis(time.time()), vertices=tuple(vertices),
            metrics_time=None if self.metrics_time is None else _millis(self.metrics_time),
            failure=None if failure is None else FailureInfo(
                operator=failure.operator, task_name=failure.task_name,
                subtask_index=failure.subtask_index, attempt_number=failure.attempt_number,
                exception_type=failure.exception_type, message=failure.message),
            error=self.error, resource_profiles=dict(sorted(self.resource_profiles.items())),
            checkpoints=self.checkpoint_stats)

    def publish(self) -> DriverStatusDocument:
        with self._lock:
            status = self.snapshot()
            document = status.to_json()
            for publisher in self.publishers:
                publisher(status, document)
            return status

    def poll_and_publish(self) -> DriverStatusDocument:
        if self.states is not None:
            with contextlib.suppress(Exception):  # a py4j hiccup must not kill the run
                self.states.poll()
        return self.publish()

    # -- execution --------------------------------------------------------------------------
    def execute(self, sc: SparkContext) -> None:
        """Plans, builds the RDDs and runs the actions; a job failure becomes FAILED."""
        from dataflow_engine.runtime.jobmaster.epochs import ContinuousExecution
        from dataflow_engine.runtime.jobmaster.pipelined import PipelinedExecution
        from dataflow_engine.runtime.spark.metrics import TaskResultsParam
        from dataflow_engine.runtime.spark.spark_job import SparkJob
        from dataflow_engine.runtime.spark.spark_plan import plan_job
        from dataflow_engine.runtime.spark.spark_status import SparkTaskStates

        master = self.spark_master = str(sc.master)
        self.app_id = str(sc.applicationId)
        local = _is_local(master)
        if local:
            _propagate_python_path(sc)
        relay = self.config.relay_print
        if relay if relay is not None else local:
            self.relay = PrintRelay()
        group = f"dataflow-{self.compiled.job_name}-{self.job_id}"
        continuous: ContinuousExecution | None = None
        try:
            plan = plan_job(self.compiled, local=local,
                            print_spool=self.relay.directory if self.relay else None)
            self.metrics = sc.accumulator({}, TaskResultsParam())
            profiles = None
            if sc.getConf().get(RESOURCE_PROFILES_KEY, "false").lower() == "true":
                executors = self.compiled.slot_plan.executors
                profiles = resource_profiles(executors)
                publish_pod_shapes(sc, pod_shape_conf(executors, profiles))
                self.resource_profiles = {p.id: group for group, p in profiles.items()}
            self.collected = {n.name: [] for v in self.compiled.job_graph.vertices
                              for n in v.operators if n.operator_type.value == "collect"}
            if self.compiled.continuous:
                execution = (PipelinedExecution
                             if self.compiled.spec.execution is Execution.PIPELINED
                             else ContinuousExecution)
                continuous = execution(sc, self.compiled, plan, self.metrics, profiles, self,
                                       self.config.savepoints)
                try:
                    continuous.restore(self.config.restore,
                                       self.config.allow_non_restored_state,
                                       self.config.deployment)
                except BaseException:  # its run, which would close it, never starts
                    continuous.close()
                    raise
                self.metric_totals, self.checkpoint_stats = {}, continuous.stats
                self.states = continuous.task_states(group)
            else:
                self.job = SparkJob(sc, plan, self.metrics, profiles)
                self.states = SparkTaskStates(sc, group, self.job.roots)
            self.job_status = JobStatus.RUNNING
            self.publish()
            self._poller = threading.Thread(target=self._poll_loop, daemon=True,
                                            name="dataflow-status-poller")
            self._poller.start()
            sc.setJobGroup(group, f"dataflow job {self.compiled.job_name}")
            if continuous is not None:
                ended = continuous.run(self.config.stop)
                self.job_status = JobStatus.FINISHED if ended else JobStatus.CANCELED
                if not ended:
                    self.error = "stopped"
                return
            self._cancel = functools.partial(sc.cancelJobGroup, group)
            for action in plan.actions:
                if self.config.stop.is_set():
                    raise _Cancelled
                for name, records in self.job.run(action).items():
                    self.collected[name].extend(records)
            self.job_status = JobStatus.FINISHED
        except KeyboardInterrupt:
            sc.cancelJobGroup(group)
            raise
        except Exception as error:  # a failed job is a result, not an exception
            if self.config.stop.is_set():
                self.job_status, self.error = JobStatus.CANCELED, "cancelled"
            else:
                self.failure = find_task_failure(str(error))
                self.error = self.failure.describe() if self.failure else _short_error(error)
                self.job_status = JobStatus.FAILED
        finally:
            if continuous is not None:  # its last checkpoint, also the one that failed the job
                self.checkpoint_stats = continuous.stats
            with contextlib.suppress(Exception):
                sc._jsc.clearJobGroup()
            self._stop_poller()
            self.end_time = time.time()

    # -- epochs of a continuous job (its EpochListener) ---------------------------------------
    def epoch_started(self, job: SparkJob) -> None:
        self.job = job

    def epoch_finished(self, metrics: dict[tuple[str, int], SubtaskMetrics],
                       collected: dict[str, list[Any]], stats: CheckpointStatistics) -> None:
        with self._lock:
            totals = self.metric_totals
            assert totals is not None, "execute() starts a continuous run's totals"
            for key, epoch in metrics.items():
                totals[key] = epoch if key not in totals else totals[key].plus(epoch)
            self.rates.add(time.monotonic(), totals)
            self.metrics_time = time.time()
            for name, records in collected.items():
                self.collected.setdefault(name, []).extend(records)
            self.checkpoint_stats = stats
        self.publish()

    def _poll_loop(self) -> None:
        while not self._stop_polling.wait(self.config.poll_interval):
            if self.config.stop.is_set() and self._cancel is not None:
                self._cancel()
                self._cancel = None
            self.poll_and_publish()

    def _stop_poller(self) -> None:
        self._stop_polling.set()
        if self._poller is not None:
            self._poller.join()
            self._poller = None

    def cleanup(self) -> None:
        self._stop_poller()
        if self.relay is not None:
            self.relay.close()
        if self.job is not None:
            with contextlib.suppress(Exception):
                self.job.release()

    def settle(self) -> DriverStatusDocument:
        """Final poll: wait until Spark's store has every task's end (its listener is async)."""
        deadline = time.monotonic() + _SETTLE_TIMEOUT
        while True:
            status = self.poll_and_publish()
            states = [s.state for v in status.vertices for s in v.subtasks]
            settled = (all(s is ExecutionState.FINISHED for s in states)
                       if self.job_status is JobStatus.FINISHED
                       else not any(s is ExecutionState.RUNNING for s in states))
            if settled or time.monotonic() > deadline:
                return status
            time.sleep(0.05)


def _millis(seconds: float) -> int:
    return int(seconds * 1000)


#: What addPyFile puts on the Python path.
PY_FILE_SUFFIXES = (".py", ".zip", ".egg")


def expand_py_files(entries: list[str]) -> list[str]:
    """Directories (a mounted ConfigMap) stand for the modules and archives in them."""
    files: list[str] = []
    for entry in entries:
        path = Path(entry)
        if "://" not in entry and path.is_dir():
            files += sorted(str(f) for f in path.iterdir()
                            if f.suffix in PY_FILE_SUFFIXES and f.is_file())
        else:
            files.append(entry)
    return files


def status_port_path(compiled: CompiledJob, config: RunnerConfig) -> Path | None:
    """Where the driver names its status server's port: beside its status file, else in its
    checkpoint storage when that is local (the directories a user of the job knows), else
    nowhere."""
    if config.status_file is not None:
        return config.status_file.parent / STATUS_PORT_FILE
    checkpointing = compiled.spec.checkpointing
    if checkpointing is not None and checkpointing.storage is not None and is_local_storage(
            checkpointing.storage):
        return Path(resolve(checkpointing.storage)[1]) / STATUS_PORT_FILE
    return None


def _write_status_port(path: Path, port: int) -> bool:
    """Write-then-rename, so a reader never sees an empty file; False (logged) when it cannot
    be written: the job runs without it."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIRECTORY_MODE)
        fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(f"{port}\n")
            os.replace(temp, path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
    except OSError as error:
        _log.warning("the status port could not be written to %s: %s", path, error)
        return False
    return True


def _remove_status_port(path: Path, port: int) -> None:
    """Removes the port file unless another run (sharing the directory) has replaced it."""
    with contextlib.suppress(OSError):
        if path.read_text().strip() == str(port):
            path.unlink()


def _ends_with_savepoint_outcome(final: DriverStatusDocument) -> bool:
    """Whether the final document holds a savepoint outcome that came with the job's end."""
    return final.checkpoints is not None and any(
        entry.stop or entry.reason is SavepointFailureReason.JOB_ENDED
        for entry in final.checkpoints.savepoints)


def run_job(compiled: CompiledJob, config: RunnerConfig | None = None) -> JobExecutionResult:
    """Runs a compiled job to completion on Spark; never raises for a failed job (see
    :meth:`JobExecutionResult.check`), only KeyboardInterrupt after cancelling the Spark jobs."""
    config = config or RunnerConfig()
    run = _JobRun(compiled, config)
    server = (StatusServer(config.status_port, config.status_host,
                           savepoint_actions(config.savepoints),
                           config.status_token)
              if config.status_port is not None else None)
    display = ProgressDisplay(live=config.progress_live) if config.progress else None
    if server is not None:
        # WARNING: what a user of `dataflow run` sees on stderr without configuring logging.
        _log.warning("status server listening on http://%s:%d",
                     f"[{config.status_host}]" if ":" in config.status_host
                     else config.status_host, server.port)
        run.publishers.append(lambda _s, doc: server.publish(doc))
    if config.status_listener is not None:
        listener = config.status_listener
        run.publishers.append(lambda status, _doc: listener(status))
    if config.status_file is not None:
        status_file = config.status_file
        run.publishers.append(lambda _s, doc: write_status_file(status_file, doc))
    if display is not None:
        run.publishers.append(lambda s, _doc: display.update(s))
        display.start()
    run.publish()
    port_file = status_port_path(compiled, config) if server is not None else None
    if port_file is not None and server is not None and not _write_status_port(
            port_file, server.port):
        port_file = None
    context: SparkContext | None = None
    owned = interrupted = False
    try:
        values = secrets.read_secrets(job_secret_keys(compiled.spec))
        secrets.install(values)
        from_secrets = values.resolve({key: value for key, value in
                                       compiled.spec.spark_conf.items()
                                       if not isinstance(value, str)})
        context, owned = _spark_context(config, compiled.job_name, from_secrets)
        for py_file in expand_py_files(config.py_files):
            context.addPyFile(py_file)
        run.execute(context)
    except KeyboardInterrupt:
        interrupted = True
        run.job_status, run.error = JobStatus.CANCELED, "interrupted"
    except Exception as error:  # e.g. no Java, a bad master URL
        run.job_status, run.error = JobStatus.FAILED, _short_error(error)
    finally:
        run.end_time = run.end_time or time.time()
        final = run.settle()
        run.cleanup()
        if display is not None:
            display.stop(final)
        if server is not None:
            linger = 0.0 if interrupted else config.status_linger
            if not interrupted and _ends_with_savepoint_outcome(final):
                linger = max(linger, _OUTCOME_LINGER)
            if linger > 0:
                time.sleep(linger)
            if port_file is not None:
                _remove_status_port(port_file, server.port)
            server.close()
        if owned and context is not None:
            context.stop()
    if interrupted:
        raise KeyboardInterrupt
    return JobExecutionResult(
        job_name=compiled.job_name, job_id=run.job_id, job_status=run.job_status,
        collected=run.collected if run.job_status is JobStatus.FINISHED else {},
        net_runtime_ms=final.duration_ms, status=final, failure=run.failure, error=run.error,
        status_port=server.port if server is not None else None)
