"""A pipelined job end to end without Spark: the driver's loop (PipelinedExecution), its slots
(TaskSlot) as threads of this process talking over loopback sockets, and a fake of the one
thing Spark does for them, running the barrier stage and starting it again after a failure.
A keyed rolling count through an exactly-once file sink comes out whole, checkpoint after
checkpoint, through a failed slot, and the subtasks' states are what the status shows."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from dataflow_engine.compiler.compile import compile_job
from dataflow_engine.graph.states import ExecutionState
from dataflow_engine.runtime.checkpoint.coordinator import CheckpointFailureThreshold
from dataflow_engine.runtime.checkpoint.savepoints import SavepointRequest, SavepointRequests
from dataflow_engine.runtime.checkpoint.storage import load_checkpoint
from dataflow_engine.runtime.jobmaster import pipelined
from dataflow_engine.runtime.jobmaster.pipelined import PipelinedExecution, SparkStage
from dataflow_engine.runtime.spark.spark_plan import plan_job
from dataflow_engine.runtime.taskmanager import pipelined_task
from dataflow_engine.runtime.taskmanager.task_slot import PipelinedPlan, TaskSlot
from dataflow_engine.spec.model import DataflowJobSpec

pytestmark = pytest.mark.unit

KEYS = 5
ROWS = 2000
#: Set by a test: the record whose first sight fails its subtask, once.
FAIL_AT: list[int] = []
#: Set by a test: the record whose first sight holds its subtask up for a while, once.
SLOW_AT: list[int] = []


def make_row(index: int) -> tuple[int, int]:
    return index % KEYS, index


def fail_once(row: tuple[int, int]) -> tuple[int, int]:
    if FAIL_AT and row[1] == FAIL_AT[0]:
        FAIL_AT.clear()
        raise RuntimeError("injected failure")
    if SLOW_AT and row[1] == SLOW_AT[0]:
        SLOW_AT.clear()
        time.sleep(0.6)
    return row[0], 1


class SlotsInThreads(SparkStage):
    """The stage's slots as threads; a failed slot cancels the others and the stage starts
    again with new task ids, at most twice, as Spark retries a failed barrier stage."""

    task_ids = itertools.count(100)

    def __init__(self, sc: Any, plan: PipelinedPlan) -> None:
        self.sc, self.plan = sc, plan
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._stage, daemon=True)

    def _stage(self) -> None:
        for _ in range(2):
            self.error = self._attempt()
            if self.error is None:
                return

    def _attempt(self) -> BaseException | None:
        count = self.plan.slots
        gathered: list[str] = [""] * count
        barrier = threading.Barrier(count)
        errors: list[BaseException] = []

        def all_gather(index: int, address: str) -> list[str]:
            gathered[index] = address
            barrier.wait()
            return list(gathered)

        slots = [TaskSlot(self.plan, i, 0, next(self.task_ids)) for i in range(count)]

        def run(slot: TaskSlot) -> None:
            try:
                slot.run(lambda address: all_gather(slot.index, address))
            except BaseException as error:
                errors.append(error)
                for other in slots:
                    other._cancel()

        threads = [threading.Thread(target=run, args=(slot,)) for slot in slots]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return errors[0] if errors else None


class LoopbackContext:
    master = "local[2]"
    defaultParallelism = 2

    def getConf(self) -> Any:
        return {"spark.driver.host": "127.0.0.1"}


class Recorder:
    """The run's EpochListener: counters summed, collected records kept."""

    def __init__(self) -> None:
        self.records_in: dict[tuple[str, int], int] = defaultdict(int)
        self.records_out: dict[tuple[str, int], int] = defaultdict(int)
        self.collected: dict[str, list[Any]] = defaultdict(list)

    def epoch_started(self, job: Any) -> None:
        raise AssertionError("a pipelined job runs no epoch jobs")

    def epoch_finished(self, metrics: dict[tuple[str, int], Any],
                       collected: dict[str, list[Any]], stats: Any) -> None:
        for key, delta in metrics.items():
            self.records_in[key] += delta.records_in
            self.records_out[key] += delta.records_out
        for name, records in collected.items():
            self.collected[name].extend(records)


