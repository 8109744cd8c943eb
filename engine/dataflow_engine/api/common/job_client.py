"""``env.execute_async()``'s JobClient: the job runs on a thread of the program while the
program goes on, as PyFlink's local MiniCluster runs it beside the program.

Its answers are CompletableFutures, as in PyFlink: ``result()`` waits for them.
"""

from __future__ import annotations

import concurrent.futures
import threading
import uuid
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from dataflow_engine.api._unsupported import NotSupportedError
from dataflow_engine.graph.states import JobStatus
from dataflow_engine.rest.status import DriverStatusDocument
from dataflow_engine.runtime.jobmaster.config import JobExecutionResult, JobID

T = TypeVar("T")


class CompletableFuture(Generic[T]):
    """PyFlink's CompletableFuture: a value that may not be there yet."""

    def __init__(self, future: concurrent.futures.Future[T]) -> None:
        self._future = future

    @staticmethod
    def completed(value: T) -> CompletableFuture[T]:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        future.set_result(value)
        return CompletableFuture(future)

    def cancel(self) -> bool:
        """Gives up waiting (the job goes on: cancel it with ``JobClient.cancel()``)."""
        return self._future.cancel()

    def cancelled(self) -> bool:
        return self._future.cancelled()

    def done(self) -> bool:
        return self._future.done()

    def result(self) -> T:
        """Waits for the value; raises what the computation raised."""
        return self._future.result()

    def exception(self) -> BaseException | None:
        """The exception it completed with, None if none (or not done yet)."""
        if not self._future.done() or self._future.cancelled():
            return None
        return self._future.exception()

    def __str__(self) -> str:
        return f"CompletableFuture<{'done' if self._future.done() else 'pending'}>"


class JobClient:
    """The handle of a job ``execute_async()`` started."""

    def __init__(self, job_id: str) -> None:
        self._job_id = job_id
        self._status = JobStatus.CREATED
        self._result: concurrent.futures.Future[JobExecutionResult] = (
            concurrent.futures.Future())
        self._stop = threading.Event()
        #: Futures of cancel(), completed when the job has ended.
        self._ended: list[concurrent.futures.Future[None]] = []
        self._lock = threading.Lock()

    def get_job_id(self) -> JobID:
        return JobID(self._job_id)

    def get_job_status(self) -> CompletableFuture[JobStatus]:
        """The status now (CREATED until the job starts)."""
        return CompletableFuture.completed(self._status)

    def cancel(self) -> CompletableFuture[None]:
        """Cancels the job; completes once it has ended (CANCELED, or FINISHED if it was
        done first)."""
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        with self._lock:
            if self._result.done():
                future.set_result(None)
            else:
                self._ended.append(future)
        self._stop.set()
        return CompletableFuture(future)

    def stop_with_savepoint(self, advance_to_end_of_event_time: bool = False,
                            savepoint_directory: str | None = None,
                            formatType: Any = None) -> CompletableFuture[str]:
        raise NotSupportedError(
            "stop_with_savepoint() of a job started by execute_async() is not supported: "
            "deploy it as a DataflowJob (to_manifest()) and stop it with `dataflow savepoint "
            "--stop` or the spec's job.savepointTriggerNonce")

    def trigger_savepoint(self, savepoint_directory: str | None = None,
                          formatType: Any = None) -> CompletableFuture[str]:
        raise NotSupportedError(
            "trigger_savepoint() of a job started by execute_async() is not supported: "
            "deploy it as a DataflowJob (to_manifest()) and take savepoints with `dataflow "
            "savepoint` or the spec's job.savepointTriggerNonce")

    def get_accumulators(self) -> CompletableFuture[dict[str, Any]]:
        """Empty: a job has no accumulators."""
        return CompletableFuture.completed({})

    def get_job_execution_result(self) -> CompletableFuture[JobExecutionResult]:
        """Completes when the job ends: with its JobExecutionResult if it FINISHED, else with
        the JobExecutionError saying why."""
        return CompletableFuture(self._result)

    # -- what the job's thread calls --------------------------------------------------------

    def _observe(self, document: DriverStatusDocument) -> None:
        self._status = document.job_status

    def _run(self, run: Callable[[threading.Event], JobExecutionResult]) -> None:
        try:
            result = run(self._stop)
            self._status = result.job_status
            self._result.set_result(result.check())
        except BaseException as error:
            self._result.set_exception(error)
        finally:
            with self._lock:
                ended, self._ended = self._ended, []
            for future in ended:
                future.set_result(None)


def new_job_id() -> str:
    """32 hex digits, as Flink's JobID prints."""
    return uuid.uuid4().hex