def _spec(tmp_path: Path, sink: dict[str, Any], rows: int | None = ROWS,
          **checkpointing: Any) -> DataflowJobSpec:
    args: dict[str, Any] = {"rowsPerSecond": 8000}
    if rows is not None:
        args["numberOfRows"] = rows
    pipeline: list[dict[str, Any]] = [
        {"name": "rows", "type": "datagen", "function": f"{__name__}:make_row", "args": args},
        {"name": "ones", "type": "map", "inputs": ["rows"],
         "function": f"{__name__}:fail_once"},
        {"name": "counts", "type": "sum", "args": {"field": 1},
         "inputs": [{"from": "ones", "keyBy": 0}]},
        {"name": "out", "inputs": ["counts"], **sink}]
    return DataflowJobSpec.model_validate({
        "parallelism": 2, "runtimeMode": "STREAMING", "execution": "PIPELINED",
        "epochInterval": "10ms", "pipeline": pipeline,
        "checkpointing": {"interval": "50ms", "storage": str(tmp_path / "checkpoints"),
                          **checkpointing}})


def _run(spec: DataflowJobSpec, stop_with: SavepointRequest | None = None
         ) -> tuple[PipelinedExecution, Recorder, bool]:
    """Runs the job to its end, or asks for ``stop_with`` after two checkpoints."""
    compiled = compile_job(spec, "pipelined")
    recorder = Recorder()
    requests = SavepointRequests()
    execution = PipelinedExecution(LoopbackContext(), compiled, plan_job(compiled), None,  # type: ignore[arg-type]
                                   None, recorder, requests)
    execution.Stage = SlotsInThreads
    execution.restore("none")
    if stop_with is not None:
        def ask() -> None:
            while execution.stats.completed < 2:
                time.sleep(0.01)
            requests.request(stop_with)

        threading.Thread(target=ask, daemon=True).start()
    states = execution.task_states("group")
    ended = execution.run(threading.Event())
    assert all(states.state_of(key)[0] is ExecutionState.FINISHED
               for key in execution.subtasks)
    return execution, recorder, ended


def _expected_counts() -> list[tuple[int, int]]:
    return sorted((key, n) for key in range(KEYS) for n in range(1, ROWS // KEYS + 1))


def test_a_pipelined_job_runs_to_its_end_with_checkpoints_and_collects_every_record(
        tmp_path: Path) -> None:
    execution, recorder, ended = _run(_spec(tmp_path, {"type": "collect"}))
    assert ended
    assert sorted(recorder.collected["out"]) == _expected_counts()
    stats = execution.stats
    assert stats.completed >= 2 and stats.failed == 0  # periodic ones and the final one
    source = execution.plan.job_name and next(iter(execution.plan.vertices))
    assert sum(n for (vertex, _), n in recorder.records_out.items() if vertex == source) == ROWS


def test_a_failed_slot_restarts_the_job_from_its_latest_checkpoint_exactly_once(
        tmp_path: Path) -> None:
    output = tmp_path / "out"
    FAIL_AT[:] = [ROWS * 3 // 4]
    execution, _, ended = _run(_spec(tmp_path, {"type": "file", "args": {
        "path": str(output), "format": "json"}}))
    assert ended and not FAIL_AT, "the failure was never injected"
    assert execution.restarts == 1
    lines = [tuple(json.loads(line)) for part in sorted(output.glob("part-*"))
             for line in part.read_text().splitlines()]
    assert sorted(lines) == _expected_counts()  # nothing lost, nothing twice
    assert all(execution.subtask_states.state_of(key)[1] == 1 for key in execution.subtasks)


@pytest.mark.parametrize("report_every", [1.0, 0.005], ids=["reports-after", "reports-during"])
def test_records_replayed_after_a_restart_are_counted_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, report_every: float) -> None:
    """The restarted subtasks read again what came after the checkpoint; the status counts
    each record once, whether it was told of the records before the failure (they are not
    counted again) or not (those up to the checkpoint are not lost)."""
    monkeypatch.setattr(pipelined, "_METRICS_INTERVAL", report_every)  # the driver's
    monkeypatch.setattr(pipelined_task, "METRICS_INTERVAL", report_every)  # the subtasks'
    FAIL_AT[:] = [ROWS * 3 // 4]
    execution, recorder, ended = _run(_spec(tmp_path, {"type": "file", "args": {
        "path": str(tmp_path / "out"), "format": "json"}}))
    assert ended and execution.restarts == 1
    source, consumer = execution.plan.vertices
    written = sum(n for (vertex, _), n in recorder.records_out.items() if vertex == source)
    assert written == ROWS
    assert sum(n for (vertex, _), n in recorder.records_in.items() if vertex == consumer) == ROWS


def test_a_checkpoint_whose_barriers_do_not_align_in_time_fails_and_the_job_goes_on(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A subtask held up past ``checkpointing.timeout`` expires the checkpoints in flight;
    the sinks' output they held is published with a later one, exactly once. (On a loaded
    machine a later checkpoint may also miss the timeout while being written, so the
    alignment failure is looked for among all of them, not only the last.)"""
    output = tmp_path / "out"
    SLOW_AT[:] = [ROWS // 4]
    execution, _, ended = _run(_spec(tmp_path, {"type": "file", "args": {
        "path": str(output), "format": "json"}}, timeout="200ms",
        tolerableFailedCheckpoints=20))
    assert ended and not SLOW_AT, "the subtask was never held up"
    stats = execution.stats
    assert stats.failed >= 1 and stats.completed >= 1 and execution.restarts == 0
    assert any("barriers did not align" in record.getMessage() for record in caplog.records)
    lines = [tuple(json.loads(line)) for part in sorted(output.glob("part-*"))
             for line in part.read_text().splitlines()]
    assert sorted(lines) == _expected_counts()


def test_more_expired_checkpoints_than_tolerable_fail_the_job(tmp_path: Path) -> None:
    SLOW_AT[:] = [ROWS // 4]
    compiled = compile_job(_spec(tmp_path, {"type": "collect"}, timeout="200ms"), "slow")
    execution = PipelinedExecution(LoopbackContext(), compiled, plan_job(compiled), None,  # type: ignore[arg-type]
                                   None, Recorder(), SavepointRequests())
    execution.Stage = SlotsInThreads
    execution.restore("none")
    with pytest.raises(CheckpointFailureThreshold,
                       match=r"did not align within checkpointing.timeout \(0.2 s\)\); 1 in a "
                             r"row, more than tolerableFailedCheckpoints \(0\)"):
        execution.run(threading.Event())


def test_more_subtasks_than_local_slots_is_an_error_naming_the_setting(tmp_path: Path) -> None:
    class OneCore(LoopbackContext):
        master, defaultParallelism = "local[1]", 1

    compiled = compile_job(_spec(tmp_path, {"type": "collect"}), "too-wide")
    execution = PipelinedExecution(OneCore(), compiled, plan_job(compiled), None,  # type: ignore[arg-type]
                                   None, Recorder(), SavepointRequests())
    execution.Stage = SlotsInThreads
    execution.restore("none")
    with pytest.raises(RuntimeError, match=r"spec.execution PIPELINED .* in 2 task slots"):
        execution.run(threading.Event())


def _savepoint(execution: PipelinedExecution, nonce: str) -> Any:
    entry = execution.stats.savepoints[-1]
    assert (entry.nonce, entry.error) == (nonce, None)
    assert entry.path is not None
    return load_checkpoint(entry.path)


def test_a_stop_with_savepoint_reads_nothing_after_its_barrier(tmp_path: Path) -> None:
    execution, recorder, ended = _run(_spec(tmp_path, {"type": "collect"}, rows=None),
                                      SavepointRequest("stop", stop=True))
    assert ended
    position = int(_savepoint(execution, "stop").sources["rows"])
    # Every row the savepoint says was read came out once, and not one row after it.
    assert sorted(recorder.collected["out"]) == sorted(
        (key, n) for key in range(KEYS) for n in range(1, len(range(key, position, KEYS)) + 1))


def test_a_drain_ends_every_input_and_its_savepoint_holds_the_drained_state(
        tmp_path: Path) -> None:
    execution, recorder, ended = _run(_spec(tmp_path, {"type": "collect"}, rows=None),
                                      SavepointRequest("drain", stop=True, drain=True))
    assert ended
    savepoint = _savepoint(execution, "drain")
    position = int(savepoint.sources["rows"])
    assert len(recorder.collected["out"]) == position  # every row up to it, once
    assert all(state.ended for vertex in savepoint.vertices.values()
               for state in map(_snapshot_of, vertex.subtasks))


def _snapshot_of(data: bytes) -> Any:
    import pickle

    return pickle.loads(data)
